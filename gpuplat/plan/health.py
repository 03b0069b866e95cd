"""Repair on failure, per pool: what replaces a failed node, how many at once, and the spares.

Karpenter's node repair (karpenter 1.15 pkg/controllers/disruption/repair.go) replaces a node
(or, with `repair: reboot`, reboots it in place for a reboot-clearable GPU fault) whose health
condition stayed bad past the AWS provider's toleration time, unless more of
its NodePool's nodes are unhealthy than 20 % of them, rounded up (intstr scaled with roundUp;
a NodePool of 1 to 5 nodes may then have 1 unhealthy node repaired, of 6 to 10 nodes 2): more
than that is taken for a fault of the zone or the image, not of nodes, and nothing is repaired.
The limit is fixed in Karpenter and counted per NodePool, and gpuplat splits a pool into one
NodePool per market, so the plan states it per NodePool at max size.

Spare nodes (`health.spareNodes`) are reserved slots beyond the reserved share: added to the
pool's reservations (procurement.py) and the reserved NodePool's limit (capacity.py), never to
a quota, so a replacement launches into the reservation while the failed node still holds its
own slot. They are paid like the reserved nodes, all month (cost.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from gpuplat.model import Market, Platform, Repair
from gpuplat.plan.types import CostPlan, NodePoolPlan, NodeRepairLimit, PoolHealthPlan

UNHEALTHY_SHARE_PERCENT = 20  # karpenter repairUnhealthyThreshold


def repairable_at_once(nodes: int) -> int:
    """Unhealthy nodes of a NodePool of `nodes` that Karpenter still repairs (20 %, rounded up)."""
    return math.ceil(nodes * UNHEALTHY_SHARE_PERCENT / 100)


def plan_health(
    model: Platform, node_pools: Sequence[NodePoolPlan], cost: CostPlan | None
) -> tuple[PoolHealthPlan, ...]:
    costs = {c.pool: c for c in cost.pools} if cost is not None else {}
    out: list[PoolHealthPlan] = []
    for pool in model.pools:
        limits = tuple(
            NodeRepairLimit(n.name, n.nodes, repairable_at_once(n.nodes))
            for n in node_pools
            if n.pool == pool.name and pool.health.repair is not Repair.NONE
        )
        priced = costs.get(pool.name)
        out.append(
            PoolHealthPlan(
                pool=pool.name,
                repair=pool.health.repair,
                spare_nodes=pool.health.spare_nodes,
                node_pools=limits,
                spare_monthly_usd=priced.spare_monthly_usd if priced is not None else None,
            )
        )
    return tuple(out)


def spare_nodes(model: Platform, pool_name: str, market: Market) -> int:
    """The spare nodes a pool's `market` holds: only its reserved market holds any."""
    if market is not Market.RESERVED:
        return 0
    return next(p.health.spare_nodes for p in model.pools if p.name == pool_name)
