"""Every object the Kubernetes side emits is valid for the API server and the tools that read it.

- custom resources against their upstream CRDs (tests/upstream.py, unknown fields rejected);
- core objects against the Kubernetes OpenAPI schema of the target version (kubernetes-validate,
  strict);
- Helm values: every key exists in the chart's values.yaml (or a template-only key);
- the device-plugin and mig-parted configs against their formats (k8s-device-plugin api/config/v1,
  mig-parted api/spec/v1).
Both providers: the kubernetes-provider fixture and every shipped aws stack.
"""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.support_k8s import (
    STACKS,
    TEMPLATE_ONLY_KEYS,
    crd_errors,
    device_plugin_config_problems,
    is_custom_resource,
    kubernetes_objects,
    mig_parted_problems,
    recorded,
    releases,
    unknown_value_keys,
)
from tests.upstream import Partly, real_charts

SPECS = ("kubernetes", *STACKS)


@pytest.mark.parametrize("which", SPECS)
def test_custom_resources_match_their_crds(which: str) -> None:
    _, _, resources = recorded(which)
    custom = [r for r in kubernetes_objects(resources) if is_custom_resource(r)]
    assert custom
    partly = Partly()
    for resource in custom:
        with partly.item(f"{resource.inputs['apiVersion']} {resource.inputs['kind']}"):
            assert crd_errors(resource.inputs) == [], resource.name
    partly.done()


@pytest.mark.parametrize("which", SPECS)
def test_core_objects_match_the_kubernetes_schema(which: str) -> None:
    model, _, resources = recorded(which)
    core = [r for r in kubernetes_objects(resources) if not is_custom_resource(r)]
    assert core
    for resource in core:
        try:
            kubernetes_validate.validate(resource.inputs, model.target.kubernetes_version, strict=True)
        except kubernetes_validate.ValidationError as error:  # pragma: no cover - the message is the point
            pytest.fail(f"{resource.name}: {error}")


@pytest.mark.parametrize("which", SPECS)
def test_helm_values_keys_exist_in_the_charts(which: str) -> None:
    _, _, resources = recorded(which)
    partly = Partly()
    for key, release in releases(resources).items():
        with partly.item(key):
            assert unknown_value_keys(key, release.inputs.get("values", {})) == [], key
    partly.done()


def test_template_only_keys_are_read_by_the_chart_templates() -> None:
    # The allow-list may only hold keys a chart's templates read at the pinned version; any
    # other key Helm silently ignores, which is what the values check exists to catch. Checked
    # on every chart of the allow-list the real-chart directory holds.
    charts = real_charts()
    checked = 0
    for chart, keys in TEMPLATE_ONLY_KEYS.items():
        templates = charts / chart / "templates"
        if not templates.is_dir():
            continue
        text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(templates.rglob("*")) if p.is_file())
        unread = [key for key in keys if f".Values.{key}" not in text]
        assert unread == [], (chart, unread)
        checked += 1
    assert checked >= 1, f"none of {sorted(TEMPLATE_ONLY_KEYS)} is under {charts}"


def test_the_values_checker_catches_a_misspelt_key() -> None:
    values = {"mig": {"strategy": "mixed"}, "devicePlugin": {"confg": {}}, "toolkit": {"enabled": {"x": 1}}}
    assert unknown_value_keys("gpu-operator", values) == ["devicePlugin.confg", "toolkit.enabled"]
    # Free-form maps and vendored subcharts are judged by their own rules.
    ok = {
        "devicePlugin": {"config": {"data": {"any-key": "x"}}},
        "node-feature-discovery": {"worker": {"tolerations": []}},
    }
    assert unknown_value_keys("gpu-operator", ok) == []
    assert unknown_value_keys("gpu-operator", {"node-feature-discovery": {"wrker": {}}}) == ["wrker"]


def _gpu_operator_values(which: str) -> dict[str, Any]:
    _, _, resources = recorded(which)
    return releases(resources)["gpu-operator"].inputs["values"]


@pytest.mark.parametrize("which", SPECS)
def test_device_plugin_configs_follow_the_format(which: str) -> None:
    config = _gpu_operator_values(which)["devicePlugin"]["config"]
    assert config["default"] in config["data"]
    for key, text in config["data"].items():
        assert device_plugin_config_problems(text) == [], key


@pytest.mark.parametrize("which", SPECS)
def test_mig_parted_config_follows_the_format(which: str) -> None:
    mig = _gpu_operator_values(which).get("migManager")
    if mig is None:
        return  # no custom layout: the MIG manager derives its configs from the hardware
    config = mig["config"]
    assert set(config["data"]) == {"config.yaml"}
    assert mig_parted_problems(config["data"]["config.yaml"]) == []
    assert config["default"] in yaml.safe_load(config["data"]["config.yaml"])["mig-configs"]


def test_format_validators_reject_what_upstream_rejects() -> None:
    assert device_plugin_config_problems("version: v2\n")
    one = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 1\n"
    assert any("replicas" in p for p in device_plugin_config_problems(one))
    both = (
        "version: v1\nsharing:\n  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 2}]\n"
        "  mps:\n    resources: [{name: nvidia.com/gpu, replicas: 2}]\n"
    )
    assert any("mutually exclusive" in p for p in device_plugin_config_problems(both))
    mig_mps = "version: v1\nsharing:\n  mps:\n    resources: [{name: nvidia.com/mig-1g.10gb, replicas: 2}]\n"
    assert any("MPS" in p for p in device_plugin_config_problems(mig_mps))

    assert mig_parted_problems("version: v1\nmig-configs: {}\n")
    bad_key = "version: v1\nmig-configs:\n  x:\n  - devices: all\n    mig-enabled: true\n    mig-devices: {1g: 7}\n"
    assert any("not a MIG profile" in p for p in mig_parted_problems(bad_key))
    overfull = (
        "version: v1\nmig-configs:\n  x:\n  - device-filter: ['0x233010DE']\n    devices: all\n"
        "    mig-enabled: true\n    mig-devices: {4g.40gb: 1, 3g.40gb: 2}\n"
    )
    assert any("H100-SXM-80GB" in p for p in mig_parted_problems(overfull))
    disabled = (
        "version: v1\nmig-configs:\n  x:\n  - devices: all\n    mig-enabled: false\n    mig-devices: {1g.10gb: 1}\n"
    )
    assert any("empty when MIG is disabled" in p for p in mig_parted_problems(disabled))
