"""A pod bound to a node in the second before kwok took the node over is woken (e2e/nodes.py)."""

from __future__ import annotations

import subprocess
import time
from datetime import UTC, datetime
from typing import Any, cast

from e2e.cluster import BOOTED
from e2e.devices import Registration
from e2e.nodes import WOKEN, NodeAgents


def _pod(name: str, node: str, phase: str, bound_ago: float | None) -> dict[str, Any]:
    conditions = [] if bound_ago is None else [
        {"type": "PodScheduled", "status": "True",
         "lastTransitionTime": datetime.fromtimestamp(time.time() - bound_ago, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}]
    return {"metadata": {"name": name, "namespace": "ns", "uid": name},
            "spec": {"nodeName": node}, "status": {"phase": phase, "conditions": conditions}}


class _Cluster:
    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.pods = pods
        self.patched: list[tuple[str, ...]] = []

    def items(self, resource: str, namespace: str = "") -> list[dict[str, Any]]:
        return self.pods

    def kubectl(self, *args: str, **kwargs: Any) -> None:
        self.patched.append(args)


def _node(name: str, booted: bool, ready: bool) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {BOOTED: "true"} if booted else {}},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def test_only_a_pod_left_pending_on_a_ready_booted_node_is_woken_and_not_at_every_sweep() -> None:
    cluster: Any = _Cluster([
        _pod("stranded", "a", "Pending", 30), _pod("just-bound", "a", "Pending", 1),
        _pod("running", "a", "Running", 30), _pod("unbound", "", "Pending", None),
        _pod("on-a-booting-node", "b", "Pending", 30), _pod("on-a-failed-node", "c", "Pending", 30)])
    agents = NodeAgents(cluster, None)
    nodes = [_node("a", True, True), _node("b", False, False), _node("c", True, False)]
    agents.wake_stranded(nodes, cluster.pods)
    assert [args[2] for args in cluster.patched] == ["stranded"]
    assert WOKEN in cluster.patched[0][-1]
    agents.wake_stranded(nodes, cluster.pods)  # once, then again only after STRANDED_AFTER
    assert len(cluster.patched) == 1 and list(agents.woken) == ["stranded"]


class _Model:
    def register(self, name: str, labels: Any, annotations: Any, taints: Any) -> Registration:
        return Registration({}, {"nvidia.com/gpu.shared": 16}, f"{name}: shared")


class _Nodes(_Cluster):
    """A cluster whose node patches record whether the agents already said the node was done."""

    def __init__(self) -> None:
        super().__init__([])
        self.agents: NodeAgents | None = None
        self.published_at_patch: list[bool] = []

    def items(self, resource: str, namespace: str = "") -> list[dict[str, Any]]:
        if resource != "nodes":
            return []
        return [{"metadata": {"name": n, "labels": {}}, "spec": {}, "status": {"allocatable": {"cpu": "8"}}}
                for n in ("n-0", "n-1")]

    def kubectl(self, *args: str, **kwargs: Any) -> Any:
        assert self.agents is not None
        self.published_at_patch.append(args[2] in self.agents.details)
        return subprocess.CompletedProcess(args, 0, "", "")


def test_a_node_is_reported_registered_only_after_its_status_and_labels_are_written() -> None:
    # A scenario waits on `details` and then submits a job: a node published before its
    # allocatable changed let the scheduler bind that job on what the node had before.
    cluster: Any = _Nodes()
    agents = cluster.agents = NodeAgents(cluster, cast(Any, _Model()))
    agents.sweep()
    assert cluster.published_at_patch and not any(cluster.published_at_patch)
    assert agents.details == {"n-0": "n-0: shared", "n-1": "n-1: shared"}
