"""The e2e repair scenarios' own logic (e2e/repair.py, e2e/repair_share.py), checked without the
engines they drive: what they choose, what they patch, and that every outcome leaves a row."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from e2e import gpufault, quota, reboot, repair, repair_share
from e2e.cluster import Cluster, E2EError
from e2e.report import FAILED, OK, Report
from e2e.stack import Stack, Target
from gpuplat.plan.health import repairable_at_once


def _queue(tenant: str, flavor: str, nominal: int) -> dict[str, Any]:
    entries = [{"name": flavor, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": nominal}]}]
    return {"metadata": {"name": f"cq-{tenant}"},
            "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": tenant}},
                     "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": entries}]}}


def _stack(nominal: int, nodes: int, gates: dict[str, bool] | None = None) -> Stack:
    flavor = {"metadata": {"name": "atlas-train-spot"},
              "spec": {"nodeLabels": {"gpuplat.dev/pool": "train", "karpenter.sh/capacity-type": "spot"}}}
    nodepool = {"metadata": {"name": "train-spot"}, "spec": {"template": {
        "metadata": {"labels": {"gpuplat.dev/pool": "train"}},
        "spec": {"requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]}}}}
    release = {"name": "karpenter", "values": {"settings": {"featureGates": gates or {}}}}
    resources = [{"type": quota.CLUSTER_QUEUE, "inputs": _queue("research", "atlas-train-spot", nominal)},
                 {"type": quota.FLAVOR, "inputs": flavor},
                 {"type": "kubernetes:karpenter.sh/v1:NodePool", "inputs": nodepool},
                 {"type": "kubernetes:helm.sh/v3:Release", "inputs": release}]
    plan = {"health": [{"pool": "train", "nodePools": [{"name": "train-spot", "nodes": nodes}]}]}
    return Stack(Target("t"), resources, plan, [])


def test_the_share_scenario_takes_down_one_node_more_than_karpenter_still_repairs() -> None:
    # Karpenter repairs while at most 20 % of a NodePool's nodes, rounded up, are unhealthy:
    # 1 of 1 to 5 nodes, 2 of 6 to 10, 3 of 11 to 15 (docs/health.md), as the plan tells users.
    assert [repair_share.allowed_unhealthy(n) for n in (1, 2, 5, 6, 10, 11, 15)] == [1, 1, 1, 2, 2, 3, 3]
    assert all(repair_share.allowed_unhealthy(n) == repairable_at_once(n) for n in range(1, 200))
    # So two nodes are the fewest where more than the share can be taken down.
    assert repair_share.PODS == 2 and repair_share.allowed_unhealthy(2) < 2


def test_the_share_scenario_picks_a_node_pool_that_may_hold_two_nodes_else_says_why() -> None:
    found = repair_share.share_target(_stack(nominal=8, nodes=3))
    assert not isinstance(found, str)
    slot, nodepool = found
    assert (slot.tenant, slot.flavor, nodepool) == ("research", "atlas-train-spot", "train-spot")
    one_node = repair_share.share_target(_stack(nominal=8, nodes=1))
    assert isinstance(one_node, str) and "train-spot (1)" in one_node and "20 %" in one_node
    too_little_quota = repair_share.share_target(_stack(nominal=1, nodes=3))
    assert isinstance(too_little_quota, str) and "none reached" in too_little_quota


def test_the_fault_is_the_agent_s_gpu_condition_with_its_transition_time() -> None:
    patch = gpufault.gpu_fault("2026-12-05T15:00:00Z")
    (said,) = patch["status"]["conditions"]  # a strategic merge by type: the kubelet's Ready stays
    assert (said["type"], said["status"]) == ("AcceleratedHardwareReady", "False")
    # repair counts the toleration from lastTransitionTime; without it the node would be
    # repaired at once.
    assert said["lastTransitionTime"] == "2026-12-05T15:00:00Z"
    assert said["reason"] == "NvidiaXID79Error"


def test_the_repair_gate_is_read_from_the_release_and_from_karpenter_s_own_log(tmp_path: Path) -> None:
    cluster = Cluster("c", tmp_path, {})
    off = _stack(8, 3, {"nodeRepair": False, "nodeOverlay": True})
    gate, said = repair.repair_gate(cluster, off)
    assert gate is None and "NodeRepair=false" in said
    on = _stack(8, 3, {"nodeRepair": True})
    gate, said = repair.repair_gate(cluster, on)
    assert gate is False and "not started" in said  # the gate on, yet no repair controller ran
    (tmp_path / "karpenter.log").write_text(
        '{"level":"INFO","message":"Starting EventSource","controller":"disruption"}\n'
        '{"level":"INFO","message":"Starting Controller","controller":"disruption"}\n')
    gate, said = repair.repair_gate(cluster, on)
    assert gate is True and "NodeRepair=true" in said


def test_every_milestone_leaves_a_row_whether_seen_failed_or_never_seen() -> None:
    report = Report()
    clock = gpufault.Clock()

    def broken() -> str | None:
        raise E2EError("pod runs on the failed node")

    seen = gpufault.watch(report, "dev", {
        "m-seen": (lambda: "node gone", "the node going"),
        "m-failed": (broken, "the pod elsewhere"),
        "m-never": (lambda: None, "an eviction"),
    }, 0, clock)
    assert seen == {"m-seen"}
    rows = {r.scenario: r for r in report.scenarios}
    assert rows["m-seen"].status == OK and "after the fault: node gone" in rows["m-seen"].detail
    assert rows["m-failed"].status == FAILED and "pod runs on the failed node" in rows["m-failed"].detail
    assert rows["m-never"].status == FAILED and "waiting for an eviction" in rows["m-never"].detail


def _workload(admitted: bool, evicted: bool = False, count: int | None = None) -> dict[str, Any]:
    conditions = [{"type": "Admitted", "status": str(admitted)}, {"type": "Evicted", "status": str(evicted)}]
    status: dict[str, Any] = {"conditions": conditions, "admission": {"podSetAssignments": [
        {"flavors": {"nvidia.com/gpu": "atlas-train-on-demand"}}]}}
    if count:
        status["requeueState"] = {"count": count}
    return {"status": status}


def test_kueue_s_admission_is_judged_kept_or_readmitted_and_never_while_evicted() -> None:
    assert repair.admission(None) is None
    assert repair.admission(_workload(admitted=False, count=1)) is None  # requeued, waiting
    assert repair.admission(_workload(admitted=True, evicted=True, count=1)) is None
    kept = repair.admission(_workload(admitted=True))
    assert kept is not None and "same admission" in kept and "never evicted" in kept
    again = repair.admission(_workload(admitted=True, count=1))
    assert again is not None and "admitted again" in again and "requeueState.count 1" in again


class _Reads:
    """The reads a diagnostic makes: one pod, the NodeClaims, the namespace's events."""

    def __init__(self, pod: dict[str, Any], claims: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
        self.pod, self.claims, self.events = pod, claims, events

    def get(self, resource: str, name: str = "", namespace: str = "") -> dict[str, Any] | None:
        return {"pod": self.pod, "events": {"items": self.events}}.get(resource)

    def items(self, resource: str, namespace: str = "") -> list[dict[str, Any]]:
        return self.claims if resource == "nodeclaims.karpenter.sh" else []


def test_a_pod_that_does_not_run_is_explained_by_the_scheduler_karpenter_and_its_events() -> None:
    """What a timed-out setup row says (stop 41's said only that Kueue had reserved quota)."""
    from e2e.jobs import not_running

    pod = {"metadata": {"name": "repair-0"}, "spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]},
           "status": {"phase": "Pending", "conditions": [
               {"type": "PodScheduled", "status": "False", "message": "0/3 nodes are available"}]}}
    claims = [{"metadata": {"name": "train-on-demand-abcde"},
               "status": {"conditions": [{"type": "Launched", "status": "True"},
                                         {"type": "Registered", "status": "False"}]}}]
    events = [{"involvedObject": {"name": "repair-0"}, "reason": "FailedScheduling", "message": "no node fits"}]
    said = not_running(_Reads(pod, claims, events), "product", "repair-0")  # type: ignore[arg-type]
    assert said == ("pod Pending; gate kueue.x-k8s.io/admission; PodScheduled False: 0/3 nodes are available; "
                    "NodeClaims: train-on-demand-abcde (Launched); FailedScheduling: no node fits")


def _go_constant(name: str) -> str:
    """A raw-string constant of the suite's Karpenter main (the AWS provider's regexes)."""
    main = (Path(__file__).resolve().parent.parent / "e2e" / "tools" / "karpenter" / "main.go").read_text()
    (found,) = re.findall(rf"{name}\s*=\s*`([^`]*)`", main)
    return found


def test_the_reboot_fault_is_reboot_clearable_and_the_replace_fault_fatal() -> None:
    """The agent's reasons the scenarios use fall in the AWS provider's XID families (Go's RE2 and
    Python's re read these patterns alike): XID 48 reboots, XID 79 is replaced."""
    reboot_xids, fatal_xids = _go_constant("rebootClearableXIDs"), _go_constant("fatalXIDs")
    assert re.fullmatch(reboot_xids, reboot.REASON) and not re.fullmatch(fatal_xids, reboot.REASON)
    replaced = gpufault.gpu_fault("2026-12-05T15:00:00Z")["status"]["conditions"][0]["reason"]
    assert re.fullmatch(fatal_xids, replaced) and not re.fullmatch(reboot_xids, replaced)


def test_the_reboot_scenario_follows_the_release_s_reboot_gate() -> None:
    stack = _stack(8, 3, {"nodeRepair": True})
    assert not reboot.reboots(stack)
    stack.release("karpenter")["values"]["settings"]["awsFeatureGates"] = {"rebootForRepair": True}  # type: ignore[index]
    assert reboot.reboots(stack)
