"""The repair table of the pull-request comment: what replaces each pool's failed nodes.

Read from the plan JSON's `health` on both sides (a base planner without it gives none), so a
change of a pool's repair or spare nodes shows before and after with the spares' monthly cost.
Nothing is printed when neither side has it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from ._templates import block, md_table, render

Json = dict[str, Any]


def _by_pool(plan: Json | None) -> dict[str, Json]:
    items = cast("list[Json]", (plan or {}).get("health") or [])
    return {str(h["pool"]): h for h in items}


def _cells(h: Json | None) -> tuple[str, str, str, str]:
    if h is None:
        return "-", "-", "-", "-"
    node_pools = cast("list[Json]", h.get("nodePools") or [])
    at_once = ", ".join(f"{n['name']}: {n['repairedAtOnce']} of {n['nodes']}" for n in node_pools) or "-"
    spare_usd = h.get("spareMonthlyUsd")
    cost = f"${spare_usd:,.0f}" if isinstance(spare_usd, int | float) and spare_usd else "-"
    return str(h.get("repair")), at_once, str(h.get("spareNodes", 0)), cost


def health_section(head: Json, base: Json | None) -> str:
    """The comment's Repair section, "" when neither side has one."""
    now, before = _by_pool(head), _by_pool(base)
    if not now and not before:
        return ""
    rows: list[Sequence[str]] = []
    for pool in [*now, *(p for p in before if p not in now)]:
        after_cells, before_cells = _cells(now.get(pool)), _cells(before.get(pool))
        if base is None:
            rows.append([pool, *after_cells])
        else:
            pairs = zip(before_cells, after_cells, strict=True)
            rows.append([pool, *(a if a == b else f"{b} → {a}" for b, a in pairs)])
    header = ["pool", "repair", "repaired at once (per NodePool)", "spare nodes", "spare per month"]
    return render("comment_health.md.j2", compared=base is not None, table=block(md_table(header, rows)))
