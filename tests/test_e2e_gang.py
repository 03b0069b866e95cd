"""A gang job is judged on its pods running at once (e2e/gang.py, e2e/journeys.py), on pod
states as the API server lists them, and kwok is told to hold a gang's pods running
(e2e/kwokstages.py). Pure Python: no cluster."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from e2e import gang, journeys, kwokstages, report, shapes
from e2e.cluster import E2EError
from e2e.expect import EITHER, RUNS, WAITS, Slot
from e2e.report import Journey
from gpuplat.model import SharingMode
from tests.support_canned import Canned

# A pool of 8-GPU nodes: a gang is two pods of 8 GPUs, one whole node each.
TRAIN = Slot("train", "gang", "nvidia.com/gpu", 1, 8, 2, 16, SharingMode.EXCLUSIVE, 16, "", aws=True)


def gang_of(slot: Slot = TRAIN) -> shapes.Shape:
    (found,) = [s for s in shapes.shapes(slot) if s.name == "gang"]
    assert found.pods == 2 and found.together and not found.skip
    return found


def workload(shape: shapes.Shape, count: int | None = None) -> dict[str, Any]:
    return {"metadata": {"name": f"job-{shape.job_name}-1a2b3",
                         "ownerReferences": [{"kind": "Job", "name": shape.job_name}]},
            "status": {"conditions": [{"type": "QuotaReserved", "status": "True"},
                                      {"type": "Admitted", "status": "True"}],
                       "admission": {"clusterQueue": "train", "podSetAssignments": [{
                           "name": "main", "flavors": {shape.slot.resource: "gang-on-demand"},
                           "count": shape.pods if count is None else count}]}}}


def pod(shape: shapes.Shape, index: int, phase: str, node: str = "") -> dict[str, Any]:
    """A pod of the gang's Job as `kubectl get pods -o json` lists it."""
    status: dict[str, Any] = {"phase": phase}
    if phase == "Running":
        status["conditions"] = [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]
    if phase == "Succeeded":
        status["containerStatuses"] = [{"name": "main", "state": {"terminated": {"reason": "Completed"}}}]
    if phase == "Pending" and not node:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    spec: dict[str, Any] = {"containers": [{"name": "main"}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": f"{shape.job_name}-{index}-x7k2p", "namespace": shape.slot.tenant,
                         "labels": {"job-name": shape.job_name, "batch.kubernetes.io/job-name": shape.job_name}},
            "spec": spec, "status": status}


def judged(shape: shapes.Shape, pods: list[dict[str, Any]], admitted: dict[str, Any] | None = None) -> journeys.Verdict:
    tenant = shape.slot.tenant
    cluster = Canned({("workloads.kueue.x-k8s.io", tenant): [admitted or workload(shape)], ("pods", tenant): pods,
                      ("nodes", ""): [{"metadata": {"name": n, "labels": {}}} for n in ("n0", "n1")]})
    return journeys.judge(cluster, [(shape, "")], 0)[journeys.key(shape)]  # type: ignore[arg-type]


def agrees(shape: shapes.Shape, verdict: journeys.Verdict) -> bool:
    return report.agrees(Journey("coverage", "train", "gang", "nvidia.com/gpu", shape.expect, verdict.actual, ""))


def test_a_gang_runs_when_all_its_pods_run_at_once_on_nodes_of_their_own() -> None:
    shape = gang_of()
    verdict = judged(shape, [pod(shape, 0, "Running", "n0"), pod(shape, 1, "Running", "n1")])
    assert verdict.actual == RUNS and agrees(shape, verdict)
    assert "as one workload; all 2 pods Running at once on 2 node(s) (n0, n1)" in verdict.reason


def test_a_gang_whose_pods_ran_one_after_another_on_one_node_fails() -> None:
    """What the suite saw before kwok held a gang: the first pod done, the second on its node."""
    shape = gang_of()
    verdict = judged(shape, [pod(shape, 0, "Succeeded", "n0"), pod(shape, 1, "Running", "n0")])
    assert verdict.actual == gang.NOT_TOGETHER and not agrees(shape, verdict)
    assert "1 pod(s) ended before all 2 ran" in verdict.reason
    open_ = dataclasses.replace(shape, expect=EITHER)  # one the spec leaves open fails all the same
    assert not agrees(open_, judged(open_, [pod(shape, 0, "Succeeded", "n0"), pod(shape, 1, "Running", "n0")]))


def test_a_gang_of_whole_node_pods_on_one_node_fails_and_one_that_fits_a_node_may_share_it() -> None:
    shape = gang_of()
    verdict = judged(shape, [pod(shape, 0, "Running", "n0"), pod(shape, 1, "Running", "n0")])
    assert verdict.actual == gang.NOT_TOGETHER
    assert "2 of the gang's pods on n0: 2 x 8 > the 8 units one node of gang serves" in verdict.reason
    mps = gang_of(dataclasses.replace(TRAIN, resource="nvidia.com/gpu.shared", per_gpu=4, sharing=SharingMode.MPS))
    assert (mps.pods, mps.units) == (2, 1)
    assert judged(mps, [pod(mps, 0, "Running", "n0"), pod(mps, 1, "Running", "n0")]).actual == RUNS


def test_a_gang_that_cannot_be_co_scheduled_is_not_judged_running() -> None:
    shape = gang_of()
    verdict = judged(shape, [pod(shape, 0, "Running", "n0"), pod(shape, 1, "Pending")])
    assert verdict.actual == WAITS and not agrees(shape, verdict)  # at the deadline, one pod short
    assert "admitted, 1 of 2 pod(s) bound" in verdict.reason
    assert gang.judge(shape, workload(shape), [pod(shape, 0, "Running", "n0"), pod(shape, 1, "Pending")]) == \
        gang.Gang(None, "1 of 2 pod(s) Running")


def test_a_gang_is_admitted_by_kueue_as_one_workload() -> None:
    shape = gang_of()
    running = [pod(shape, 0, "Running", "n0"), pod(shape, 1, "Running", "n1")]
    verdict = judged(shape, running, admitted=workload(shape, count=1))
    assert verdict.actual == gang.NOT_TOGETHER
    assert "Kueue's Workload admits 1 pod(s), not the job's 2 as one workload" in verdict.reason


def test_a_pod_being_deleted_is_no_member() -> None:
    shape = gang_of()
    leaving = pod(shape, 2, "Running", "n1")
    leaving["metadata"]["deletionTimestamp"] = "2026-12-05T19:00:00Z"
    found = gang.judge(shape, workload(shape), [pod(shape, 0, "Running", "n0"), leaving, pod(shape, 1, "Pending")])
    assert found.together is None


def test_only_a_gang_is_held_and_kwok_holds_only_pods_it_is_told_to() -> None:
    found = {s.name: s.together for s in shapes.shapes(TRAIN)}
    assert found == {"single": False, "node": False, "gang": True, "over": False}
    upstream = {"metadata": {"name": "pod-complete"}, "spec": {"selector": {"matchExpressions": [
        {"key": ".metadata.ownerReferences.[].kind", "operator": "In", "values": ["Job"]}]}}}
    held = kwokstages.held(upstream)
    assert held["spec"]["selector"]["matchExpressions"] == [
        *upstream["spec"]["selector"]["matchExpressions"],
        {"key": '.metadata.annotations["e2e.gpuplat.dev/hold-running"]', "operator": "DoesNotExist"}]
    assert len(upstream["spec"]["selector"]["matchExpressions"]) == 1  # upstream's own is left alone


def test_kwoks_stages_are_kwokctls_defaults_with_the_hold_and_a_deleted_pod_stopped_first() -> None:
    try:
        found = kwokstages.stages()
    except (E2EError, FileNotFoundError) as err:
        pytest.skip(f"the kwok module is not in the Go module cache: {err}")
    assert [s["metadata"]["name"] for s in found] == [
        "node-initialize", "node-heartbeat-with-lease", "pod-ready", "pod-complete", "pod-stop", "pod-delete"]
    complete = found[3]["spec"]["selector"]["matchExpressions"]
    assert {"key": ".metadata.ownerReferences.[].kind", "operator": "In", "values": ["Job"]} in complete
    assert complete[-1]["key"] == f'.metadata.annotations["{kwokstages.HOLD}"]'
    stop, delete = (s["spec"]["selector"]["matchExpressions"] for s in found[4:])
    # A deleted pod is stopped while its phase has not ended, and deleted only once it has:
    # the two never match the same pod, so kwok cannot delete before it stops.
    deleted = {"key": ".metadata.deletionTimestamp", "operator": "Exists"}
    assert deleted in stop and deleted in delete
    assert {"key": ".status.phase", "operator": "NotIn", "values": ["Succeeded", "Failed"]} in stop
    assert {"key": ".status.phase", "operator": "In", "values": ["Succeeded", "Failed"]} in delete
    assert found[5]["spec"]["next"] == {"delete": True}  # upstream's action, unchanged
