"""More than Karpenter's unhealthy share of a NodePool fails at once: Karpenter repairs none.

Karpenter's repair (karpenter 1.15, pkg/controllers/disruption/repair.go, a disruption method)
repairs a node only while the nodes of its NodePool that match a repair policy are at most 20 % of
the NodePool's nodes, rounded up (`allowed_unhealthy`); above it, a fault is taken for a
cluster-wide one (a bad AMI, a driver roll-out), not a node's, and each disruption pass publishes
a Warning event `NodeRepairBlocked` on the node ("more than 20% of nodes in nodepool "<name>" are
unhealthy") for a node past its toleration. The scenario makes a NodePool hold enough nodes (pods spread one per node),
sets the GPU condition False on one node more than the share allows, and waits until each node
carries Karpenter's event (at most PERIODS tolerations), then one toleration more, so a disruption
pass after the block is seen too: no NodeClaim of them may be deleted.
Then the incident passes on all but the share's allowance of those nodes, and Karpenter must
repair the rest (`-resumed`).
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

from e2e import karpenter, quota
from e2e.cluster import Cluster, E2EError, wait_for
from e2e.contention import holder_pod, pending_reason, quiet, workload
from e2e.gpufault import GPU_CONDITION, Clock, heal, mark_unhealthy, node_condition
from e2e.repair import (
    GPU,
    NODEPOOL_LABEL,
    REPAIRING,
    claim_of,
    create_pod,
    karpenter_said,
    remove_pods,
    repairing,
    running_node,
)
from e2e.report import Report
from e2e.stack import Stack

SHARE = "gpu-node-failure-unhealthy-share"
ALLOWED_PERCENT = 20  # disruption/repair.go repairUnhealthyThreshold
PODS = 2  # pods spread one per node: enough nodes for one more than 20 % of them
PERIODS = 4  # tolerations the block may take to show on every node
BLOCKED = "NodeRepairBlocked"
SPREAD_LABEL = "gpuplat.dev/e2e-share"


def allowed_unhealthy(nodes: int) -> int:
    """The unhealthy nodes Karpenter still repairs in a NodePool of `nodes` (20 %, rounded up:
    intstr.GetScaledValueFromIntOrPercent with roundUp)."""
    return math.ceil(nodes * ALLOWED_PERCENT / 100)


def share_target(stack: Stack) -> tuple[quota.Slot, str] | str:
    """A tenant's whole-GPU quota of at least PODS GPUs on a flavor whose NodePool may hold PODS
    nodes or more, with that NodePool's name; else why there is none."""
    sizes = {np["name"]: int(np["nodes"]) for pool in stack.plan.get("health", []) for np in pool["nodePools"]}
    found = quota.within_namespace_quota(quota.slots(stack.of_type(quota.CLUSTER_QUEUE), stack.of_type(quota.FLAVOR)),
                                         stack.of_type(quota.RESOURCE_QUOTA))
    seen = []
    for slot in sorted(found, key=lambda s: (s.tenant, s.flavor)):
        if slot.resource != GPU or slot.nominal < PODS:
            continue
        for nodepool in stack.of_type("kubernetes:karpenter.sh/v1:NodePool"):
            name = nodepool["metadata"]["name"]
            labels = nodepool["spec"]["template"].get("metadata", {}).get("labels", {})
            markets = karpenter.requirement(nodepool, "karpenter.sh/capacity-type")
            if labels.get("gpuplat.dev/pool") != slot.node_labels.get("gpuplat.dev/pool") or \
                    markets != [slot.node_labels.get("karpenter.sh/capacity-type")]:
                continue
            if sizes.get(name, 0) >= PODS:
                return slot, name
            seen.append(f"{name} ({sizes.get(name, 0)})")
    return (f"no NodePool that a tenant's whole-GPU quota of {PODS}+ GPUs reaches holds {PODS} nodes or more "
            f"(plan: {', '.join(seen) or 'none reached'}): one unhealthy node of one is within the 20 % Karpenter "
            "still repairs")


def _spread(slot: quota.Slot, name: str) -> dict[str, Any]:
    """A pod of one GPU that no other pod of the scenario shares a node with."""
    pod = holder_pod(slot, 1, name)
    pod["metadata"]["labels"][SPREAD_LABEL] = "true"
    pod["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {SPREAD_LABEL: "true"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    return pod


def _pool_nodes(cluster: Cluster, nodepool: str) -> list[str]:
    return sorted(n["metadata"]["name"] for n in cluster.items("nodes")
                  if n["metadata"].get("labels", {}).get(NODEPOOL_LABEL) == nodepool
                  and not n["metadata"].get("deletionTimestamp"))


def _blocked(cluster: Cluster, nodes: list[str]) -> dict[str, str]:
    """Karpenter's NodeRepairBlocked message per node that has one."""
    return {e["involvedObject"]["name"]: str(e.get("message")) for e in cluster.items("events")
            if e.get("reason") == BLOCKED and e.get("involvedObject", {}).get("kind") == "Node"
            and e["involvedObject"].get("name") in nodes}


def unhealthy_share(cluster: Cluster, stack: Stack, report: Report, timeout: float) -> None:
    label = stack.target.label
    if not repairing(cluster, stack, report, SHARE, "nothing is repaired anyway"):
        return
    target = share_target(stack)
    if isinstance(target, str):
        report.skip(label, SHARE, target)
        return
    slot, nodepool = target
    names = [f"share-{i}" for i in range(PODS)]
    marked: list[str] = []
    try:
        for name in names:
            create_pod(cluster, _spread(slot, name))

        def spread() -> list[str] | None:
            found = [running_node(cluster, slot.tenant, n) for n in names]
            return [n for n in found if n] if all(found) else None
        try:
            held = wait_for(spread, 2 * timeout, f"{PODS} pods of {slot.tenant} running one per node", 2.0)
        except E2EError as err:
            reasons = "; ".join(pending_reason(workload(cluster, slot.tenant, "Pod", n)) for n in names)
            report.scenario(label, SHARE, False, f"{err} in flavor {slot.flavor}: {reasons}")
            return
        _judge(cluster, report, label, nodepool, held, marked)
    finally:
        for node in marked:
            heal(cluster, node)
        remove_pods(cluster, slot.tenant, names)
        with contextlib.suppress(E2EError):
            quiet(cluster, timeout)


def _judge(cluster: Cluster, report: Report, label: str, nodepool: str, held: list[str], marked: list[str]) -> None:
    nodes = _pool_nodes(cluster, nodepool)
    allowed = allowed_unhealthy(len(nodes))
    chosen = (held + [n for n in nodes if n not in held])[:allowed + 1]
    if len(chosen) <= allowed:
        report.scenario(label, SHARE, False, f"NodePool {nodepool} has {len(nodes)} node(s): no share above "
                        f"{ALLOWED_PERCENT} % to take down")
        return
    claims = {n: str((claim_of(cluster, n) or {}).get("metadata", {}).get("name")) for n in chosen}
    report.mark()
    clock = Clock()
    for node in chosen:
        marked.append(node)
        mark_unhealthy(cluster, node)

    def repaired() -> str | None:
        for node, claim in claims.items():
            found = cluster.get("nodeclaims.karpenter.sh", claim)
            if found is None or found["metadata"].get("deletionTimestamp"):
                return f"NodeClaim {claim} of {node} deleted {clock.mark(SHARE):.0f} s after the fault"
        return None

    def settled() -> str | None:  # a repair, or Karpenter's block on every node
        return repaired() or ("blocked" if len(_blocked(cluster, chosen)) == len(chosen) else None)
    # Time passing with no repair is the outcome wanted.
    with contextlib.suppress(E2EError):
        wait_for(settled, PERIODS * karpenter.REPAIR_TOLERATION, "a repair or the block on every node", 2.0)
    with contextlib.suppress(E2EError):  # returns at once if a repair ended the first wait
        wait_for(repaired, karpenter.REPAIR_TOLERATION, "a repair", 2.0)
    waited = clock.mark(SHARE)
    deleted = repaired()
    reset = [n for n in chosen if node_condition(cluster.get("node", n), GPU_CONDITION).get("status") != "False"]
    logged = [c for c in claims.values() if karpenter_said(cluster, REPAIRING, c)]
    blocked = _blocked(cluster, chosen)
    unblocked = [n for n in chosen if n not in blocked]
    what = (f"{len(chosen)} of {len(nodes)} nodes of NodePool {nodepool} with {GPU_CONDITION} False "
            f"(more than {ALLOWED_PERCENT} %, which allows {allowed}), {waited:.0f} s waited (until the block "
            f"showed on every node, then a toleration of {karpenter.REPAIR_TOLERATION:.0f} s)")
    problems = ([deleted] if deleted else []) + \
        ([f"Karpenter logged '{REPAIRING[0]}' of reason Unhealthy for {', '.join(logged)}"] if logged else []) + \
        ([f"{GPU_CONDITION} no longer False on {', '.join(reset)}: nothing left to repair"] if reset else []) + \
        ([f"no {BLOCKED} event on {', '.join(unblocked)}"] if unblocked else [])
    said = "; ".join(sorted({f"'{m}'" for m in blocked.values()}))
    report.scenario(label, SHARE, not problems,
                    f"{what}: " + ("; ".join(problems) if problems else f"none repaired; Karpenter's {BLOCKED} on "
                                   f"each: {said}"))
    if not problems:
        _resumed(cluster, report, label, nodepool, claims, allowed)


def _resumed(cluster: Cluster, report: Report, label: str, nodepool: str, claims: dict[str, str],
             allowed: int) -> None:
    """The incident passes for all but `allowed` of the nodes (their condition cleared, as the
    agent would): the share is within 20 % again, and Karpenter repairs the rest on its next
    disruption pass (1.15 checks the share on every pass; nothing waits out a block)."""
    row = f"{SHARE}-resumed"
    healed, left = list(claims)[allowed:], list(claims)[:allowed]
    for node in healed:
        heal(cluster, node)
    clock = Clock()

    def state() -> dict[str, tuple[bool, str]]:
        """Per node left unhealthy: repaired (its NodeClaim going, Karpenter's repair logged), and how it stands."""
        found = {}
        for node in left:
            claim = cluster.get("nodeclaims.karpenter.sh", claims[node])
            said = karpenter_said(cluster, REPAIRING, claims[node])
            going = claim is None or bool(claim["metadata"].get("deletionTimestamp"))
            found[node] = (going and bool(said), said if going and said else f"NodeClaim {claims[node]} " + (
                "deleted, no repair logged" if going else "kept"))
        return found

    def repaired() -> str | None:
        found = state()
        return "; ".join(f"{n}: {said}" for n, (_, said) in found.items()) if all(
            done for done, _ in found.values()) else None
    try:
        done = wait_for(repaired, 4 * karpenter.REPAIR_TOLERATION, "a repair once the share is within 20 %", 2.0)
    except E2EError as err:
        report.scenario(label, row, False, f"{', '.join(healed)} healed, {', '.join(left)} still unhealthy in NodePool "
                        f"{nodepool} ({len(left)} allowed): {err}: {'; '.join(said for _, said in state().values())}")
        return
    report.scenario(label, row, True, f"{', '.join(healed)} healed, leaving {len(left)} unhealthy node(s) of NodePool "
                    f"{nodepool} (the {ALLOWED_PERCENT} % allows {allowed}): repaired {clock.mark(row):.0f} s later: "
                    f"{done}")
