"""The platform's Helm releases against the real charts (e2e/charts.py, e2e/releases.py): the
values keys it sets are the chart's, and the charts a module serves render, with Helm's own code,
what the suite installs. Skipped with the one-line reason where upstream data cannot be had
(tests/conftest.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from e2e import charts, releases, upstream
from tests import support_verify

RECORDINGS = ("kubernetes", "dev")


def _served(key: str) -> bool:
    return f"charts/{key}" in upstream.IN_MODULES


def _directory(key: str) -> Any:
    return charts.chart_directory(key) if _served(key) else None


def _releases(which: str) -> list[dict[str, Any]]:
    _, _, resources = support_verify.recorded(which)
    return charts.releases(resources)


def _release(which: str, key: str) -> dict[str, Any]:
    return next(r for r in _releases(which) if charts.chart_key(r) == key)


def _rendered(which: str, key: str) -> list[dict[str, Any]]:
    return charts.render(charts.chart_directory(key), _release(which, key))


@pytest.mark.parametrize("which", RECORDINGS)
def test_every_values_key_the_platform_sets_is_one_its_chart_declares(which: str) -> None:
    checked = []
    for release in _releases(which):
        key = charts.chart_key(release)
        failures, _ = charts.check_values(key, release, _directory(key))
        assert failures == [], f"{which}: release {key}"
        checked.append(key)
    assert {"kueue", "gpu-operator", "kube-prometheus-stack"} <= set(checked)


def _misspelt(values: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    edited = copy.deepcopy(values)
    node = edited
    for key in path[:-1]:
        node = node[key]
    node[path[-1] + "s"] = node.pop(path[-1])
    return edited


@pytest.mark.parametrize("which", RECORDINGS)
def test_a_misspelt_top_level_key_of_any_release_fails_naming_it(which: str) -> None:
    for release in _releases(which):
        key = charts.chart_key(release)
        for top in release.get("values") or {}:
            edited = {**release, "values": _misspelt(release["values"], (top,))}
            failures, _ = charts.check_values(key, edited, _directory(key))
            assert failures == [f"{top}s"], f"{which}: release {key}"


@pytest.mark.parametrize(("which", "key", "path"), [
    ("dev", "karpenter", ("settings", "featureGates", "nodeOverlay")),
    ("dev", "kueue", ("managerConfig", "controllerManagerConfigYaml")),
    ("kubernetes", "gpu-operator", ("devicePlugin", "config", "name")),
    ("kubernetes", "hami", ("devicePlugin", "deviceSplitCount")),
    ("kubernetes", "sriov-network-operator", ("sriovOperatorConfig", "configDaemonNodeSelector")),
])
def test_a_misspelt_nested_key_fails_naming_its_path(which: str, key: str, path: tuple[str, ...]) -> None:
    release = _release(which, key)
    edited = {**release, "values": _misspelt(release["values"], path)}
    failures, _ = charts.check_values(key, edited, _directory(key))
    assert failures == [".".join(path) + "s"]


def test_a_key_removed_from_the_chart_fails_and_free_form_maps_are_not_looked_into() -> None:
    defaults = {"settings": {"featureGates": {"nodeOverlay": False, "spotToSpotConsolidation": False}},
                "nodeSelector": {"kubernetes.io/os": "linux"}, "tolerations": [], "extra": {}}
    values = {"settings": {"featureGates": {"nodeOverlay": True}}, "nodeSelector": {"gpuplat.dev/pool": "x"},
              "tolerations": [{"key": "a"}], "extra": {"anything": 1}}
    assert charts.undeclared_keys(values, defaults) == []
    del defaults["settings"]["featureGates"]["nodeOverlay"]
    assert charts.undeclared_keys(values, defaults) == [("settings", "featureGates", "nodeOverlay")]
    schema = {"properties": {"settings": {"properties": {"featureGates": {"additionalProperties": {}}}}}}
    assert charts.undeclared_keys(values, defaults, schema) == []


def test_an_undeclared_key_the_chart_reads_is_accepted_only_where_known() -> None:
    release = _release("dev", "aws-fsx-csi-driver")
    failures, accepted = charts.check_values("aws-fsx-csi-driver", release, None)
    assert failures == [] and [a.split(" ")[0] for a in accepted] == ["node.region"]
    edited = {**release, "values": {**release["values"], "controller": {"regoin": "us-east-1"}}}
    assert charts.check_values("aws-fsx-csi-driver", edited, None)[0] == ["controller.regoin"]


def test_the_kueue_chart_carries_the_emitted_manager_configuration_and_webhook_selector() -> None:
    release = _release("dev", "kueue")
    emitted = yaml.safe_load(release["values"]["managerConfig"]["controllerManagerConfigYaml"])
    rendered = _rendered("dev", "kueue")
    (config,) = [o for o in rendered if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("manager-config")]
    carried = yaml.safe_load(next(iter(config["data"].values())))
    assert {k: carried[k] for k in emitted} == emitted  # the chart adds its internalCertManagement
    hooks = [h for o in rendered if o["kind"] == "MutatingWebhookConfiguration" for h in o["webhooks"]]
    pod_hook = next(h for h in hooks if h["name"] == "mpod.kb.io")
    assert pod_hook["namespaceSelector"] == emitted["managedJobsNamespaceSelector"]


def test_the_kueue_chart_points_at_the_suite_s_manager_and_leaves_out_only_the_visibility_api() -> None:
    rendered = charts.point_at(_rendered("dev", "kueue"), "https://127.0.0.1:9443", b"CA")
    objects, hooks = releases.installable(rendered, "kueue-system")
    kept, left = charts.served_elsewhere(objects)
    assert hooks == []
    assert sorted(left) == [f"APIService {v}.visibility.kueue.x-k8s.io" for v in ("v1beta1", "v1beta2")]
    conversions = [o for o in kept if o["kind"] == "CustomResourceDefinition" and "conversion" in o["spec"]]
    assert conversions and all(o["spec"]["conversion"]["webhook"]["clientConfig"]["url"] ==
                               "https://127.0.0.1:9443/convert" for o in conversions)
    assert all(o["metadata"].get("namespace") == "kueue-system" for o in kept if o["kind"] == "Deployment")


def test_the_karpenter_chart_turns_the_emitted_feature_gates_into_the_controller_s_environment() -> None:
    release = _release("dev", "karpenter")
    gates = charts.rendered_env(_rendered("dev", "karpenter"), "Deployment")["FEATURE_GATES"]
    assert "NodeOverlay=true" in gates.split(",") and "ReservedCapacity=true" in gates.split(",")
    assert "NodeRepair=true" in gates.split(",")  # the suite's Karpenter repairs (e2e/repair.py)
    misspelt = {**release, "values": _misspelt(release["values"], ("settings", "featureGates", "nodeOverlay"))}
    gates = charts.rendered_env(charts.render(charts.chart_directory("karpenter"), misspelt), "Deployment")
    assert "NodeOverlay=false" in gates["FEATURE_GATES"].split(",")  # what the check above catches


def test_the_sriov_chart_s_delete_hook_is_not_installed_and_namespaceless_objects_get_the_release_s() -> None:
    release = _release("kubernetes", "sriov-network-operator")
    objects, hooks = releases.installable(_rendered("kubernetes", "sriov-network-operator"), release["namespace"])
    assert [h.split(" (")[0] for h in hooks] == ["Job sriov-network-operator-pre-delete-hook"]
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    assert deployment["metadata"]["namespace"] == release["namespace"]
    assert all("namespace" not in o["metadata"] for o in objects if o["kind"] in charts.CLUSTER_SCOPED)
    assert releases.chart_crds(charts.chart_directory("sriov-network-operator"), release)


def _pod(rendered: list[dict[str, Any]]) -> dict[str, Any]:
    return next(o for o in rendered if o["kind"] == "Deployment")["spec"]["template"]["spec"]


def test_the_controllers_fit_system_nodes_and_no_gpu_nodepool() -> None:
    _, _, resources = support_verify.recorded("dev")
    nodepools = support_verify.objects(resources, "NodePool")
    gpu = [p for p in nodepools if "gpuplat.dev/pool" in p["spec"]["template"]["metadata"]["labels"]]
    system = charts.node_labels({"kubernetes.io/os": "linux", "kubernetes.io/hostname": "system-0",
                                 "topology.kubernetes.io/zone": "us-east-1a"})
    for key in ("karpenter", "kueue"):
        pod = _pod(_rendered("dev", key))
        assert charts.fits(pod, system, []), key
        assert gpu and not [p["metadata"]["name"] for p in gpu
                            if charts.fits(pod, charts.nodepool_labels(p), p["spec"]["template"]["spec"].get("taints"))]
    karpenter = _pod(_rendered("dev", "karpenter"))
    cpu = next(p for p in nodepools if p not in gpu)
    assert not charts.fits(karpenter, charts.nodepool_labels(cpu), [])  # never on a node it launched
    untainted_gpu = charts.node_labels({"kubernetes.io/os": "linux", "gpuplat.dev/pool": "train"})
    kueue = _pod(_rendered("dev", "kueue"))
    assert charts.fits(kueue, untainted_gpu, [])
    assert not charts.fits(kueue, untainted_gpu, [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}])


class _Cluster:
    """What `releases.operands` reads of a cluster: its nodes and pods."""

    def __init__(self, nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
        self.nodes, self.pods = nodes, pods

    def items(self, resource: str, namespace: str = "") -> list[dict[str, Any]]:
        return self.nodes if resource == "nodes" else [p for p in self.pods if p["metadata"]["namespace"] == namespace]

    def get(self, *args: Any, **kwargs: Any) -> None:
        return None


def _node(name: str, taints: list[dict[str, str]] | None = None, gpus: bool = False) -> dict[str, Any]:
    annotations = {"e2e.gpuplat.dev/gpus": "NVIDIA H100 x8"} if gpus else {}
    return {"metadata": {"name": name, "labels": {"kubernetes.io/os": "linux", "kubernetes.io/hostname": name},
                         "annotations": annotations}, "spec": {"taints": taints or []}, "status": {}}


def _operands(nodes: list[dict[str, Any]], bound_to: list[str | None]) -> Any:
    from e2e.report import Report
    from e2e.stack import Stack, Target

    _, _, resources = support_verify.recorded("kubernetes")
    release = _release("kubernetes", "kueue")
    objects, _ = releases.installable(_rendered("kubernetes", "kueue"), release["namespace"])
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    labels = deployment["spec"]["selector"]["matchLabels"]
    pods = [{"metadata": {"name": f"manager-{i}", "namespace": "kueue-system", "labels": labels},
             "spec": {"nodeName": node} if node else {},
             "status": {"conditions": [] if node else [{"type": "PodScheduled", "message": "0/2 nodes are available"}]}}
            for i, node in enumerate(bound_to)]
    report = Report()
    stack = Stack(Target("kubernetes-example"), resources, {}, [])
    releases.operands(_Cluster(nodes, pods), stack, report, {"kueue": objects}, timeout=0)  # type: ignore[arg-type]
    (row,) = report.scenarios
    return row


def test_a_controller_on_a_system_node_passes_and_one_a_gpu_node_would_take_fails() -> None:
    tainted = [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    row = _operands([_node("system-0"), _node("train-0", tainted, gpus=True)], ["system-0"])
    assert row.ok and row.scenario == "chart-operands-kueue", row.detail
    row = _operands([_node("system-0"), _node("train-0", gpus=True)], ["system-0"])
    assert not row.ok and "may be placed on GPU capacity: train-0" in row.detail
    row = _operands([_node("system-0"), _node("train-0", gpus=True)], ["train-0"])
    assert not row.ok and "bound to GPU node(s) ['train-0']" in row.detail
    row = _operands([_node("train-0", tainted, gpus=True)], [None])
    assert not row.ok and "0 of 1 pod(s) bound (the scheduler: 0/2 nodes are available)" in row.detail


def test_a_skipped_row_says_why_and_is_not_a_failure() -> None:
    from e2e.report import Report

    report = Report()
    report.skip("dev", "chart-hami", "not rendered: chart hami: github.com/Project-HAMi/HAMi is not served")
    merged = Report()
    merged.merge(report.document())
    (row,) = merged.scenarios
    assert row.status == "skipped" and "not served" in row.detail and merged.failures == 0
