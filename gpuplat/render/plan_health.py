"""Repair on failure in the plan: the JSON `health` list and the text section.

JSON `health`: per pool {pool, repair (replace | reboot | none), spareNodes, spareMonthlyUsd (null on
provider kubernetes), nodePools [{name, nodes, repairedAtOnce}]}: Karpenter's repair limit per
NodePool at max size; more unhealthy nodes than `repairedAtOnce` and none is repaired
(gpuplat/plan/health.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gpuplat.model import Repair
from gpuplat.plan.types import Plan, PoolHealthPlan

Json = dict[str, Any]
Table = Callable[[Sequence[str], Sequence[Sequence[str]], frozenset[int]], str]


def health_json(plan: Plan) -> list[Json]:
    return [
        {
            "pool": h.pool,
            "repair": h.repair.value,
            "spareNodes": h.spare_nodes,
            "spareMonthlyUsd": None if h.spare_monthly_usd is None else round(h.spare_monthly_usd, 2),
            "nodePools": [{"name": n.node_pool, "nodes": n.nodes, "repairedAtOnce": n.at_once} for n in h.node_pools],
        }
        for h in plan.health
    ]


def repair_words(h: PoolHealthPlan) -> str:
    """One pool's repair for a reader: what replaces a failed node and how many at once."""
    if not h.node_pools:
        return "none (an operator repairs)"
    limits = ", ".join(f"{n.node_pool} {n.at_once} of {n.nodes}" for n in h.node_pools)
    if h.repair is Repair.REBOOT:
        return f"reboot a reboot-clearable GPU fault, else replace; repaired at once: {limits}"
    return f"replace; repaired at once: {limits}"


def health_text(plan: Plan, table: Table) -> str | None:
    if not plan.health:
        return None
    rows = [
        [
            h.pool,
            repair_words(h),
            str(h.spare_nodes),
            f"${h.spare_monthly_usd:,.0f}" if h.spare_monthly_usd else "-",
        ]
        for h in plan.health
    ]
    return table(["pool", "repair of a failed node", "spare nodes", "spare per month"], rows, frozenset({2, 3}))
