"""Cost: monthly USD per pool and market, against an all-on-demand fleet.

    monthly(pool, market) = nodes x on-demand hourly x HOURS_PER_MONTH x (1 - discount)

discount: 0 on-demand, spotDiscount for spot, reservedDiscount for reserved. Spec values
(`procurement.prices`) win over the catalog, per instance type and per discount.
The headline assumes every pool runs at max size all month: the split sizes capacity for
max, and reserved capacity is paid whether it runs or not. The min-size figure is the floor:
the reserved nodes in full plus the rest of `nodes.min` on on-demand, where the capacity floor
keeps them (its placeholders never run on spot, which could take the minimum away; Karpenter
fills reservations first). Minimum nodes beyond the pool's reserved and on-demand nodes are not
held (GP353) and cost nothing here.
savings percent = (1 - monthly / all on-demand) x 100.
A pool whose instance type has no price is an error (GP232) at its instanceType.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gpuplat.catalog.prices import (
    HOURS_PER_MONTH,
    ON_DEMAND_HOURLY_USD,
    PRICES_AS_OF,
    RESERVED_DISCOUNT,
    SPOT_DISCOUNT,
)
from gpuplat.model import MARKET_ORDER, Market, Platform
from gpuplat.plan.codes import PROCUREMENT_PRICE_MISSING
from gpuplat.plan.types import CostPlan, MarketShare, PlanFinding, PoolCost


def hourly_price(model: Platform, instance_type: str) -> float | None:
    assert model.procurement is not None
    spec = model.procurement.prices.on_demand_hourly
    return spec.get(instance_type, ON_DEMAND_HOURLY_USD.get(instance_type))


def missing_prices(model: Platform) -> tuple[PlanFinding, ...]:
    if model.procurement is None:
        return ()
    findings: list[PlanFinding] = []
    for i, pool in enumerate(model.pools):
        if pool.instance_type is not None and hourly_price(model, pool.instance_type) is None:
            findings.append(
                PROCUREMENT_PRICE_MISSING.finding(
                                        ("gpuNodePools", i, "instanceType"),
                    f"the catalog has no on-demand price for {pool.instance_type} (catalog prices as of "
                    f"{PRICES_AS_OF}); set procurement.prices.onDemandHourly: "
                    f"{{{pool.instance_type}: <USD per node-hour>}}",
                )
            )
    return tuple(findings)


def _min_size_nodes(min_nodes: int, shares: Mapping[Market, MarketShare]) -> dict[Market, int]:
    def nodes(m: Market) -> int:
        return shares.get(m, MarketShare(0, 0)).nodes

    reserved = nodes(Market.RESERVED)
    on_demand = min(nodes(Market.ON_DEMAND), max(0, min_nodes - reserved))
    return {Market.RESERVED: reserved, Market.SPOT: 0, Market.ON_DEMAND: on_demand}


def plan_cost(model: Platform, shares: Sequence[Mapping[Market, MarketShare]]) -> CostPlan | None:
    if model.procurement is None:
        return None
    prices = model.procurement.prices
    discounts = {
        Market.ON_DEMAND: 0.0,
        Market.SPOT: prices.spot_discount if prices.spot_discount is not None else SPOT_DISCOUNT,
        Market.RESERVED: prices.reserved_discount if prices.reserved_discount is not None else RESERVED_DISCOUNT,
    }
    pools: list[PoolCost] = []
    for pool, share in zip(model.pools, shares, strict=True):
        hourly = hourly_price(model, pool.instance_type or "") or 0.0
        month = hourly * HOURS_PER_MONTH

        def cost(nodes: Mapping[Market, int], month: float = month) -> dict[Market, float]:
            return {m: n * month * (1 - discounts[m]) for m, n in nodes.items()}

        monthly = cost({m: s.nodes for m, s in share.items()})
        floor = cost(_min_size_nodes(pool.nodes.min, share))
        pools.append(
            PoolCost(
                pool=pool.name,
                monthly_usd={m: monthly[m] for m in MARKET_ORDER if m in monthly},
                all_on_demand_monthly_usd=pool.nodes.max * month,
                on_demand_hourly_usd=hourly,
                min_size_monthly_usd=sum(floor.values()),
            )
        )
    total = sum(sum(p.monthly_usd.values()) for p in pools)
    on_demand = sum(p.all_on_demand_monthly_usd for p in pools)
    return CostPlan(
        prices_as_of=prices.as_of or PRICES_AS_OF,
        hours_per_month=HOURS_PER_MONTH,
        pools=tuple(pools),
        monthly_usd=total,
        all_on_demand_monthly_usd=on_demand,
        savings_percent=100 * (1 - total / on_demand) if on_demand else 0.0,
        spot_discount=discounts[Market.SPOT],
        reserved_discount=discounts[Market.RESERVED],
        min_size_monthly_usd=sum(p.min_size_monthly_usd for p in pools),
    )
