"""The drain-and-requeue scenario of provider kubernetes (e2e/requeue.py) is judged on the
objects the engines leave: which nodes of a pool can take the work again, the node `kubectl
cordon` leaves, what `kubectl drain` said and left, Kueue's Workload in its own words, and where
the group's next pod runs. Canned objects, no cluster; the alert case runs the real promtool on
the emitted rule."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.kubernetes.gpu_health import prometheus_rule_spec
from e2e import quota, requeue
from e2e.cluster import E2EError
from e2e.stack import Stack, Target
from tests.support_canned import Canned
from tests.test_rule_tests import promtool

POOL = {"gpuplat.dev/pool": "lab"}


def node(name: str, labels: dict[str, str], ready: str = "True", unschedulable: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"unschedulable": True} if unschedulable else {}
    return {"metadata": {"name": name, "labels": labels}, "spec": spec,
            "status": {"conditions": [{"type": "Ready", "status": ready}]}}


def pod(name: str, node_name: str, phase: str = "Running", ready: bool = True) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "research", "labels": {requeue.GROUP_LABEL: requeue.GROUP}},
            "spec": {"nodeName": node_name},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": str(ready)}]}}


def test_only_ready_schedulable_nodes_of_the_flavor_can_take_the_work_again() -> None:
    listed = Canned({("nodes", ""): [
        node("lab-0", {**POOL, "extra": "x"}), node("lab-1", POOL), node("lab-2", POOL, ready="Unknown"),
        node("lab-3", POOL, unschedulable=True), node("infer-0", {"gpuplat.dev/pool": "infer"}), node("sys-0", {})]})
    assert requeue.pool_nodes(listed.items("nodes"), POOL) == ["lab-0", "lab-1"]


def test_a_cordoned_node_is_unschedulable_and_says_so_with_the_taint_once_it_came() -> None:
    assert requeue.cordoned(node("lab-0", POOL)) is None
    assert requeue.cordoned(None) is None
    fenced = node("lab-0", POOL, unschedulable=True)
    assert requeue.cordoned(fenced) == "spec.unschedulable true"
    fenced["spec"]["taints"] = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
    assert requeue.cordoned(fenced) == "spec.unschedulable true, taint node.kubernetes.io/unschedulable:NoSchedule"


def drained(stdout: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess(["kubectl", "drain"], code, stdout, "")


def test_the_pod_counts_as_evicted_only_when_drain_evicted_it_and_it_is_gone() -> None:
    said = "node/lab-0 cordoned\nevicting pod research/drain-0\npod/drain-0 evicted\nnode/lab-0 drained\n"
    assert "eviction API" in requeue.evicted(drained(said), "research", "drain-0", None)
    with pytest.raises(E2EError, match="still there"):  # Kueue's finalizer holding it, say
        requeue.evicted(drained(said), "research", "drain-0", pod("drain-0", "lab-0"))
    with pytest.raises(E2EError, match="did not evict"):  # drain found nothing of the tenant's
        requeue.evicted(drained("node/lab-0 drained\n"), "research", "drain-0", None)
    with pytest.raises(E2EError, match="drain failed"):
        requeue.evicted(drained("error: cannot delete Pods declare no controller", 1), "research", "drain-0", None)


def test_kueues_workload_is_told_kept_or_evicted_and_requeued_from_its_conditions() -> None:
    kept = {"status": {"conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
                                      {"type": "Admitted", "status": "True", "reason": "Admitted"}]}}
    assert requeue.workload_state(kept) == ("QuotaReserved=True (QuotaReserved), Admitted=True (Admitted), "
                                            "requeueState none")
    requeued = {"status": {"conditions": [
        {"type": "QuotaReserved", "status": "False", "reason": "Pending"},
        {"type": "Evicted", "status": "True", "reason": "PodsReadyTimeout"},
        {"type": "Requeued", "status": "False", "reason": "PodsReadyTimeout"}],
        "requeueState": {"count": 1, "requeueAt": "2026-12-05T23:00:00Z"}}}
    said = requeue.workload_state(requeued)
    assert "Evicted=True (PodsReadyTimeout)" in said and "Requeued=False" in said and "'count': 1" in said
    assert requeue.workload_state(None) == "no Workload"


def test_the_next_pod_counts_only_running_on_another_node_of_the_pool() -> None:
    pool = ["lab-0", "lab-1"]
    assert requeue.elsewhere(pod("drain-1", "lab-1"), "lab-0", pool) == "lab-1"
    assert requeue.elsewhere(pod("drain-1", "lab-1", "Pending", ready=False), "lab-0", pool) is None
    assert requeue.elsewhere(None, "lab-0", pool) is None
    with pytest.raises(E2EError, match="cordoned node lab-0"):
        requeue.elsewhere(pod("drain-1", "lab-0", "Pending", ready=False), "lab-0", pool)
    with pytest.raises(E2EError, match="not a node of the pool"):
        requeue.elsewhere(pod("drain-1", "infer-0"), "lab-0", pool)
    left = [pod("drain-0", "lab-0"), pod("drain-1", "lab-1"), {**pod("other", "lab-0"), "metadata": {"name": "x"}}]
    assert requeue.on_node(left, "lab-0") == ["drain-0"]


def test_the_emitted_rule_alerts_on_the_drained_nodes_xid_under_promtool(tmp_path: Path) -> None:
    tool = promtool()
    spec = prometheus_rule_spec()
    (fatal,) = [a for a in spec["groups"][0]["rules"] if a["alert"] == "GpuFatalXid"]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(spec))

    def run(case: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        (tmp_path / "tests.yaml").write_text(yaml.safe_dump(case))
        return subprocess.run([str(tool), "test", "rules", "tests.yaml"], cwd=tmp_path, capture_output=True,
                              text=True)

    case = requeue.alert_case("rules.yaml", "lab-0", "lab", fatal["annotations"]["description"])
    assert run(case).returncode == 0
    # The case can fail: an application's XID (13) on that GPU raises nothing.
    case["tests"][0]["input_series"][0]["values"] = "0 13x10"
    assert run(case).returncode == 1


def _queue_with(tenant: str, flavor: str, quotas: dict[str, int]) -> dict[str, Any]:
    entries = [{"name": flavor, "resources": [{"name": r, "nominalQuota": n} for r, n in quotas.items()]}]
    return {"metadata": {"name": f"cq-{tenant}-{flavor}"},
            "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": tenant}},
                     "resourceGroups": [{"coveredResources": list(quotas), "flavors": entries}]}}


def test_the_work_goes_on_a_flavor_without_a_topology_whole_gpus_first_then_mig_slices() -> None:
    flavors = [{"metadata": {"name": "train"}, "spec": {"nodeLabels": {"gpuplat.dev/pool": "train"},
                                                        "topologyName": "fabric"}},
               {"metadata": {"name": "infer"}, "spec": {"nodeLabels": {"gpuplat.dev/pool": "infer"}}},
               {"metadata": {"name": "lab"}, "spec": {"nodeLabels": {"gpuplat.dev/pool": "lab"}}}]
    queues = [_queue_with("models", "train", {"nvidia.com/gpu": 128}),  # topology-aware: not taken
              _queue_with("research", "lab", {"nvidia.com/gpu.fractional": 120, "cpu": 64}),
              _queue_with("research", "infer", {"nvidia.com/mig-3g.40gb": 17, "nvidia.com/mig-1g.10gb": 0})]
    resources = [*({"type": quota.CLUSTER_QUEUE, "inputs": q} for q in queues),
                 *({"type": quota.FLAVOR, "inputs": f} for f in flavors)]
    found = requeue.slots_of(Stack(Target("t"), resources, {}, []))
    assert [(s.flavor, s.resource) for s in found] == [("infer", "nvidia.com/mig-3g.40gb"),
                                                       ("lab", "nvidia.com/gpu.fractional")]
