"""`gpuplat preview --format markdown`: the pull-request comment.

It leads with what blocks the merge (refused changes, broken journeys, mandatory policy
violations; comment_summary.py), then the change in one line, the monthly cost delta and the
per-pool capacity and market changes, then the details: resource changes (or, without --base,
resources by component), the reference workloads' fit (comment_workloads.py), policy results,
`gpuplat verify`'s journeys (when given) and a mermaid diagram of the platform.

The numbers come from the plan JSON (`gpuplat plan --format json`) on both sides. The head's is built
here; the base's is gathered by the preview command (commands/base.py: the running compiler on the
base commit's files, or the base checkout's own planner), as are the policy results and verify's
section. Pools whose markets moved with no change of their own are explained (render/plan_delta.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from gpuplat.model import Platform
from gpuplat.plan.types import Plan
from gpuplat.preview import RecordedResource
from gpuplat.preview.diff import OPS, Change
from gpuplat.vocabulary import MARKET_ORDER

from ._templates import block, md_table, render
from .charts import capacity_chart
from .comment_fleet import fleet_section
from .comment_health import health_section
from .comment_summary import blockers, lead, resources_section
from .comment_workloads import workloads_section
from .graph import platform_mermaid
from .plan import plan_json
from .plan_delta import PlanResult as PlanResult
from .plan_delta import plan_delta

Json = dict[str, Any]
MARKETS = tuple((m.procurement_key, m.value) for m in MARKET_ORDER)  # (plan JSON key, market)
SERVICES_LABEL = "services (control plane, system nodes, network, storage, keys)"
_DETAILS_OVER = 25  # past this many rows the table folds away, keeping cost and policy in view


class ViolationLike(Protocol):
    @property
    def policy(self) -> str: ...
    @property
    def level(self) -> str: ...
    @property
    def urn(self) -> str: ...
    @property
    def message(self) -> str: ...


@dataclass(frozen=True)
class PolicyResult:
    violations: Sequence[ViolationLike] | None
    note: str | None = None


@dataclass(frozen=True)
class Report:
    stack: str
    model: Platform
    plan: Plan
    resources: Sequence[RecordedResource]
    changes: Sequence[Change] | None
    base_ref: str | None
    base_plan: PlanResult | None
    policy: PolicyResult
    allow_replace: bool = False
    verify: str | None = None  # `gpuplat verify`'s markdown section, when computed
    broken_journeys: Sequence[str] | None = None  # verify's broken journeys; None: not verified


# ---- formatting ---------------------------------------------------------------------------------


_table = md_table


def usd(value: float) -> str:
    return f"-${-value:,.2f}" if value < 0 else f"${value:,.2f}"


def usd_delta(value: float) -> str:
    return "±$0.00" if round(value, 2) == 0 else ("+" if value > 0 else "") + usd(value)


def _arrow(before: object, after: object) -> str:
    return str(after) if before == after else f"{before} → {after}"


# ---- sections ---------------------------------------------------------------------------------


def _change_row(c: Change) -> list[str]:
    fields = ", ".join(
        f"`{f.path}`"
        + ((f" (forces replacement: {f.note})" if f.note else " (forces replacement)") if f.replaces else "")
        for f in c.fields
    )
    if c.blocked:
        return [f"**{c.op}** ⛔", f"**`{c.name}`** (refused by AWS)", f"`{c.type}`", fields]
    if c.destroys:
        return [f"**{c.op}** ⚠️", f"**`{c.name}`** (destroys data)", f"`{c.type}`", fields]
    if c.refused:
        return [f"**{c.op}** ⚠️", f"**`{c.name}`** (stateful)", f"`{c.type}`", fields]
    return [c.op, f"`{c.name}`", f"`{c.type}`", fields]


def _changes_section(changes: Sequence[Change], head_count: int, allow_replace: bool) -> str:
    counts = Counter(c.op for c in changes)
    unchanged = head_count - sum(c.op != "delete" for c in changes)
    rows = [_change_row(c) for c in changes]
    return render(
        "comment_changes.md.j2",
        counts=block(_table([*OPS, "unchanged"], [[*(counts.get(op, 0) for op in OPS), unchanged]], right=5)),
        blocked=[(c, reason) for c in changes for reason in c.blocked],
        refused=[c for c in changes if c.refused],
        drains=[c for c in changes if c.drains],
        releases=[c for c in changes if c.releases],
        allow_replace=allow_replace,
        table=block(_table(["op", "resource", "type", "changed fields"], rows)) if rows else None,
        rows=len(rows),
        folded=len(rows) > _DETAILS_OVER,
    )


def _pool_markets(plan: Json) -> dict[str, dict[str, tuple[int, int]]]:
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for pool in cast("list[Json]", plan.get("pools") or []):
        markets = cast("Json", pool.get("markets") or {})
        out[str(pool["name"])] = {
            key: (int(markets.get(key, {}).get("nodes", 0)), int(markets.get(key, {}).get("gpus", 0)))
            for key, _ in MARKETS
        }
    return out


def _market_rows(head: Json, base: Json | None) -> list[list[str]]:
    now = _pool_markets(head)
    before = _pool_markets(base) if base is not None else None
    rows: list[list[str]] = []
    for pool in [*now, *(p for p in (before or {}) if p not in now)]:
        after_m = now.get(pool)
        before_m = before.get(pool) if before is not None else None
        label = (
            pool + (" (new)" if before is not None and before_m is None else "") + (" (removed)" if not after_m else "")
        )
        for key, market in MARKETS:
            a = after_m[key] if after_m else (0, 0)
            b = before_m[key] if before_m else (0, 0)
            if a == b == (0, 0):
                continue
            if before is None:
                rows.append([label, market, str(a[0]), str(a[1])])
            else:
                rows.append([label, market, _arrow(b[0], a[0]), _arrow(b[1], a[1])])
    return rows


def _owned(plan: Json) -> bool:
    """Nodes the team already owns (provider kubernetes): no pool buys in any market."""
    return not any(pool.get("allowedMarkets") for pool in cast("list[Json]", plan.get("pools") or []))


def _pool_rows(head: Json, base: Json | None) -> list[list[str]]:
    """Nodes and GPUs of each pool at max size, for nodes that are owned rather than bought."""

    def sizes(plan: Json) -> dict[str, tuple[int, int]]:
        pools = cast("list[Json]", plan.get("pools") or [])
        return {str(p["name"]): (int(p["nodes"]["max"]), int(p["nodes"]["max"]) * int(p["gpusPerNode"])) for p in pools}

    now, before = sizes(head), sizes(base) if base is not None else None
    rows: list[list[str]] = []
    for pool in [*now, *(p for p in (before or {}) if p not in now)]:
        if before is None:
            rows.append([pool, str(now[pool][0]), str(now[pool][1])])
            continue
        label = pool + (" (new)" if pool not in before else "") + (" (removed)" if pool not in now else "")
        a, b = now.get(pool, (0, 0)), before.get(pool, (0, 0))
        rows.append([label, _arrow(b[0], a[0]), _arrow(b[1], a[1])])
    return rows


def _fleet_row(head: Json, base: Json | None) -> list[str]:
    fleet_now = cast("Json", head.get("fleet") or {})
    fleet_before = cast("Json", (base or {}).get("fleet") or {})
    totals = [
        _arrow(
            cast("Json", fleet_before.get("markets") or {}).get(k, 0),
            cast("Json", fleet_now.get("markets") or {}).get(k, 0),
        )
        if base
        else str(cast("Json", fleet_now.get("markets") or {}).get(k, 0))
        for k, _ in MARKETS
    ]
    gpus = _arrow(fleet_before.get("gpus"), fleet_now.get("gpus")) if base else str(fleet_now.get("gpus"))
    return [gpus, *totals]


def _capacity_section(head: Json, base: Json | None) -> str:
    storage = _storage_rows(head, base)
    knock_on = cast("list[Json]", plan_delta(head, base)["knockOn"]) if base else []
    if _owned(head):  # no markets to split the pools into: each pool's nodes and GPUs, and the fleet's
        pools = _table(["pool", "nodes", "GPUs"], _pool_rows(head, base), right=2)
        fleet = _table(["fleet GPUs"], [_fleet_row(head, base)[:1]], right=1)
    else:
        pools = _table(["pool", "market", "nodes", "GPUs"], _market_rows(head, base), right=2)
        fleet = _table(["fleet GPUs", *(m for _, m in MARKETS)], [_fleet_row(head, base)], right=3)
    return render(
        "comment_capacity.md.j2",
        knock_on=[str(k["message"]) for k in knock_on],
        compared=bool(base),
        chart=capacity_chart(head, base, MARKETS) if base and not _owned(head) else None,
        owned=_owned(head),
        pools=block(pools),
        fleet=block(fleet),
        storage=block(_table(["storage tier", "capacity"], storage, right=1)) if storage else None,
    )


def _tier_sizes(plan: Json | None) -> dict[str, str]:
    storage = cast("Json", (plan or {}).get("storage") or {})
    hot, warm = cast("Json | None", storage.get("hot")), cast("Json | None", storage.get("warm"))
    sizes: dict[str, str] = {}
    if hot:
        sizes["hot"] = f"{hot.get('capacityGiB')} GiB"
        standard = cast("Json | None", hot.get("standard"))
        if standard:  # the second file system the plan adds for standard tenants (aws)
            sizes["hot (standard)"] = f"{standard.get('capacityGiB')} GiB"
    if warm:
        sizes["warm"] = f"{warm.get('capacityTiB')} TiB"
    return sizes


def _storage_rows(head: Json, base: Json | None) -> list[list[str]]:
    now, before = _tier_sizes(head), _tier_sizes(base)
    if base is None:
        return [[tier, size] for tier, size in now.items()]
    tiers = [*now, *(t for t in before if t not in now)]
    return [[tier, _arrow(before.get(tier, "none"), now.get(tier, "none"))] for tier in tiers]


def _cost(plan: Json | None) -> Json | None:
    return cast("Json | None", plan.get("cost")) if plan else None


def _pool_costs(cost: Json) -> dict[str, float]:
    return {
        str(p["name"]): sum(float(v) for v in cast("Json", p.get("monthlyUsd") or {}).values())
        for p in cast("list[Json]", cost.get("pools") or [])
    }


def _services(cost: Json | None) -> float | None:
    """Monthly USD of the services beside the GPU nodes; None from a planner that did not price them."""
    value = cost.get("servicesMonthlyUsd") if cost else None
    return float(value) if isinstance(value, int | float) else None


def _service_rows(now: Json, before: Json | None) -> list[list[str]]:
    """Services and GPU + services, base -> head (a base without them shows `-`)."""
    s_now, s_before = _services(now), _services(before)
    if s_now is None:
        return []
    t_now = float(now["monthlyUsd"]) + s_now
    label = SERVICES_LABEL
    if before is None:
        return [[label, usd(s_now)], ["GPU + services", usd(t_now)]]
    if s_before is None:
        return [[label, "-", usd(s_now), ""], ["GPU + services", "-", usd(t_now), ""]]
    t_before = float(before["monthlyUsd"]) + s_before
    return [
        [label, usd(s_before), usd(s_now), usd_delta(s_now - s_before)],
        ["GPU + services", usd(t_before), usd(t_now), usd_delta(t_now - t_before)],
    ]


def _cost_table(now: Json, before: Json | None) -> str:
    if before is None:
        rows = [
            ["GPU total", usd(float(now["monthlyUsd"]))],
            ["all on-demand", usd(float(now["allOnDemandMonthlyUsd"]))],
            ["savings", f"{now['savingsPercent']} %"],
            *_service_rows(now, None),
        ]
        return _table(["", "USD / month"], rows, right=1)
    total_now, total_before = float(now["monthlyUsd"]), float(before["monthlyUsd"])
    delta = round(total_now - total_before, 2)
    pct = f" ({100 * delta / total_before:+.1f} %)" if total_before and delta else ""
    rows = [["**GPU total**", usd(total_before), usd(total_now), f"**{usd_delta(delta)}**{pct}"]]
    pools_now, pools_before = _pool_costs(now), _pool_costs(before)
    for pool in [*pools_now, *(p for p in pools_before if p not in pools_now)]:
        a, b = pools_now.get(pool, 0.0), pools_before.get(pool, 0.0)
        rows.append([pool, usd(b), usd(a), usd_delta(a - b)])
    on_demand_now, on_demand_before = float(now["allOnDemandMonthlyUsd"]), float(before["allOnDemandMonthlyUsd"])
    rows.append(
        ["all on-demand", usd(on_demand_before), usd(on_demand_now), usd_delta(on_demand_now - on_demand_before)]
    )
    rows.append(["savings", f"{before['savingsPercent']} %", f"{now['savingsPercent']} %", ""])
    rows.extend(_service_rows(now, before))
    return _table(["", "base", "head", "delta"], rows, right=3)


def _estimates(cost: Json) -> list[str]:
    """Every price of the head's plan that is not a list price of its region, with the reason."""
    pools = [
        f"pool {p['name']}: {p['priceEstimated']}"
        for p in cast("list[Json]", cost.get("pools") or [])
        if p.get("priceEstimated")
    ]
    services = [
        f"{s['item']}: {s['estimated']}" for s in cast("list[Json]", cost.get("services") or []) if s.get("estimated")
    ]
    return pools + services


def _cost_section(head: Json, base: Json | None) -> str:
    now, before = _cost(head), _cost(base)
    table = None if now is None else _cost_table(now, before if base is not None else None)
    assumptions = cast("list[Json]", (now or {}).get("assumptions") or [])
    return render(
        "comment_cost.md.j2",
        table=None if table is None else block(table),
        assumptions=assumptions,
        region=(now or {}).get("region"),
        base_region=(before or {}).get("region") if base is not None else None,
        estimates=_estimates(now) if now else [],
    )


def _policy_section(policy: PolicyResult) -> str:
    violations = policy.violations
    rows = [
        [f"**{v.level}**" if v.level == "mandatory" else v.level, v.policy, f"`{v.urn.rpartition('::')[2]}`", v.message]
        for v in sorted(violations or (), key=lambda v: (v.level != "mandatory", v.policy, v.urn))
    ]
    return render(
        "comment_policy.md.j2",
        violations=violations,
        note=policy.note,
        mandatory=sum(v.level == "mandatory" for v in violations or ()),
        table=block(_table(["level", "policy", "resource", "message"], rows)),
    )


def render_markdown(report: Report) -> str:
    head_plan = plan_json(report.model, report.plan)
    result = report.base_plan or PlanResult(None, "the base plan was not computed")
    base = result.plan if report.changes is not None else None
    if report.changes is not None:
        changes = _changes_section(report.changes, len(report.resources), report.allow_replace)
    else:
        changes = resources_section(report.resources)
    diagram = "```mermaid\n" + platform_mermaid(report.model, report.plan) + "```"
    return render(
        "comment.md.j2",
        stack=report.stack,
        base_ref=report.base_ref,
        blockers=blockers(report.changes, report.allow_replace, report.broken_journeys, report.policy.violations),
        lead=lead(report.resources, report.changes, (_cost(head_plan), _cost(base)), report.policy.violations),
        changes=block(changes),
        base_note=result.note if report.changes is not None and base is None else None,
        base_compiler=result.compiler if report.changes is not None and base is not None else None,
        version_note=result.version_note if report.changes is not None else None,
        capacity=block(_capacity_section(head_plan, base)),
        fleet=fleet_section(head_plan, base),
        workloads=block(workloads_section(head_plan, base)),
        health=block(health_section(head_plan, base)),
        cost=block(_cost_section(head_plan, base)),
        policy=block(_policy_section(report.policy)),
        verify=None if report.verify is None else block(report.verify),
        diagram=diagram,
    )
