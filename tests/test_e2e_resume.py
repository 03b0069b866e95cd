"""The multi-node resume scenario's own logic (e2e/resume.py), on pods and nodes as the API server
lists them: what a rank carries, when the job counts as running again, what the launcher makes,
and the rows it leaves where it cannot run. Pure Python: no cluster."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

from e2e import kwokstages, quota, resume
from e2e.cluster import Cluster
from e2e.repair import GROUP_COUNT, GROUP_LABEL, Made
from e2e.report import SKIPPED, Report
from e2e.stack import Stack, Target

SLOT = quota.Slot("product", "atlas-train-spot", "nvidia.com/gpu", 3, 0,
                  {"gpuplat.dev/pool": "train", "karpenter.sh/capacity-type": "spot"}, {})
WHERE = "claim hot at /hot, /hot/checkpoints/resume/"


def rank(name: str, phase: str = "Running", node: str = "", deleting: bool = False,
         manifest: dict[str, Any] | None = None) -> dict[str, Any]:
    """A pod of the group as `kubectl get pods -o json` lists it (Ready while Running)."""
    pod = copy.deepcopy(manifest or resume.member(SLOT, name))
    pod["metadata"]["name"] = name
    if node:
        pod["spec"]["nodeName"] = node
    if deleting:
        pod["metadata"]["deletionTimestamp"] = "2026-12-05T22:00:00Z"
    ready = phase == "Running" or phase == "Failed"  # the pod GC fails a lost pod, its Ready as it was
    pod["status"] = {"phase": phase, "conditions": [{"type": "Ready", "status": str(ready)}]}
    return pod


def test_each_rank_is_one_of_a_group_of_two_held_running_alone_on_its_node_with_the_tenant_s_checkpoints() -> None:
    pod = resume.member(SLOT, "resume-0")
    assert pod["metadata"]["labels"][GROUP_LABEL] == "resume"
    assert pod["metadata"]["annotations"][GROUP_COUNT] == "2"
    assert kwokstages.HOLD in pod["metadata"]["annotations"]  # kwok does not complete it
    (term,) = pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname" and term["labelSelector"]["matchLabels"] == {
        GROUP_LABEL: "resume"}
    assert pod["spec"]["nodeSelector"] == SLOT.node_labels
    # The tenant guide's convention: the namespace's claim `hot` at /hot, checkpoints under the job's name.
    assert resume.checkpoint(pod) == WHERE


def test_the_checkpoint_location_is_read_off_the_pod_as_the_kubelet_would_resolve_it() -> None:
    pod = resume.member(SLOT, "resume-0")
    renamed = copy.deepcopy(pod)
    renamed["metadata"]["labels"][GROUP_LABEL] = "other"  # JOB names the group: another group, another directory
    assert resume.checkpoint(renamed) == "claim hot at /hot, /hot/checkpoints/other/"
    literal = copy.deepcopy(pod)
    literal["spec"]["containers"][0]["env"] = [{"name": "JOB", "value": "resume"}]
    assert resume.checkpoint(literal) == WHERE
    unmounted = copy.deepcopy(pod)
    unmounted["spec"]["containers"][0]["volumeMounts"] = []
    assert resume.checkpoint(unmounted) is None
    elsewhere = copy.deepcopy(pod)
    elsewhere["spec"]["volumes"] = [{"name": "hot", "emptyDir": {}}]  # not the tenant's claim
    assert resume.checkpoint(elsewhere) is None
    assert resume.checkpoint({"metadata": {"name": "x"}, "spec": {}}) is None


def test_the_first_ranks_run_once_both_are_ready_on_two_nodes() -> None:
    assert resume.together([rank("resume-0", "Pending"), rank("resume-1", node="n1")], "", WHERE).together is None
    both = resume.together([rank("resume-0", node="n0"), rank("resume-1", node="n1")], "", WHERE)
    assert both.together is True and "resume-0 on n0, resume-1 on n1" in both.said and WHERE in both.said
    packed = resume.together([rank("resume-0", node="n0"), rank("resume-1", node="n0")], "", WHERE)
    assert packed.together is False and "2 of the group's pods on node n0" in packed.said


def test_the_job_runs_again_only_with_both_ranks_at_once_off_the_failed_node_with_the_same_checkpoints() -> None:
    first = {"resume-0", "resume-1"}
    lost = rank("resume-0", "Failed", node="bad")
    waiting = [lost, rank("resume-1", node="n1"), rank("resume-2", "Pending")]
    assert resume.together(waiting, "bad", WHERE, first).together is None
    again = resume.together([lost, rank("resume-1", node="n1"), rank("resume-2", node="n2")], "bad", WHERE, first)
    assert again.together is True
    assert "resume-1 on n1 (kept running), resume-2 on n2 (made after the fault)" in again.said
    # A pod still counted on the failed node fails the row at once.
    on_bad = resume.together([rank("resume-0", node="bad"), rank("resume-1", node="n1")], "bad", WHERE, first)
    assert on_bad.together is False and "resume-0" in on_bad.said and "failed node bad" in on_bad.said
    # A pod being deleted does not count, however it still shows Running.
    leaving = resume.together([rank("resume-1", node="n1"), rank("resume-2", node="n2", deleting=True)], "bad",
                              WHERE, first)
    assert leaving.together is None
    # The rank made again must find the first ranks' checkpoints.
    bare = resume.member(SLOT, "resume-2")
    bare["spec"]["volumes"] = []
    moved = resume.together([rank("resume-1", node="n1"), rank("resume-2", node="n2", manifest=bare)], "bad",
                            WHERE, first)
    assert moved.together is False and "resume-2: no checkpoint location" in moved.said


class _Launcher:
    """The reads and writes of the launcher: the namespace's pods, and what it creates."""

    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.pods = pods
        self.created: list[dict[str, Any]] = []

    def items(self, resource: str, namespace: str = "") -> list[dict[str, Any]]:
        assert (resource, namespace) == ("pods", "product")
        return [*self.pods, {"metadata": {"name": "other", "labels": {}}, "status": {"phase": "Running"}}]

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True,
                **identity: Any) -> subprocess.CompletedProcess[str]:
        assert args[:2] == ("create", "-f") and identity["as_user"].endswith("-product")
        self.created.append(json.loads(stdin or "{}"))
        return subprocess.CompletedProcess(args, 0, "", "")


def test_the_launcher_makes_a_pod_for_each_rank_the_group_lacks_and_no_more() -> None:
    made = Made(["resume-0", "resume-1"])
    lost = _Launcher([rank("resume-0", "Failed", node="bad"), rank("resume-1", node="n1")])
    resume.launch(lost, SLOT, made)  # type: ignore[arg-type]
    assert [p["metadata"]["name"] for p in lost.created] == ["resume-2"] and made.pods[-1] == "resume-2"
    assert resume.checkpoint(lost.created[0]) == WHERE
    whole = _Launcher([rank("resume-1", node="n1", deleting=True), rank("resume-2", node="n2", deleting=True)])
    resume.launch(whole, SLOT, made)  # type: ignore[arg-type]  # Kueue evicted the group: both made again
    assert [p["metadata"]["name"] for p in whole.created] == ["resume-3", "resume-4"]
    full = _Launcher([rank("resume-3", node="n1"), rank("resume-4", "Pending")])
    resume.launch(full, SLOT, made)  # type: ignore[arg-type]
    assert full.created == []


class _Nodes:
    def __init__(self, node: dict[str, Any] | None) -> None:
        self.node = node

    def get(self, resource: str, name: str = "", namespace: str = "") -> dict[str, Any] | None:
        return self.node


def test_the_node_is_fenced_by_karpenter_s_disrupted_taint_or_by_being_gone() -> None:
    clean = {"metadata": {"name": "bad"}, "spec": {"taints": [{"key": "gpuplat.dev/spot", "effect": "NoSchedule"}]}}
    assert resume.fenced(_Nodes(clean), "bad") is None  # type: ignore[arg-type]
    tainted = copy.deepcopy(clean)
    tainted["spec"]["taints"].append({"key": "karpenter.sh/disrupted", "effect": "NoSchedule"})
    assert resume.fenced(_Nodes(tainted), "bad") == "node bad tainted karpenter.sh/disrupted:NoSchedule by Karpenter"  # type: ignore[arg-type]
    gone = resume.fenced(_Nodes(None), "bad")  # type: ignore[arg-type]
    assert gone is not None and "gone" in gone


def _stack(claims: bool) -> Stack:
    queue = {"metadata": {"name": "cq-product"},
             "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "product"}},
                      "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
                          {"name": SLOT.flavor, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 3}]}]}]}}
    flavor = {"metadata": {"name": "atlas-train-spot"}, "spec": {"nodeLabels": SLOT.node_labels}}
    nodepool = {"metadata": {"name": "train-spot"}, "spec": {"template": {
        "metadata": {"labels": {"gpuplat.dev/pool": "train"}},
        "spec": {"requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]}}}}
    claim = {"metadata": {"name": "hot", "namespace": "product"}, "spec": {"volumeName": "atlas-hot-product"}}
    resources = [{"type": quota.CLUSTER_QUEUE, "inputs": queue}, {"type": quota.FLAVOR, "inputs": flavor},
                 {"type": "kubernetes:karpenter.sh/v1:NodePool", "inputs": nodepool},
                 {"type": "kubernetes:helm.sh/v3:Release", "inputs": {"name": "kueue"}},
                 {"type": "kubernetes:helm.sh/v3:Release",
                  "inputs": {"name": "karpenter", "values": {"settings": {"featureGates": {"nodeRepair": True}}}}},
                 *([{"type": resume.CLAIM_TYPE, "inputs": claim}] if claims else [])]
    plan = {"health": [{"pool": "train", "nodePools": [{"name": "train-spot", "nodes": 3}]}]}
    return Stack(Target("t"), resources, plan, [])


def test_a_stack_without_the_tenant_s_hot_claim_gets_a_skipped_row_saying_why(tmp_path: Path) -> None:
    (tmp_path / "karpenter.log").write_text('{"message":"Starting Controller","controller":"disruption"}\n')
    stack = _stack(claims=False)
    assert resume.hot_claim(_stack(claims=True), "product") is not None
    assert resume.hot_claim(stack, "research") is None
    report = Report()
    resume.multinode(Cluster("c", tmp_path, {}), stack, report, 1)
    (row,) = report.scenarios
    assert (row.scenario, row.status) == (resume.ROW, SKIPPED)
    assert "no claim `hot` in product's namespace" in row.detail


def test_without_repair_or_without_two_nodes_for_the_ranks_the_row_says_why(tmp_path: Path) -> None:
    report = Report()
    resume.multinode(Cluster("c", tmp_path, {}), _stack(claims=True), report, 1)  # no disruption controller in the log
    (row,) = report.scenarios
    assert row.status != SKIPPED and "not started" in row.detail
    (tmp_path / "karpenter.log").write_text('{"message":"Starting Controller","controller":"disruption"}\n')
    small = _stack(claims=True)
    small.plan["health"][0]["nodePools"][0]["nodes"] = 1
    resume.multinode(Cluster("c", tmp_path, {}), small, report, 1)
    assert report.scenarios[-1].status == SKIPPED
    assert report.scenarios[-1].detail.endswith("train-spot (1)): no job of 2 ranks on 2 nodes fits")
