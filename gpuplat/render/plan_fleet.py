"""The fleet in the plan (gpuplat/fleet/plan.py): the JSON `clusterFleet` document and the text
section. The key is not `fleet`, which the plan already uses for this platform's GPUs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gpuplat.plan.fleet_types import FleetPlan

Table = Callable[[Sequence[str], Sequence[Sequence[str]], frozenset[int]], str]


def fleet_json(fleet: FleetPlan) -> dict[str, Any]:
    return fleet.to_json()


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${value:,.0f}"


def _units(units: dict[str, int] | Any) -> str:
    return ", ".join(f"{count} {resource}" for resource, count in sorted(units.items())) or "-"


def fleet_text(fleet: FleetPlan, table: Table) -> str:
    members = [
        [
            str(m.position) if m.position is not None else "manager",
            m.name,
            m.stack,
            m.provider or "?",
            "?" if m.gpus is None else str(m.gpus),
            _usd(m.monthly_usd) if m.source else "unknown",
            m.source or "not readable offline",
        ]
        for m in fleet.members
    ]
    lines = [
        f"Fleet {fleet.name}: tenants submit to LocalQueue {fleet.queue} on {fleet.manager}; "
        "Kueue tries the workers one at a time in order",
        table(["order", "member", "stack", "provider", "GPUs", "monthly", "spec"], members, frozenset({4, 5})).rstrip(),
        "",
        "Fleet quota per tenant (the manager's queue: the sum of its nominal quotas on the workers)",
    ]
    rows: list[list[str]] = []
    for reach in fleet.tenants:
        per = "; ".join(f"{w}: {_units(reach.per_worker.get(w, {}))}" for w in reach.workers if w not in reach.unknown)
        unknown = f" (+ unknown: {', '.join(reach.unknown)})" if reach.unknown else ""
        rows.append([reach.tenant, " > ".join(reach.workers) or "-", _units(reach.combined) + unknown, per or "-"])
    lines.append(table(["tenant", "dispatch order", "combined", "per worker"], rows, frozenset()).rstrip())
    priced = [m for m in fleet.members if m.monthly_usd is not None]
    lines.append(
        f"Priced members' monthly cost: {_usd(fleet.known_monthly_usd)} "
        f"({', '.join(m.name for m in priced) or 'none'}; on-prem members own their hardware)"
    )
    return "\n".join(lines)
