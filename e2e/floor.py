"""The capacity floor moved as KEDA would move it: up to its ScaledObject's maxReplicaCount, where
each placeholder stands on a node of its own (on aws Karpenter launches the missing ones, never
spot), then down to minReplicaCount, where on aws Karpenter removes the nodes the floor let go
once they are empty (the NodePools' WhenEmpty consolidation).

KEDA itself does not run here (docs/e2e.md): its HPA writes the Deployment's scale, which is what
the suite writes. The emitted NodePools wait `consolidateAfter` (10m) before removing an empty
node; the suite shortens that one timer on the pool's NodePools, right before scaling down, so a
run does not wait ten minutes per pool. Policy and budgets stay as emitted.
"""

from __future__ import annotations

import json
from typing import Any

from e2e.cluster import Cluster, E2EError, wait_for
from e2e.report import Report
from e2e.stack import Stack

SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
POOL_LABEL = "gpuplat.dev/pool"
SHORT_CONSOLIDATE_AFTER = "5s"
PER_REMOVAL = 30.0  # seconds allowed per node removed, beyond the suite's timeout
PER_LAUNCH = 10.0  # seconds allowed per placeholder added, beyond the suite's timeout


def floors(stack: Stack) -> list[tuple[dict[str, Any], int, int]]:
    """(floor Deployment, KEDA's min, KEDA's max) for every floor KEDA may raise."""
    scaled = {o["spec"]["scaleTargetRef"]["name"]: o for o in stack.of_type(SCALED_OBJECT)}
    found = []
    for deployment in stack.of_type("kubernetes:apps/v1:Deployment"):
        name = deployment["metadata"]["name"]
        target = scaled.get(name)
        if not name.startswith("capacity-floor-") or target is None:
            continue
        low, high = int(target["spec"].get("minReplicaCount", 0)), int(target["spec"]["maxReplicaCount"])
        if high > low:
            found.append((deployment, low, high))
    return found


def _placeholder_nodes(cluster: Cluster, deployment: dict[str, Any]) -> list[str]:
    labels = deployment["spec"]["selector"]["matchLabels"]
    found = cluster.get("pods", namespace=deployment["metadata"]["namespace"]) or {"items": []}
    pods = [p for p in found["items"] if all(p["metadata"].get("labels", {}).get(k) == v for k, v in labels.items())]
    return [p["spec"].get("nodeName", "") for p in pods
            if not p["metadata"].get("deletionTimestamp") and p.get("status", {}).get("phase") == "Running"]


def _pool_nodes(cluster: Cluster, pool: str) -> list[dict[str, Any]]:
    return [n for n in cluster.items("nodes") if n["metadata"].get("labels", {}).get(POOL_LABEL) == pool]


def _scale(cluster: Cluster, deployment: dict[str, Any], replicas: int) -> None:
    cluster.kubectl("scale", "deployment", deployment["metadata"]["name"], "-n",
                    deployment["metadata"]["namespace"], f"--replicas={replicas}")


def _karpenter_said(cluster: Cluster, nodes: set[str]) -> str:
    """Karpenter's own words on removing these nodes (its DisruptionTerminating events)."""
    events = cluster.get("events", namespace="default") or {"items": []}
    said = sorted({f"{e['involvedObject'].get('name')}: {e.get('message', '').strip()}" for e in events["items"]
                   if e.get("reason") == "DisruptionTerminating" and e.get("involvedObject", {}).get("kind") == "Node"
                   and e["involvedObject"].get("name") in nodes})
    return "; ".join(said) or "no DisruptionTerminating event for them"


def _at_least(cluster: Cluster, deployment: dict[str, Any], count: int) -> list[str] | None:
    found = _placeholder_nodes(cluster, deployment)
    return found if len(set(found)) >= count else None


def _at_most(cluster: Cluster, pool: str, count: int) -> list[dict[str, Any]] | None:
    found = _pool_nodes(cluster, pool)
    return found if len(found) <= count else None


def _shorten_consolidation(cluster: Cluster, stack: Stack, pool: str) -> None:
    patch = json.dumps({"spec": {"disruption": {"consolidateAfter": SHORT_CONSOLIDATE_AFTER}}})
    for nodepool in stack.of_type(NODEPOOL):
        if nodepool["spec"]["template"]["metadata"].get("labels", {}).get(POOL_LABEL) == pool:
            name = nodepool["metadata"]["name"]
            cluster.kubectl("patch", "nodepools.karpenter.sh", name, "--type=merge", "-p", patch)


def _raise(cluster: Cluster, deployment: dict[str, Any], pool: str, high: int, timeout: float) -> tuple[bool, str]:
    """Scale the floor up to KEDA's max: every placeholder on a node of its own, none spot."""
    # Each new placeholder waits for a node Karpenter launches and kwok and the node agents bring
    # up: prod's train adds 14 at once, which took longer than the suite's timeout on a loaded
    # machine, so the wait grows with the nodes to add.
    launches = max(0, high - len(_placeholder_nodes(cluster, deployment)))
    _scale(cluster, deployment, high)
    up = set(wait_for(lambda: _at_least(cluster, deployment, high), timeout + PER_LAUNCH * launches,
                      f"{high} floor placeholders of pool {pool} running"))
    spot = [n["metadata"]["name"] for n in _pool_nodes(cluster, pool) if n["metadata"]["name"] in up
            and n["metadata"].get("labels", {}).get("karpenter.sh/capacity-type") == "spot"]
    return not spot, f"raised to {high} (KEDA's maxReplicaCount): placeholders on {len(up)} node(s), " \
        f"{len(spot) or 'none'} of them spot"


def scaling(cluster: Cluster, stack: Stack, report: Report, timeout: float) -> None:
    label = stack.target.label
    for deployment, low, high in floors(stack):
        pool = deployment["metadata"]["labels"][POOL_LABEL]
        name = f"floor-scaling-{pool}"
        try:
            ok, raised = _raise(cluster, deployment, pool, high, timeout)
            if stack.provider != "aws":
                _scale(cluster, deployment, low)
                wait_for(lambda d=deployment, lo=low: True if len(_placeholder_nodes(cluster, d)) <= lo else None,
                         timeout, f"floor of pool {pool} back at {low}")
                report.scenario(label, name, ok, f"{raised}; lowered to {low} (the existing nodes stay)")
                continue
            before = {n["metadata"]["name"] for n in _pool_nodes(cluster, pool)}
            _shorten_consolidation(cluster, stack, pool)
            _scale(cluster, deployment, low)
            try:
                # Fabric pools' budgets let Karpenter remove one node at a time, each after its own
                # consolidation round: the wait grows with the nodes to remove.
                removals = max(0, len(before) - low)
                left = wait_for(lambda p=pool, lo=low: _at_most(cluster, p, lo), timeout + PER_REMOVAL * removals,
                                f"Karpenter removing pool {pool}'s empty nodes down to {low}")
                gone = before - {n["metadata"]["name"] for n in left}
                report.scenario(label, name, ok,
                                f"{raised}; lowered to {low}: Karpenter removed {len(gone)} empty node(s), {len(left)} "
                                f"left (consolidateAfter {SHORT_CONSOLIDATE_AFTER} for the run): "
                                f"{_karpenter_said(cluster, gone)}")
            except E2EError as err:
                names = [n["metadata"]["name"] for n in _pool_nodes(cluster, pool)]
                report.scenario(label, name, False, f"{raised}; {err}: still {', '.join(names)}")
        except E2EError as err:
            report.scenario(label, name, False, str(err))
