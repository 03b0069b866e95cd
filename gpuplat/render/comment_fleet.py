"""The fleet in the pull-request comment: what a change of any member does to the fleet.

Both sides are plan JSON documents (`clusterFleet`, render/plan_fleet.py), so a pull request
that edits one member's spec shows, on every member's comment, the members' GPUs and cost, the
dispatch order and each tenant's combined quota before and after. Nothing when neither side has
a fleet.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from ._templates import md_table

Json = dict[str, Any]


def _fleet(plan: Json | None) -> Json | None:
    return cast("Json | None", (plan or {}).get("clusterFleet"))


def _usd(value: Any) -> str:
    return "-" if value is None else f"${float(value):,.0f}"


def _quota(units: Mapping[str, Any] | None) -> str:
    return ", ".join(f"{v} {k}" for k, v in sorted((units or {}).items())) or "-"


def _arrow(before: str, after: str) -> str:
    return after if before == after else f"{before} → {after}"


def fleet_section(head: Json, base: Json | None) -> str | None:
    now, before = _fleet(head), _fleet(base)
    if now is None and before is None:
        return None
    now_members = {str(m["name"]): m for m in cast("list[Json]", (now or {}).get("members") or [])}
    old_members = {str(m["name"]): m for m in cast("list[Json]", (before or {}).get("members") or [])}
    rows: list[list[str]] = []
    for name in [*now_members, *(n for n in old_members if n not in now_members)]:
        a, b = now_members.get(name, {}), old_members.get(name, {}) if base is not None else now_members.get(name, {})
        position = _arrow(
            str(b.get("dispatchPosition") or b.get("role") or "-"),
            str(a.get("dispatchPosition") or a.get("role") or "-"),
        )
        gpus = _arrow(str(b.get("gpus", "-")), str(a.get("gpus", "-")))
        rows.append([name, position, gpus, _arrow(_usd(b.get("monthlyUsd")), _usd(a.get("monthlyUsd")))])
    members = md_table(["member", "order", "GPUs", "monthly"], rows, right=2)
    now_tenants = {str(t["name"]): t for t in cast("list[Json]", (now or {}).get("tenants") or [])}
    old_tenants = {str(t["name"]): t for t in cast("list[Json]", (before or {}).get("tenants") or [])}
    tenant_rows: list[list[str]] = []
    for name in [*now_tenants, *(n for n in old_tenants if n not in now_tenants)]:
        a, b = now_tenants.get(name, {}), old_tenants.get(name, {}) if base is not None else now_tenants.get(name, {})
        order = _arrow(" > ".join(b.get("workers") or []) or "-", " > ".join(a.get("workers") or []) or "-")
        tenant_rows.append([name, order, _arrow(_quota(b.get("combinedQuota")), _quota(a.get("combinedQuota")))])
    tenants = md_table(["tenant", "dispatch order", "combined quota"], tenant_rows)
    name = str((now or before or {}).get("name"))
    changed = base is not None and now != before
    lead = f"### Fleet `{name}`" + (" (changed by this pull request)" if changed else "")
    return "\n\n".join([lead, members, tenants])
