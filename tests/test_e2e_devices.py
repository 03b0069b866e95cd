"""The e2e suite's node agents: what a node registers from the emitted device configuration.

The parts in Python (the operators' view of the emitted releases, the mig-parted and HAMi
stand-ins, the pool labeler's commands, the device check and its edits) without the binaries;
the devices tool itself (upstream's config package on a mock NVML) where the cache has it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from e2e import devicemutations, migparted, podcommands
from e2e.devicecheck import expected_units
from e2e.devices import DeviceModel, hardware
from e2e.operands import GpuOperator, Hami, helm_merge, operator_labels, selects, tolerates
from e2e.stack import E2EError, Target, load_recording
from e2e.tools import build
from gpuplat.catalog.gpus import gpu_model
from gpuplat.model import GpuNodePool, NodeRange, Sharing, SharingMode
from tests.support_verify import recorded

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}


# ---- the operators' view of the emitted releases ------------------------------------------------


def test_helm_merges_maps_deeply_and_lets_values_replace_lists_and_delete_keys() -> None:
    defaults = {"mig": {"strategy": "single"}, "devicePlugin": {"enabled": True, "config": {"name": ""}},
                "daemonsets": {"tolerations": [{"key": "a"}]}, "gone": 1}
    merged = helm_merge(defaults, {"devicePlugin": {"config": {"name": "x"}}, "daemonsets": {"tolerations": []},
                                   "gone": None})
    assert merged == {"mig": {"strategy": "single"}, "devicePlugin": {"enabled": True, "config": {"name": "x"}},
                      "daemonsets": {"tolerations": []}}


def test_a_taint_blocks_a_pod_unless_a_toleration_matches_key_value_and_effect() -> None:
    assert tolerates([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}], [GPU_TAINT]) == []
    assert tolerates([{"operator": "Exists"}], [GPU_TAINT]) == []
    assert tolerates([{"key": "nvidia.com/gpu", "operator": "Equal", "value": "false"}], [GPU_TAINT]) == [
        "nvidia.com/gpu=true:NoSchedule"]
    assert tolerates([], [{"key": "soft", "effect": "PreferNoSchedule"}]) == []  # never keeps a pod off
    assert selects({"gpu": "on", "gpuplat.dev/sharing": "fractional"}, {"gpu": "on"}) == [
        "gpuplat.dev/sharing=fractional"]


def test_the_operator_labels_gpu_nodes_for_its_operands_keeping_what_the_node_says() -> None:
    nfd = {"feature.node.kubernetes.io/pci-10de.present": "true"}
    assert operator_labels({}, True, "all-disabled") == {}  # NFD found no NVIDIA device
    added = operator_labels({**nfd, "nvidia.com/gpu.deploy.device-plugin": "false"}, True, "all-disabled")
    assert "nvidia.com/gpu.deploy.device-plugin" not in added  # HAMi pools keep it off
    assert added["nvidia.com/gpu.deploy.mig-manager"] == "true"
    assert added["nvidia.com/mig.config"] == "all-disabled"
    assert "nvidia.com/mig.config" not in operator_labels({**nfd, "nvidia.com/mig.config": "all-1g.10gb"}, True,
                                                          "all-disabled")


def _operator(which: str = "dev") -> GpuOperator:
    model = DeviceModel(recorded(which)[2], Path("/nonexistent"))
    assert model.operator is not None
    return model.operator


def test_the_device_plugin_gets_the_operators_environment_and_the_emitted_configs() -> None:
    op = _operator()
    configs, default, problem = op.plugin_configs()
    assert problem == "" and default == "default" and configs is not None and {"default", "dev"} <= set(configs)
    env = op.plugin_env()
    assert "MIG_STRATEGY" not in env  # the emitted ClusterPolicy leaves it to each node's config
    assert env["MPS_ROOT"] == "/run/nvidia/mps" and env["FAIL_ON_INIT_ERROR"] == "true"
    cluster_wide = GpuOperator(op.namespace, helm_merge(op.values, {"mig": {"strategy": "mixed"}}))
    assert cluster_wide.plugin_env()["MIG_STRATEGY"] == "mixed"


def test_a_named_config_map_the_chart_does_not_create_must_be_emitted() -> None:
    op = _operator()
    values = helm_merge(op.values, {"devicePlugin": {"config": {"create": False, "name": "mine"}}})
    assert GpuOperator(op.namespace, values).plugin_configs()[2].endswith("is neither created by the chart nor emitted")
    found = GpuOperator(op.namespace, values, {(op.namespace, "mine"): {"default": "version: v1\n"}})
    assert found.plugin_configs()[0] == {"default": "version: v1\n"}


def test_hami_registers_its_device_configs_resource_count_per_gpu_split() -> None:
    model = DeviceModel(recorded("kubernetes")[2], Path("/nonexistent"))
    assert model.hami is not None
    registered = model.hami.registers("lab-0", 4)
    assert registered == {"nvidia.com/gpu.fractional": 40}  # lab: L40S x4, replicas 10
    node_config = json.dumps({"nodeconfig": [{"name": "lab-0", "devicesplitcount": 2}]})
    per_node = Hami(helm_merge(model.hami.values, {"devicePlugin": {"nodeConfiguration": {"config": node_config}}}))
    assert per_node.registers("lab-0", 4) == {"nvidia.com/gpu.fractional": 8}
    assert per_node.registers("lab-1", 4) == {"nvidia.com/gpu.fractional": 40}
    # Helm merges the chart's default selector into any the platform gives.
    assert model.hami.node_selector["gpu"] == "on"


# ---- mig-parted (stand-in) ----------------------------------------------------------------------


def test_mig_parted_refuses_what_its_parser_refuses() -> None:
    for text, why in (("version: v2\nmig-configs: {a: [{devices: all, mig-enabled: false}]}\n", "version"),
                      ("version: v1\nmig-configs: {}\n", "at least one"),
                      ("version: v1\nmig-configs: {a: [{devices: all}]}\n", "mig-enabled"),
                      ("version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true}]}\n", "mig-devices"),
                      ("version: v1\nmig-configs: {a: [{devices: all, mig-enabled: false, x: 1}]}\n", "unknown"),
                      ("version: v1\nextra: 1\nmig-configs: {a: [{devices: all, mig-enabled: false}]}\n", "unknown")):
        with pytest.raises(migparted.MigPartedError, match=why):
            migparted.parse(text)


def test_mig_parted_selects_entries_by_device_filter_and_index() -> None:
    configs = migparted.parse(
        "version: v1\nmig-configs:\n  mine:\n"
        "  - {device-filter: '0x233010DE', devices: [0, 1], mig-enabled: true, mig-devices: {1g.10gb: 7}}\n"
        "  - {device-filter: ['0x20B010DE'], devices: all, mig-enabled: true, mig-devices: {1g.5gb: 7}}\n")
    per_gpu, selected = migparted.layouts(configs, "mine", "0x233010DE", 4)
    assert per_gpu == [{"1g.10gb": 7}, {"1g.10gb": 7}, None, None] and selected == 2
    assert migparted.layouts(configs, "mine", "0x27B810DE", 2) == ([None, None], 0)  # left as it is
    with pytest.raises(migparted.MigPartedError, match=r"not present: all-1g\.10gb"):
        migparted.layouts(configs, "all-1g.10gb", "0x233010DE", 1)


def test_mig_manager_derives_named_configs_from_the_hardware() -> None:
    profiles = [migparted.Profile("1g.10gb", 7, 1), migparted.Profile("1g.10gb+me", 1, 1),
                migparted.Profile("1g.20gb", 4, 1), migparted.Profile("2g.20gb", 3, 2),
                migparted.Profile("3g.40gb", 2, 3), migparted.Profile("4g.40gb", 1, 4),
                migparted.Profile("7g.80gb", 1, 7)]
    configs = migparted.hardware_configs(profiles)
    assert configs["all-1g.10gb.me"][0]["mig-devices"] == {"1g.10gb+me": 1}  # '+' is not a label character
    assert configs["all-balanced"][0]["mig-devices"] == {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
    assert configs["all-disabled"] == [{"devices": "all", "mig-enabled": False}]


# ---- the pool labeler's kubectl pods ------------------------------------------------------------


def test_pool_labeler_commands_expand_as_the_kubelet_expands_them() -> None:
    env = {"NODE_NAME": "gpu-3"}
    assert podcommands.expand("$(NODE_NAME)", env) == "gpu-3"
    assert podcommands.expand("$$(NODE_NAME)", env) == "$(NODE_NAME)"
    assert podcommands.expand("$(UNSET)", env) == "$(UNSET)"
    resources = recorded("kubernetes")[2]
    daemonset = next(r["inputs"] for r in resources if r["type"] == "kubernetes:apps/v1:DaemonSet"
                     and r["inputs"]["metadata"]["name"] == "pool-labeler-lab")
    pod = {"metadata": {"name": "p", "namespace": "ns", "uid": "1"},
           "spec": {**_camel(daemonset["spec"]["template"]["spec"]), "nodeName": "lab-0"}}
    assert podcommands.kubectl_pods([pod]) == [pod]
    label, taint = (podcommands.argv(c, pod) for c in pod["spec"]["initContainers"])
    assert label[:5] == ["/bin/kubectl", "label", "node", "lab-0", "--overwrite"]
    assert "gpuplat.dev/pool=lab" in label and "nvidia.com/gpu.deploy.device-plugin=false" in label
    assert taint[:4] == ["/bin/kubectl", "taint", "node", "lab-0"]
    assert podcommands.kubectl_pods([{**pod, "spec": {**pod["spec"], "nodeName": ""}}]) == []


def _camel(value: Any) -> Any:
    """The recorded Python-style keys (value_from) as the API server stores them (valueFrom)."""
    if isinstance(value, dict):
        return {_key(k): _camel(v) for k, v in value.items()}
    return [_camel(v) for v in value] if isinstance(value, list) else value


def _key(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(p.title() for p in rest)


# ---- the device check and its edits -------------------------------------------------------------


def _pool(mode: SharingMode, **sharing: Any) -> GpuNodePool:
    return GpuNodePool("p", None, "H100-SXM-80GB", 8, {}, None, NodeRange(1, 1), Sharing(mode, **sharing), False,
                       (), {}, ())


def test_the_spec_says_what_a_node_of_each_sharing_mode_serves() -> None:
    assert expected_units(_pool(SharingMode.EXCLUSIVE)) == {"nvidia.com/gpu": 8}
    assert expected_units(_pool(SharingMode.MPS, replicas=4)) == {"nvidia.com/gpu.shared": 32}
    assert expected_units(_pool(SharingMode.FRACTIONAL, replicas=3)) == {"nvidia.com/gpu.fractional": 24}
    assert expected_units(_pool(SharingMode.MIG, profile="all-1g.10gb")) == {"nvidia.com/mig-1g.10gb": 56}
    assert expected_units(_pool(SharingMode.MIG, layout={"3g.40gb": 1, "1g.10gb+me": 1})) == {
        "nvidia.com/mig-3g.40gb": 8, "nvidia.com/mig-1g.10gb.me": 8}


def test_each_device_edit_changes_exactly_the_value_it_names() -> None:
    staging = recorded("staging")[2]
    kubernetes = recorded("kubernetes")[2]

    def values(resources: list[dict[str, Any]], chart: str) -> dict[str, Any]:
        return next(r["inputs"]["values"] for r in resources
                    if r["type"] == "kubernetes:helm.sh/v3:Release" and r["inputs"]["name"] == chart)
    edited = {e.name: e.edit(staging) for e in devicemutations.EDITS}
    assert edited["hami-resource-name"] is None and edited["hami-node-selector"] is None  # no HAMi in staging
    data = values(edited["device-rename-by-default"] or [], "gpu-operator")["devicePlugin"]["config"]["data"]
    assert "renameByDefault: false" in data["dev"]
    data = values(edited["device-replicas"] or [], "gpu-operator")["devicePlugin"]["config"]["data"]
    assert "replicas: 2" in data["dev"]  # 4 halved
    data = values(edited["device-config-name"] or [], "gpu-operator")["devicePlugin"]["config"]["data"]
    assert "dev" not in data and "dev-renamed" in data
    assert values(edited["device-mig-strategy"] or [], "gpu-operator")["mig"]["strategy"] == "single"
    assert values(staging, "gpu-operator")["mig"]["strategy"] == ""  # the recording itself is untouched
    hami = values(devicemutations.hami_node_selector(kubernetes) or [], "hami")["devicePlugin"]
    assert hami["nvidiaNodeSelector"]["gpuplat.dev/sharing"] == "fractional-hami"


def test_a_recording_is_its_resources_or_a_reason(tmp_path: Path) -> None:
    good = tmp_path / "r.json"
    good.write_text(json.dumps({"resources": [{"urn": "u", "type": "t", "inputs": {}}]}))
    assert load_recording(good) == [{"urn": "u", "type": "t", "inputs": {}}]
    for text, why in (("{", "not JSON"), ('{"resources": [1]}', "not a recording"), ("[]", "not a recording")):
        good.write_text(text)
        with pytest.raises(E2EError, match=why):
            load_recording(good)
    with pytest.raises(E2EError, match="No such file"):
        load_recording(tmp_path / "missing.json")


def test_recording_runs_one_target_or_is_a_usage_error(tmp_path: Path, capsys: Any) -> None:
    from e2e.suite import main

    with pytest.raises(SystemExit) as exit_:
        main(["--recording", str(tmp_path / "missing.json"), "--only", "dev"])
    assert exit_.value.code == 2 and "No such file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["--recording", str(tmp_path / "missing.json")])
    assert exit_.value.code == 2 and "runs one target" in capsys.readouterr().err


def test_a_nodes_gpus_come_from_its_instance_type_or_what_the_cluster_says() -> None:
    h100 = gpu_model("H100-SXM-80GB")
    assert hardware({"node.kubernetes.io/instance-type": "p5.48xlarge"}, {}) == (h100, 8)
    assert hardware({"node.kubernetes.io/instance-type": "dgx-h100"}, {"e2e.gpuplat.dev/gpus": "H100-SXM-80GB x8"}) \
        == (h100, 8)
    assert hardware({"node.kubernetes.io/instance-type": "m6i.2xlarge"}, {}) is None


# ---- the devices tool (upstream's config package), where the cache has it --------------------------


def _tool() -> Path:
    (tool_set,) = [t for t in build.TOOL_SETS if t.name == "devices"]
    if build.manifest(tool_set) is None:
        pytest.skip("the devices tool is not built (make e2e-tools)")
    return build.set_dir(tool_set) / "bin" / "devices"


def _register(resources: list[dict[str, Any]], node: str, labels: dict[str, str], taints: list[dict[str, Any]],
              annotations: dict[str, str] | None = None) -> Any:
    return DeviceModel(resources, _tool()).register(node, labels, annotations or {}, taints)


def test_the_device_plugin_registers_what_the_emitted_configs_say() -> None:
    staging = recorded("staging")[2]
    base = {"node.kubernetes.io/instance-type": "g6.12xlarge", "gpuplat.dev/pool": "notebooks",
            "nvidia.com/device-plugin.config": "notebooks"}
    mps = _register(staging, "n", base, [GPU_TAINT])
    assert mps.resources == {"nvidia.com/gpu.shared": 32}, mps.detail  # L4 x4, MPS replicas 8
    # The ClusterPolicy strategy the platform used to set: the plugin refuses MPS under it.
    mixed = [{**r, "inputs": {**r["inputs"], "values": {**r["inputs"]["values"], "mig": {"strategy": "mixed"}}}}
             if r["type"] == "kubernetes:helm.sh/v3:Release" and r["inputs"]["name"] == "gpu-operator" else r
             for r in staging]
    refused = _register(mixed, "n", base, [GPU_TAINT])
    assert refused.resources == {} and "not supported with MPS" in refused.detail
    # A MIG node: mig-parted's all-1g.10gb on the H100's NVML table, named per profile (mixed).
    infer = _register(staging, "i", {"node.kubernetes.io/instance-type": "p5.48xlarge",
                                     "nvidia.com/mig.config": "all-1g.10gb"}, [GPU_TAINT])
    assert infer.resources == {"nvidia.com/mig-1g.10gb": 56}
    assert infer.labels["nvidia.com/mig.config.state"] == "success"


def test_a_mig_layout_that_does_not_fit_the_gpu_fails_and_registers_nothing() -> None:
    kubernetes = recorded("kubernetes")[2]
    index, release = next((i, r["inputs"]) for i, r in enumerate(kubernetes)
                          if r["type"] == "kubernetes:helm.sh/v3:Release" and r["inputs"]["name"] == "gpu-operator")
    text = release["values"]["migManager"]["config"]["data"]["config.yaml"]
    too_big = json.loads(json.dumps(release))
    too_big["values"]["migManager"]["config"]["data"]["config.yaml"] = text.replace("3g.40gb: 1", "4g.40gb: 1")
    edited = [*kubernetes[:index], {**kubernetes[index], "inputs": too_big}, *kubernetes[index + 1:]]
    labels = {"gpuplat.dev/pool": "infer", "nvidia.com/mig.config": "gpuplat-infer"}
    annotations = {"e2e.gpuplat.dev/gpus": "A100-SXM-80GB x8"}
    fits = _register(kubernetes, "infer-0", labels, [], annotations)
    assert fits.labels["nvidia.com/mig.config.state"] == "success"
    assert fits.resources == expected_units(next(p for p in _pools("kubernetes") if p.name == "infer"))
    failed = _register(edited, "infer-0", labels, [], annotations)
    assert failed.labels["nvidia.com/mig.config.state"] == "failed" and failed.resources == {}
    assert "no placement" in failed.detail


def _pools(which: str) -> list[GpuNodePool]:
    return list(recorded(which)[0].pools)


def test_the_on_prem_target_selects_no_node_by_the_platforms_own_label() -> None:
    from e2e.devicecheck import spec_pools
    from e2e.stack import ROOT
    from e2e.suite import TARGETS

    (onprem,) = [t for t in TARGETS if t.label == "onprem"]
    assert onprem == Target("onprem", "dev", ROOT / "e2e" / "specs" / "onprem.yaml")
    pools = spec_pools(onprem)
    assert all("gpuplat.dev/pool" not in p.node_selector for p in pools)
    assert {p.sharing.mode for p in pools} == set(SharingMode)
