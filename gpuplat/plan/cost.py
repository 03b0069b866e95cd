"""Cost: monthly USD per pool and market, against an all-on-demand fleet.

    monthly(pool, market) = nodes x on-demand hourly x HOURS_PER_MONTH x (1 - discount)

discount: 0 on-demand, spotDiscount for spot, reservedDiscount for reserved. Spec values
(`procurement.prices`) win over the catalog, per instance type and per discount.
The reserved discount is an assumption, not a price: an On-Demand Capacity Reservation bills
the full on-demand rate; the plan prices it as if a 1-year Compute Savings Plan the platform
does not buy covered it, and says so (`assumptions`). A pool whose reservation kind is
capacity-block prices its reserved nodes at the Capacity Block rate instead (catalog
service_prices.py, or `procurement.prices.capacityBlockHourly`), as if blocks were bought back
to back all month; a type without a rate falls back to on-demand, named as an assumption.
Services beside the GPU nodes (control plane, NAT, storage tiers) are service_cost.py's.
The headline assumes every pool runs at max size all month: the split sizes capacity for
max, and reserved capacity is paid whether it runs or not. The min-size figure is the floor:
the reserved nodes in full plus the rest of `nodes.min` on on-demand, where the capacity floor
keeps them (its placeholders never run on spot, which could take the minimum away; Karpenter
fills reservations first). Minimum nodes beyond the pool's reserved and on-demand nodes are not
held (GP353) and cost nothing here.
Spare nodes held for repairs (`health.spareNodes`) are paid like reserved nodes, all month,
and counted in the total and the floor, apart from the market split (plan/health.py).
savings percent = (1 - monthly / all on-demand) x 100.
A pool whose instance type has no price is an error (GP232) at its instanceType.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gpuplat.catalog.prices import (
    HOURS_PER_MONTH,
    PRICES_AS_OF,
    RESERVED_ASSUMPTION,
    RESERVED_ASSUMPTION_SOURCE,
    RESERVED_DISCOUNT,
    SPOT_DISCOUNT,
    on_demand_price,
    prices_as_of,
    prices_source,
)
from gpuplat.catalog.service_prices import CAPACITY_BLOCK_PRICING, CAPACITY_BLOCK_RATES_OLD, capacity_block_rate
from gpuplat.model import MARKET_ORDER, GpuNodePool, Market, Platform, ReservationKind
from gpuplat.plan.codes import PROCUREMENT_PRICE_MISSING
from gpuplat.plan.service_cost import service_costs
from gpuplat.plan.types import CostAssumption, CostPlan, MarketShare, PlanFinding, PoolCost, StoragePlan


def hourly_price(model: Platform, instance_type: str) -> float | None:
    """USD per node-hour on demand in the spec's region: the spec's price, else the catalog's."""
    assert model.procurement is not None
    spec = model.procurement.prices.on_demand_hourly
    if instance_type in spec:
        return spec[instance_type]
    listed = on_demand_price(instance_type, model.target.region or "us-east-1")
    return listed.usd if listed is not None else None


def price_estimated(model: Platform, instance_type: str) -> str:
    """Why the on-demand price the plan uses is not the region's list price; "" when it is (or the
    spec set it: the spec's own number is nobody's estimate but its author's)."""
    assert model.procurement is not None
    if instance_type in model.procurement.prices.on_demand_hourly:
        return ""
    listed = on_demand_price(instance_type, model.target.region or "us-east-1")
    return listed.estimated if listed is not None else ""


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


def capacity_block_hourly(model: Platform, instance_type: str) -> float | None:
    """USD per instance-hour of a Capacity Block: the spec's override, else the catalog's rate."""
    assert model.procurement is not None
    spec = model.procurement.prices.capacity_block_hourly
    if instance_type in spec:
        return spec[instance_type]
    listed = capacity_block_rate(instance_type, model.target.region or "us-east-1")
    return listed.usd if listed is not None else None


def capacity_block_note(model: Platform, pool: GpuNodePool) -> str:
    """What a reader must know about a pool's Capacity Block rate: its age, and where it is another
    region's rate; "" for other kinds, spec rates and types without a catalogued rate."""
    assert model.procurement is not None
    itype = pool.instance_type or ""
    if pool.reservation.kind is not ReservationKind.CAPACITY_BLOCK:
        return ""
    if itype in model.procurement.prices.capacity_block_hourly:
        return ""
    listed = capacity_block_rate(itype, model.target.region or "us-east-1")
    if listed is None:
        return ""
    return "; ".join(n for n in (CAPACITY_BLOCK_RATES_OLD, listed.estimated) if n)


def _reserved_hourly(model: Platform, pool: GpuNodePool, on_demand: float, discount: float) -> float:
    if pool.reservation.kind is ReservationKind.CAPACITY_BLOCK:
        block = capacity_block_hourly(model, pool.instance_type or "")
        return block if block is not None else on_demand
    return on_demand * (1 - discount)


def _assumptions(model: Platform, reserved_discount: float) -> tuple[CostAssumption, ...]:
    out: list[CostAssumption] = []
    reserving = [p for p in model.pools if Market.RESERVED in p.markets]
    if any(p.reservation.kind is ReservationKind.ON_DEMAND_RESERVATION for p in reserving):
        name, source = "reserved-savings-plan", RESERVED_ASSUMPTION_SOURCE
        out.append(CostAssumption(name, RESERVED_ASSUMPTION, reserved_discount, source))
    blocks = [p for p in reserving if p.reservation.kind is ReservationKind.CAPACITY_BLOCK]
    for pool in blocks:
        itype = pool.instance_type or ""
        if capacity_block_hourly(model, itype) is None:
            text = (
                f"pool {pool.name}: no Capacity Block rate for {itype} in the catalog; its reserved nodes are "
                f"priced at on-demand (set procurement.prices.capacityBlockHourly)"
            )
            out.append(CostAssumption("capacity-block-rate-unknown", text, 0.0, CAPACITY_BLOCK_PRICING))
    if any(capacity_block_note(model, p) for p in blocks):
        out.append(CostAssumption("capacity-block-rate-old", CAPACITY_BLOCK_RATES_OLD, 0.0, CAPACITY_BLOCK_PRICING))
    if blocks:
        text = (
            "Capacity Blocks priced as bought back to back for the whole month at the catalog's rate; "
            "a block is paid up front for its fixed duration, and between blocks the reserved nodes do not exist"
        )
        out.append(CostAssumption("capacity-block-continuous", text, 0.0, CAPACITY_BLOCK_PRICING))
    return tuple(out)


def _min_size_nodes(min_nodes: int, shares: Mapping[Market, MarketShare]) -> dict[Market, int]:
    def nodes(m: Market) -> int:
        return shares.get(m, MarketShare(0, 0)).nodes

    reserved = nodes(Market.RESERVED)
    on_demand = min(nodes(Market.ON_DEMAND), max(0, min_nodes - reserved))
    return {Market.RESERVED: reserved, Market.SPOT: 0, Market.ON_DEMAND: on_demand}


def plan_cost(
    model: Platform, shares: Sequence[Mapping[Market, MarketShare]], storage: StoragePlan | None = None
) -> CostPlan | None:
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
        reserved = _reserved_hourly(model, pool, hourly, discounts[Market.RESERVED])
        node_month = {
            Market.ON_DEMAND: month,
            Market.SPOT: month * (1 - discounts[Market.SPOT]),
            Market.RESERVED: reserved * HOURS_PER_MONTH,
        }

        def cost(nodes: Mapping[Market, int], node_month: Mapping[Market, float] = node_month) -> dict[Market, float]:
            return {m: n * node_month[m] for m, n in nodes.items()}

        monthly = cost({m: s.nodes for m, s in share.items()})
        floor = cost(_min_size_nodes(pool.nodes.min, share))
        pools.append(
            PoolCost(
                pool=pool.name,
                monthly_usd={m: monthly[m] for m in MARKET_ORDER if m in monthly},
                all_on_demand_monthly_usd=pool.nodes.max * month,
                on_demand_hourly_usd=hourly,
                min_size_monthly_usd=sum(floor.values()) + pool.health.spare_nodes * node_month[Market.RESERVED],
                reserved_kind=pool.reservation.kind.value,
                reserved_hourly_usd=reserved,
                price_estimated=price_estimated(model, pool.instance_type or ""),
                reserved_price_note=capacity_block_note(model, pool) if Market.RESERVED in share else "",
                spare_monthly_usd=pool.health.spare_nodes * node_month[Market.RESERVED],
            )
        )
    total = sum(sum(p.monthly_usd.values()) + p.spare_monthly_usd for p in pools)
    on_demand = sum(p.all_on_demand_monthly_usd for p in pools)
    return CostPlan(
        prices_as_of=prices.as_of or prices_as_of(model.target.region or "us-east-1"),
        hours_per_month=HOURS_PER_MONTH,
        pools=tuple(pools),
        monthly_usd=total,
        all_on_demand_monthly_usd=on_demand,
        savings_percent=100 * (1 - total / on_demand) if on_demand else 0.0,
        spot_discount=discounts[Market.SPOT],
        reserved_discount=discounts[Market.RESERVED],
        min_size_monthly_usd=sum(p.min_size_monthly_usd for p in pools),
        services=service_costs(model, storage) if storage is not None else (),
        assumptions=_assumptions(model, discounts[Market.RESERVED]),
        region=model.target.region or "us-east-1",
        prices_source=prices_source(model.target.region or "us-east-1"),
    )
