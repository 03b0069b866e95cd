"""The cost plan as JSON (`cost`) and as the text section of `gpuplat plan`.

JSON `cost`: the GPU numbers (`monthlyUsd`, `allOnDemandMonthlyUsd`, `savingsPercent`, ...,
`region` the prices are for and `pricesSource`, `pools` with each pool's `reservedKind`,
`reservedHourlyUsd`, `priceEstimated` (null, or why its price is not the region's list price) and
`reservedPriceNote` (a Capacity Block rate's age), `spareMonthlyUsd` (the spare nodes held for
repairs, `health.spareNodes`, at the reserved rate; in every total)), `services` [{item, quantity, unit, unitUsd,
monthlyUsd (null: a rate only), source, asOf, region, estimated}], `servicesMonthlyUsd`,
`totalMonthlyUsd` (GPU + services) and `assumptions` [{name, text, rate, source}]: every price
the plan assumes rather than reads off a list, by name. `capacityBlocks` (top level) lists the
reserved nodes held in Capacity Blocks an operator bought.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gpuplat.catalog.capacity_blocks import BLOCK_END_NOTE
from gpuplat.model import MARKET_ORDER, Market
from gpuplat.plan.types import CostPlan, Plan

Json = dict[str, Any]
_MARK = " (est.)"  # beside a price that is not the spec's region's list price
Table = Callable[[Sequence[str], Sequence[Sequence[str]], frozenset[int]], str]


def _num(value: float, digits: int = 2) -> int | float:
    rounded = round(value, digits)
    return int(rounded) if rounded == int(rounded) else rounded


def _rate(value: float) -> str:
    return f"{value:.5f}".rstrip("0").rstrip(".")


def _usd(value: float) -> str:
    return f"${value:,.0f}"


def _by_market(values: Mapping[Market, float]) -> Json:
    return {m.procurement_key: _num(values.get(m, 0.0)) for m in MARKET_ORDER}


def cost_json(cost: CostPlan | None) -> Json | None:
    if cost is None:
        return None
    return {
        "monthlyUsd": _num(cost.monthly_usd),
        "allOnDemandMonthlyUsd": _num(cost.all_on_demand_monthly_usd),
        "savingsPercent": _num(cost.savings_percent),
        "minSizeMonthlyUsd": _num(cost.min_size_monthly_usd),
        "pricesAsOf": cost.prices_as_of,
        "region": cost.region,
        "pricesSource": cost.prices_source,
        "hoursPerMonth": _num(cost.hours_per_month),
        "spotDiscount": cost.spot_discount,
        "reservedDiscount": cost.reserved_discount,
        "pools": [
            {
                "name": p.pool,
                "onDemandHourlyUsd": _num(p.on_demand_hourly_usd, 4),
                "monthlyUsd": _by_market(p.monthly_usd),
                "allOnDemandMonthlyUsd": _num(p.all_on_demand_monthly_usd),
                "minSizeMonthlyUsd": _num(p.min_size_monthly_usd),
                "reservedKind": p.reserved_kind,
                "reservedHourlyUsd": _num(p.reserved_hourly_usd, 4),
                "priceEstimated": p.price_estimated or None,
                "reservedPriceNote": p.reserved_price_note or None,
                "spareMonthlyUsd": _num(p.spare_monthly_usd),
            }
            for p in cost.pools
        ],
        "services": [
            {
                "item": s.item,
                "quantity": _num(s.quantity),
                "unit": s.unit,
                "unitUsd": s.unit_usd,
                "monthlyUsd": None if s.monthly_usd is None else _num(s.monthly_usd),
                "source": s.source,
                "asOf": s.as_of,
                "region": s.region,
                "estimated": s.estimated or None,
            }
            for s in cost.services
        ],
        "servicesMonthlyUsd": _num(cost.services_monthly_usd),
        "totalMonthlyUsd": _num(cost.total_monthly_usd),
        "assumptions": [{"name": a.name, "text": a.text, "rate": a.rate, "source": a.source} for a in cost.assumptions],
    }


def capacity_blocks_json(plan: Plan) -> list[Json]:
    return [
        {"pool": b.pool, "instanceType": b.instance_type, "nodes": b.nodes, "ids": list(b.ids), "tags": dict(b.tags)}
        for b in plan.capacity_blocks
    ]


def _gpu_table(c: CostPlan, table: Table) -> str:
    # A column for the spare nodes held for repairs only when a pool holds some.
    spares = any(p.spare_monthly_usd for p in c.pools)
    rows = [
        [
            p.pool,
            f"{p.on_demand_hourly_usd:.4f}{_MARK if p.price_estimated else ''}",
            *(_usd(p.monthly_usd[m]) if m in p.monthly_usd else "-" for m in MARKET_ORDER),
            *([_usd(p.spare_monthly_usd) if p.spare_monthly_usd else "-"] if spares else []),
            _usd(sum(p.monthly_usd.values()) + p.spare_monthly_usd),
            _usd(p.all_on_demand_monthly_usd),
            _usd(p.min_size_monthly_usd),
        ]
        for p in c.pools
    ]
    totals = [sum(p.monthly_usd.get(m, 0.0) for p in c.pools) for m in MARKET_ORDER]
    if spares:
        totals.append(sum(p.spare_monthly_usd for p in c.pools))
    rows.append(
        [
            "total",
            "",
            *(_usd(t) for t in totals),
            _usd(c.monthly_usd),
            _usd(c.all_on_demand_monthly_usd),
            _usd(c.min_size_monthly_usd),
        ]
    )
    markets = [m.value for m in MARKET_ORDER] + (["spare"] if spares else [])
    return table(
        ["pool", "$/node-h", *markets, "total", "all on-demand", "at min size"],
        rows,
        frozenset(range(1, 8 + spares)),
    )


def _services_table(c: CostPlan, table: Table) -> str:
    rows = [
        [
            s.item + (_MARK if s.estimated else ""),
            f"{s.quantity:,.0f} {s.unit}" if s.monthly_usd is not None else "-",
            f"${_rate(s.unit_usd)}/{s.unit}",
            _usd(s.monthly_usd) if s.monthly_usd is not None else "rate only",
            f"{s.as_of} {s.region} {s.source}",
        ]
        for s in c.services
    ]
    rows.append(["services total", "", "", _usd(c.services_monthly_usd), ""])
    return table(["service", "quantity", "list price", "per month", "as of, region, source"], rows, frozenset({1, 3}))


def _estimated_head(c: CostPlan) -> str:
    if any(p.price_estimated for p in c.pools) or any(s.estimated for s in c.services):
        return f" (those marked{_MARK} are not {c.region} list prices, see below)"
    return ""


def _estimates(c: CostPlan) -> str:
    """One line per price that is not a list price of the spec's region, saying whose it is."""
    mark = _MARK.strip()
    out = [f"{mark} pool {p.pool}: {p.price_estimated}\n" for p in c.pools if p.price_estimated]
    out += [f"{mark} {s.item}: {s.estimated}\n" for s in c.services if s.estimated]
    out += [f"pool {p.pool} reserved: {p.reserved_price_note}\n" for p in c.pools if p.reserved_price_note]
    return "".join(out)


def cost_text(plan: Plan, table: Table) -> str:
    c = plan.cost
    if c is None:
        return "Cost: none (provider kubernetes owns its nodes)\n"
    head = (
        f"Cost, USD per month ({c.hours_per_month:g} h), every pool at max size all month; "
        f"{c.region} prices as of {c.prices_as_of}{_estimated_head(c)}, spot -{100 * c.spot_discount:g} %, "
        f"reserved -{100 * c.reserved_discount:g} % (assumed, see below)\n"
    )
    out = head + _gpu_table(c, table) + f"savings against all on-demand: {c.savings_percent:.1f} %\n"
    if c.services:
        out += f"\nServices beside the GPU nodes (list prices for {c.region})\n" + _services_table(c, table)
    out += _estimates(c)
    gpu, services = _usd(c.monthly_usd), _usd(c.services_monthly_usd)
    out += f"total per month: {_usd(c.total_monthly_usd)} (GPU {gpu} + services {services})\n"
    for a in c.assumptions:
        rate = f" ({100 * a.rate:g} %)" if a.rate else ""
        out += f"assumption {a.name}{rate}: {a.text} ({a.source})\n"
    return out


def capacity_blocks_text(plan: Plan, table: Table) -> str:
    if not plan.capacity_blocks:
        return ""
    rows = [
        [
            b.pool,
            b.instance_type,
            str(b.nodes),
            ", ".join(b.ids) or "-",
            ", ".join(f"{k}={v}" for k, v in b.tags.items()) or "-",
        ]
        for b in plan.capacity_blocks
    ]
    return (
        "Capacity Blocks (bought by an operator, selected, never created by gpuplat)\n"
        + table(["pool", "instance", "nodes", "ids", "tags"], rows, frozenset({2}))
        + f"note: {BLOCK_END_NOTE}\n"
    )
