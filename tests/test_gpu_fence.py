"""The GPU fence (components/kubernetes/gpu_fence.py, node_fencer.py): what it decides and emits.

The fencer's decisions are tested here on nodes as the API server returns them; the e2e suite
runs the emitted script against a real API server (e2e/fence.py), where the taint, the
scheduler's answer and the admission policy are the real engines'.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from components.kubernetes.gpu_fence import APP, PYTHON_IMAGE, SCRIPT
from components.kubernetes.node_fencer import (
    TAINT_KEY,
    Fencer,
    firing_nodes,
    node_event,
    unhealthy_condition,
    wanted_taints,
)
from components.kubernetes.observability import PROMETHEUS_URL
from gpuplat.catalog.labels import GPU_FENCE_TAINT
from tests.support_k8s import by_kind, recorded

CONDITIONS = ("AcceleratedHardwareReady",)
POOL_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
FENCE = {"key": TAINT_KEY, "value": "AcceleratedHardwareReady", "effect": "NoSchedule"}


def _node(status: str | None, taints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": "True"}]
    if status is not None:
        conditions.append({"type": "AcceleratedHardwareReady", "status": status, "reason": "NvidiaXID79Error"})
    spec = {"taints": taints} if taints is not None else {}
    return {"metadata": {"name": "gpu-1", "resourceVersion": "7"}, "spec": spec, "status": {"conditions": conditions}}


def test_the_standalone_program_spells_the_platforms_taint() -> None:
    assert TAINT_KEY == GPU_FENCE_TAINT


def test_a_false_condition_adds_the_fence_and_keeps_the_pools_taints() -> None:
    assert wanted_taints(_node("False", [POOL_TAINT]), CONDITIONS) == [POOL_TAINT, FENCE]
    assert wanted_taints(_node("False"), CONDITIONS) == [FENCE]


def test_a_fenced_node_that_is_still_unhealthy_is_left_alone() -> None:
    assert wanted_taints(_node("False", [POOL_TAINT, {**FENCE, "timeAdded": None}]), CONDITIONS) is None


@pytest.mark.parametrize("status", ["True", None])
def test_a_healthy_node_loses_only_the_fence(status: str | None) -> None:
    assert wanted_taints(_node(status, [POOL_TAINT, FENCE]), CONDITIONS) == [POOL_TAINT]
    assert wanted_taints(_node(status, [POOL_TAINT]), CONDITIONS) is None


def test_unknown_is_no_verdict() -> None:
    """An agent that stopped reporting says Unknown; the kubelet's own Ready handles a dead node."""
    assert unhealthy_condition(_node("Unknown"), CONDITIONS) is None
    assert wanted_taints(_node("Unknown"), CONDITIONS) is None


def test_the_first_failing_condition_names_the_fence() -> None:
    node = _node("False")
    node["status"]["conditions"].append({"type": "NetworkingReady", "status": "False"})
    assert unhealthy_condition(node, ("NetworkingReady", "AcceleratedHardwareReady")) == "NetworkingReady"


def test_the_event_is_one_kubernetes_records_for_a_node() -> None:
    """A node is cluster-scoped: its Events live in `default` and name no namespace (the API server's
    rule for Events without an eventTime)."""
    event = node_event(_node("False") | {"metadata": {"name": "gpu-1", "uid": "u-1"}}, True, "why",
                       datetime(2026, 12, 6, tzinfo=UTC))
    assert event["metadata"] == {"generateName": "gpu-1.", "namespace": "default"}
    assert event["involvedObject"] == {"apiVersion": "v1", "kind": "Node", "name": "gpu-1", "uid": "u-1"}
    assert (event["reason"], event["type"], event["firstTimestamp"]) == ("GpuFenced", "Warning", "2026-12-06T00:00:00Z")
    assert node_event(_node("True"), False, "ok", datetime(2026, 12, 6, tzinfo=UTC))["reason"] == "GpuUnfenced"


def test_aws_stacks_ship_the_script_and_its_least_privilege() -> None:
    model, _, resources = recorded("dev")
    [config_map] = [c for c in by_kind(resources, "ConfigMap") if c["metadata"]["name"] == APP]
    assert config_map["data"][SCRIPT.name] == SCRIPT.read_text()
    [deployment] = [d for d in by_kind(resources, "Deployment") if d["metadata"]["name"] == APP]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == PYTHON_IMAGE
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert deployment["spec"]["strategy"]["type"] == "Recreate"
    [role] = [r for r in by_kind(resources, "ClusterRole") if r["metadata"]["name"].endswith(APP)]
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "patch"]}]
    [events] = [r for r in by_kind(resources, "Role") if r["metadata"]["name"].endswith(f"{APP}-events")]
    assert events["metadata"]["namespace"] == "default"
    assert events["rules"] == [{"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}]
    [policy] = [p for p in by_kind(resources, "ValidatingAdmissionPolicy") if p["metadata"]["name"].endswith(APP)]
    assert f"{model.metadata.name}-system:{APP}" in policy["spec"]["matchConditions"][0]["expression"]


def test_both_providers_fence_on_the_critical_gpu_health_alerts() -> None:
    """On kubernetes no detector sets a condition: the alerts on the DCGM exporter's series are the signal."""
    for which, conditions in (("kubernetes", None), ("dev", "AcceleratedHardwareReady")):
        model, _, resources = recorded(which)
        [deployment] = [d for d in by_kind(resources, "Deployment") if d["metadata"]["name"] == APP]
        env = {e["name"]: e["value"] for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert env.get("FENCE_CONDITIONS") == conditions
        # The GpuHealth rule's own, not another rule's critical alert (the platform's others page people).
        [health] = [r for r in by_kind(resources, "PrometheusRule")
                    if r["metadata"]["name"] == f"{model.metadata.name}-gpu-health"]
        critical = [r["alert"] for g in health["spec"]["groups"]
                    for r in g["rules"] if r.get("labels", {}).get("severity") == "critical"]
        assert env["FENCE_ALERTS"].split(",") == critical
        assert "GpuFatalXid" in critical
        assert env["FENCE_PROMETHEUS_URL"] == PROMETHEUS_URL


# ---- alerts: the program's reading of Prometheus' /api/v1/alerts

ALERTS = ("GpuFatalXid", "GpuDoubleBitEccErrors")


def _alerts(*items: tuple[str, str, str]) -> dict[str, Any]:
    return {"status": "success", "data": {"alerts": [
        {"labels": {"alertname": name, "node": node}, "state": state} for name, node, state in items]}}


def test_firing_alerts_name_their_nodes_in_the_order_given() -> None:
    payload = _alerts(("GpuDoubleBitEccErrors", "gpu-1", "firing"), ("GpuFatalXid", "gpu-1", "firing"),
                      ("GpuFatalXid", "gpu-2", "pending"), ("GpuNvlinkCorrectedErrors", "gpu-3", "firing"))
    assert firing_nodes(payload, ALERTS) == {"gpu-1": "GpuFatalXid"}


def test_a_firing_alert_fences_a_node_whose_condition_is_fine() -> None:
    assert wanted_taints(_node("True"), CONDITIONS, {"gpu-1": "GpuFatalXid"}) == [
        {"key": TAINT_KEY, "value": "GpuFatalXid", "effect": "NoSchedule"}]
    assert wanted_taints(_node("False"), CONDITIONS, {"gpu-1": "GpuFatalXid"}) == [FENCE]  # the condition first


class _FakeApi:
    def __init__(self, node: dict[str, Any]) -> None:
        self.node, self.patches, self.events = node, list[list[dict[str, Any]]](), list[str]()
        self.messages = list[str]()

    def get_node(self, name: str) -> dict[str, Any]:
        return self.node

    def set_taints(self, node: Any, taints: list[dict[str, Any]]) -> None:
        self.patches.append(taints)
        self.node = {**self.node, "spec": {"taints": taints}}

    def create_event(self, event: dict[str, Any]) -> None:
        self.events.append(event["reason"])
        self.messages.append(event["message"])


def test_an_alert_poll_fences_and_lifts_the_nodes_it_moved() -> None:
    api = _FakeApi(_node("True", [POOL_TAINT]))
    fencer = Fencer(api, "gpuplat.dev/pool", CONDITIONS, ALERTS, "http://prometheus:9090")  # type: ignore[arg-type]
    fencer.seen("ADDED", api.node)
    assert api.patches == []
    fencer.polled({"gpu-1": "GpuFatalXid"})
    assert api.patches[-1] == [POOL_TAINT, {"key": TAINT_KEY, "value": "GpuFatalXid", "effect": "NoSchedule"}]
    fencer.polled({"gpu-1": "GpuFatalXid"})  # nothing moved
    assert len(api.patches) == 1
    fencer.polled({})
    assert api.patches[-1] == [POOL_TAINT]
    assert api.events == ["GpuFenced", "GpuUnfenced"]
    fencer.seen("DELETED", api.node)
    fencer.polled({"gpu-1": "GpuFatalXid"})  # a node gone is not patched
    assert len(api.patches) == 2


@pytest.mark.parametrize(("conditions", "lifted"), [
    (CONDITIONS, "AcceleratedHardwareReady no longer False and no GPU health alert firing for it"),
    ((), "no GPU health alert firing for it"),  # provider kubernetes: the alerts alone
])
def test_the_events_say_what_fenced_and_what_cleared(conditions: tuple[str, ...], lifted: str) -> None:
    api = _FakeApi(_node("True"))
    fencer = Fencer(api, "gpuplat.dev/pool", conditions, ALERTS, "http://prometheus:9090")  # type: ignore[arg-type]
    fencer.seen("ADDED", api.node)
    fencer.polled({"gpu-1": "GpuFatalXid"})
    fencer.polled({})
    assert api.messages == [f"tainted {TAINT_KEY}:NoSchedule: alert GpuFatalXid is firing; running pods stay, no new "
                            "pod lands", f"taint {TAINT_KEY} removed: {lifted}"]
