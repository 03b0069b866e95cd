"""A pod bound to a node in the second before kwok took the node over is woken (e2e/nodes.py)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from e2e.cluster import BOOTED
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
