"""The Helm charts the platform installs, rendered with the values it emits, are valid objects.

Values alone do not say what a chart installs: Helm merges them into the chart's defaults
(maps deep-merged, `null` deleting a key), and templates add their own. So every release of
every shipped stack whose chart is in the real-chart directory (`GPUPLAT_CHARTS`, one chart per
key; skipped without it) is rendered with Helm's own library, and what comes out is checked:
core kinds against the Kubernetes schema of the target version (kubernetes-validate, strict),
custom resources against their upstream CRDs (else the CRD the chart itself ships).

Helm's value semantics that verify relies on, and the refusals of the renderer, are checked on
the project's own stand-in charts (tests/fixtures/charts), which always run.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from jsonschema import Draft202012Validator

from gpuplat.catalog import CHARTS
from gpuplat.verify.render import (
    RELEASE_TYPE,
    ChartDirectory,
    RenderError,
    catalog_chart,
    chart_version,
    render_release,
)
from tests import support_k8s
from tests.support_verify import FIXTURE_CHARTS, SPECS, recorded, release
from tests.upstream import real_charts

CHECKED = ("hami", "gpu-operator", "karpenter", "karpenter-crd", "kueue")


def _real() -> ChartDirectory:
    return ChartDirectory(real_charts())


def _render(inputs: dict[str, Any], charts: ChartDirectory) -> list[dict[str, Any]]:
    rendered = render_release(inputs, charts)
    assert rendered is not None, f"no chart {inputs['name']} under {charts.root}"
    return rendered


def _releases(which: str, charts: ChartDirectory) -> list[dict[str, Any]]:
    _, _, resources = recorded(which)
    return [
        r["inputs"]
        for r in resources
        if r["type"] == RELEASE_TYPE
        and (chart := catalog_chart(r["inputs"])) is not None
        and charts.chart_dir(chart) is not None
    ]


@functools.cache
def _chart_crd_validator(root: Path, api_version: str, kind: str) -> Draft202012Validator:
    """The CRD a chart ships in its crds/ folder (plain YAML, installed before its templates)."""
    group, version = api_version.split("/")
    for path in sorted(root.glob("*/crds/*.yaml")):
        for crd in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if not crd or crd["spec"]["group"] != group or crd["spec"]["names"]["kind"] != kind:
                continue
            served = next(v for v in crd["spec"]["versions"] if v["name"] == version)
            return Draft202012Validator(support_k8s._strict(copy.deepcopy(served["schema"]["openAPIV3Schema"])))
    raise LookupError(f"no CRD for {api_version} {kind}")


def _custom_errors(obj: dict[str, Any], root: Path) -> list[str]:
    try:
        return support_k8s.crd_errors(obj)
    except LookupError:
        validator = _chart_crd_validator(root, obj["apiVersion"], obj["kind"])
        return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(obj)]


def _is_custom(obj: dict[str, Any]) -> bool:
    group = obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else ""
    return "." in group and not group.endswith(".k8s.io")


def test_every_real_chart_is_the_catalog_version() -> None:
    charts = _real()
    present = [key for key in CHECKED if charts.chart_dir(CHARTS[key]) is not None]
    assert present, f"none of {CHECKED} is under {charts.root}"
    for key in present:
        directory = charts.chart_dir(CHARTS[key])
        assert directory is not None
        assert chart_version(directory) == CHARTS[key].version, key
        chart = yaml.safe_load((directory / "Chart.yaml").read_text(encoding="utf-8"))
        assert chart["name"] == CHARTS[key].chart


@pytest.mark.parametrize("which", SPECS)
def test_every_release_renders(which: str) -> None:
    charts = _real()
    rendered = {r["name"]: _render(r, charts) for r in _releases(which, charts)}
    assert rendered, f"no chart of a {which} release is under {charts.root}"
    assert all(rendered.values())


@pytest.mark.parametrize("which", SPECS)
def test_rendered_core_objects_match_the_kubernetes_schema(which: str) -> None:
    charts = _real()
    model, _, _ = recorded(which)
    for inputs in _releases(which, charts):
        for obj in _render(inputs, charts):
            if _is_custom(obj):
                continue
            try:
                kubernetes_validate.validate(obj, model.target.kubernetes_version, strict=True)
            except kubernetes_validate.ValidationError as error:  # pragma: no cover - the message is the point
                pytest.fail(f"{inputs['name']}: {obj['kind']} {obj['metadata'].get('name')}: {error}")


@pytest.mark.parametrize("which", SPECS)
def test_rendered_custom_resources_match_their_crds(which: str) -> None:
    charts = _real()
    assert charts.root is not None
    custom = [obj for inputs in _releases(which, charts) for obj in _render(inputs, charts) if _is_custom(obj)]
    for obj in custom:
        assert _custom_errors(obj, charts.root) == [], (obj["kind"], obj["metadata"].get("name"))


def test_the_crd_check_catches_a_misspelt_cluster_policy_field() -> None:
    charts = _real()
    assert charts.root is not None
    rendered = _render(release(recorded("dev")[2], "gpu-operator"), charts)
    policy = next(o for o in rendered if o["kind"] == "ClusterPolicy")
    assert _custom_errors(policy, charts.root) == []
    policy["spec"]["devicePlugin"]["confg"] = {}
    assert any("confg" in e for e in _custom_errors(policy, charts.root))


@pytest.mark.parametrize("charts", ["real", "stand-in"])
def test_rendered_cluster_policy_carries_the_emitted_sharing_configs(charts: str) -> None:
    directory = _real() if charts == "real" else FIXTURE_CHARTS
    _, _, resources = recorded("kubernetes")
    objs = _render(release(resources, "gpu-operator"), directory)
    policy = next(o for o in objs if o["kind"] == "ClusterPolicy")
    assert not (policy["spec"]["mig"] or {}).get("strategy")  # each node's device-plugin config decides
    names = {o["metadata"]["name"] for o in objs if o["kind"] == "ConfigMap"}
    assert policy["spec"]["devicePlugin"]["config"]["name"] in names
    assert policy["spec"]["migManager"]["config"]["name"] in names


# ---- Helm's value semantics, and the HAMi defect they cause -----------------------------------


def _hami_plugin(values: dict[str, Any], charts: ChartDirectory = FIXTURE_CHARTS) -> dict[str, Any]:
    inputs = {**release(recorded("kubernetes")[2], "hami"), "values": values}
    return next(
        o
        for o in _render(inputs, charts)
        if o["kind"] == "DaemonSet" and o["metadata"]["name"] == "hami-device-plugin"
    )


def test_helm_merges_maps_into_chart_defaults_and_null_deletes_one() -> None:
    merged = _hami_plugin({"devicePlugin": {"nvidiaNodeSelector": {"pool": "lab"}}})
    assert merged["spec"]["template"]["spec"]["nodeSelector"] == {"gpu": "on", "pool": "lab"}
    deleted = _hami_plugin({"devicePlugin": {"nvidiaNodeSelector": {"gpu": None, "pool": "lab"}}})
    assert deleted["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "lab"}


def _fractional_node_labels() -> dict[str, str]:
    model, _, resources = recorded("kubernetes")
    from gpuplat.verify.nodes import existing_nodes
    from gpuplat.verify.view import build_view

    pool = next(p for p in model.pools if p.sharing.mode.value == "fractional")
    return existing_nodes(build_view(resources), pool).labels


def test_hami_device_plugin_runs_on_the_fractional_pool_nodes() -> None:
    values = release(recorded("kubernetes")[2], "hami")["values"]
    selector = _hami_plugin(values)["spec"]["template"]["spec"]["nodeSelector"]
    labels = _fractional_node_labels()
    assert {k: v for k, v in selector.items() if labels.get(k) != v} == {}


def test_the_stand_in_hami_merges_as_the_real_chart_does() -> None:
    """The stand-in reproduces the behaviour verify relies on: checked against the real chart."""
    real = _real()
    if real.chart_dir(CHARTS["hami"]) is None:
        pytest.skip(f"no hami chart under {real.root}")
    for values in ({"devicePlugin": {"nvidiaNodeSelector": {"pool": "lab"}}}, {}):
        ours, theirs = _hami_plugin(values), _hami_plugin(values, real)
        assert ours["spec"]["template"]["spec"]["nodeSelector"] == theirs["spec"]["template"]["spec"]["nodeSelector"]


def test_a_null_in_release_values_never_reaches_helm() -> None:
    """The Pulumi SDK drops None-valued map entries before the engine sees them, so `key: None`
    in a Release's values cannot delete a chart default: Helm merges the default back in."""
    from gpuplat.preview import record_program

    def program() -> None:
        import pulumi_kubernetes as k8s

        selector = {"gpu": None, "gpuplat.dev/sharing": "fractional"}
        k8s.helm.v3.Release("hami", chart="hami", values={"devicePlugin": {"nvidiaNodeSelector": selector}})

    (recorded_release,) = [r for r in record_program(program, project="p", stack="s") if r.type == RELEASE_TYPE]
    assert recorded_release.inputs["values"] == {
        "devicePlugin": {"nvidiaNodeSelector": {"gpuplat.dev/sharing": "fractional"}}
    }
    plugin = _hami_plugin(recorded_release.inputs["values"])
    assert plugin["spec"]["template"]["spec"]["nodeSelector"]["gpu"] == "on"


def test_a_release_of_another_version_is_refused_not_rendered_from_the_wrong_templates() -> None:
    inputs = {**release(recorded("kubernetes")[2], "hami"), "version": "2.11.0"}
    with pytest.raises(RenderError, match=r"installs hami 2.11.0, but .*hami holds version 2.10.0"):
        render_release(inputs, FIXTURE_CHARTS)


def test_a_release_whose_chart_is_not_given_is_not_rendered(tmp_path: Path) -> None:
    inputs = release(recorded("kubernetes")[2], "hami")
    assert render_release(inputs, ChartDirectory(None)) is None
    assert render_release(inputs, ChartDirectory(tmp_path)) is None


def test_value_yaml_files_are_refused_rather_than_guessed() -> None:
    inputs = {**release(recorded("kubernetes")[2], "hami"), "valueYamlFiles": [{"$asset": {"text": "a: 1\n"}}]}
    with pytest.raises(RenderError, match="valueYamlFiles are not read"):
        render_release(inputs, FIXTURE_CHARTS)
