"""Procurement: the fleet's GPU capacity split into reserved / spot / on-demand, and the ODCRs.

- Fleet capacity is every pool at its max size (the split sizes limits, not today's usage).
- The split is in whole nodes, only into markets a pool allows, each pool's nodes adding up
  to its max; every market's GPU total lands within tol_m of the ratio, tol_m = the GPUs of
  one node of the largest pool allowing m. The search is exact (gpuplat/plan/split.py).
- The ratio is fleet-wide: it splits the pools without a `procurement` of their own together, so
  one pool's change can move another's markets (a knock-on, which `plan --base` and the
  pull-request comment explain: render/plan_delta.py). A pool with its own `procurement` is
  split alone by it, the same search on a fleet of one, and nothing else moves it. The fleet's
  targets and tolerances are then the sums over the fleet-wide group and each such pool.
- When no such split exists: GP230 at `procurement.<market>` naming the range that market
  can reach, and GP231 at the `markets` of every pool whose markets all get 0 %.
- Provider kubernetes has no procurement: the nodes are owned. Pools then carry no markets
  (`markets = {}`), so the JSON shows zeros per market while `fleet.gpus` is still right.
- Reservations (ODCRs) for the reserved nodes: a fabric pool's all sit in the fabric zone
  (gpuplat/plan/zones.py) inside its cluster placement group, because a training job spans
  the fabric; other pools spread evenly over the zones (largest remainder, earlier zones by
  name first, so the order target.zones lists them in changes nothing).
  Only pools whose reservation kind is on-demand-reservation get ODCRs: a Capacity Block is
  bought (PurchaseCapacityBlock, from an offering), never created, so a capacity-block pool's
  reserved nodes launch into the blocks its spec selects (`capacity_blocks`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpuplat.diagnostics import Level
from gpuplat.model import MARKET_ORDER, GpuNodePool, Market, Platform, ReservationKind
from gpuplat.plan.codes import PROCUREMENT_INFEASIBLE, PROCUREMENT_POOL_MARKETS
from gpuplat.plan.split import EPS, Split, SplitPool, split_fleet, targets_of, tolerance_of
from gpuplat.plan.types import CapacityBlockUse, MarketShare, PlanFinding, Reservation


@dataclass(frozen=True)
class ProcurementResult:
    shares: tuple[Mapping[Market, MarketShare], ...]  # per pool; empty mappings on kubernetes
    fleet_markets: Mapping[Market, int]
    targets: Mapping[Market, float]
    tolerance: Mapping[Market, int]
    findings: tuple[PlanFinding, ...]

    @property
    def ok(self) -> bool:
        return not any(f.level is Level.ERROR for f in self.findings)


def pool_order(pools: Sequence[GpuNodePool]) -> list[int]:
    """Indices of `pools`, largest (max GPUs) first, then by name: the order the planner breaks
    ties in, whatever order the spec lists them in."""
    return sorted(range(len(pools)), key=lambda i: (-pools[i].max_gpus, pools[i].name))


def split_pools(pools: Sequence[GpuNodePool]) -> list[SplitPool]:
    return [SplitPool(p.gpus_per_node, p.nodes.max, p.markets) for p in pools]


def plan_procurement(model: Platform) -> ProcurementResult:
    if model.procurement is None:
        empty: Mapping[Market, MarketShare] = {}
        return ProcurementResult(tuple(empty for _ in model.pools), {}, {}, {}, ())
    fleet_wide = [i for i, p in enumerate(model.pools) if p.procurement is None]
    groups: list[tuple[list[int], Mapping[Market, float]]] = [
        (fleet_wide, {m: model.procurement.share(m) for m in MARKET_ORDER})
    ]
    groups += [([i], p.procurement) for i, p in enumerate(model.pools) if p.procurement is not None]
    nodes: dict[int, Mapping[Market, int]] = {}
    totals, targets, tolerance = _zeros(), dict.fromkeys(MARKET_ORDER, 0.0), _zeros()
    findings: list[PlanFinding] = []
    for members, shares in groups:
        if not members:
            continue
        result = _split_group(model.pools, members, shares)
        for m in MARKET_ORDER:
            targets[m] += result.targets[m]
            tolerance[m] += result.tolerance[m]
            totals[m] += result.totals[m]
        if not result.feasible:
            findings += infeasible_findings(model.pools, members, shares, result)
            continue
        nodes.update(zip(_ordered(model.pools, members), result.nodes, strict=True))
    if findings:
        return ProcurementResult((), {}, targets, tolerance, tuple(findings))
    per_pool = tuple(
        {m: MarketShare(n, n * p.gpus_per_node) for m, n in nodes[i].items()} for i, p in enumerate(model.pools)
    )
    return ProcurementResult(per_pool, totals, targets, tolerance, ())


def _zeros() -> dict[Market, int]:
    return dict.fromkeys(MARKET_ORDER, 0)


def _ordered(pools: Sequence[GpuNodePool], members: Sequence[int]) -> list[int]:
    """`members` (indices of `pools`) largest first, then by name (pool_order)."""
    return [members[k] for k in pool_order([pools[i] for i in members])]


def _split_group(pools: Sequence[GpuNodePool], members: Sequence[int], shares: Mapping[Market, float]) -> Split:
    # The search breaks ties by position (the nodes left after rounding go to the earlier pool).
    # Pools go in largest first, then by name: the order they are written in means nothing, so
    # it must never move a node between markets.
    return split_fleet(split_pools([pools[i] for i in _ordered(pools, members)]), shares)


def _pct(lo: float, hi: float, fleet: int) -> str:
    return f"{100 * lo / fleet:.1f}-{100 * hi / fleet:.1f} %" if fleet else "0 %"


def _allow(pools: Sequence[GpuNodePool]) -> str:
    names = ", ".join(p.name for p in pools)
    return f"only {names} {'allows' if len(pools) == 1 else 'allow'} it"


def reachable(pools: Sequence[SplitPool], m: Market) -> tuple[int, int]:
    """GPUs market m can get: at least the pools allowing only m, at most all allowing m."""
    lo = sum(p.gpus for p in pools if p.markets == (m,))
    hi = sum(p.gpus for p in pools if m in p.markets)
    return lo, hi


def _why(
    model_pools: Sequence[GpuNodePool],
    pools: Sequence[SplitPool],
    m: Market,
    window: Mapping[Market, tuple[float, float]],
    alone: Mapping[Market, tuple[int, int]],
) -> tuple[str, str] | None:
    """Why market m alone cannot reach its window (reason, fix), or None if it can."""
    lo, hi = alone[m]
    key = f"procurement.{m.procurement_key}"
    if hi < window[m][0] - EPS:
        allowing = [mp for mp, p in zip(model_pools, pools, strict=True) if m in p.markets]
        reason = f"only {hi} GPUs can be {m.value}: " + (_allow(allowing) if allowing else f"no pool allows {m.value}")
        return reason, f"lower {key} or add {m.value} to more pools' markets"
    if lo > window[m][1] + EPS:
        only = [mp.name for mp, p in zip(model_pools, pools, strict=True) if p.markets == (m,)]
        reason = f"at least {lo} GPUs must be {m.value}: {', '.join(only)} may use nothing else"
        return reason, f"raise {key} or allow other markets in those pools"
    return None


def infeasible_findings(
    all_pools: Sequence[GpuNodePool], members: Sequence[int], shares: Mapping[Market, float], split: Split
) -> list[PlanFinding]:
    """Why the pools `members` (indices of `all_pools`) cannot be split by `shares`: at the
    fleet-wide `procurement`, or at a pool's own."""
    model_pools = [all_pools[i] for i in members]
    pools = split_pools(model_pools)
    own = [all_pools[i].procurement is not None for i in members]
    where: tuple[str | int, ...] = ("gpuNodePools", members[0], "procurement") if all(own) else ("procurement",)
    fleet = sum(p.gpus for p in pools)
    targets, tol = targets_of(pools, shares), tolerance_of(pools)
    window = {m: (targets[m] - tol[m], targets[m] + tol[m]) for m in MARKET_ORDER}
    alone = {m: reachable(pools, m) for m in MARKET_ORDER}
    reasons = {m: why for m in MARKET_ORDER if (why := _why(model_pools, pools, m, window, alone))}
    if not reasons:
        # Each market is reachable alone; the others, held within their windows, leave m
        # what they do not take (still exact bounds, fractional).
        low = {m: max(window[m][0], alone[m][0]) for m in MARKET_ORDER}
        high = {m: min(window[m][1], alone[m][1]) for m in MARKET_ORDER}
        for m in MARKET_ORDER:
            most = min(alone[m][1], fleet - sum(low[o] for o in MARKET_ORDER if o is not m))
            least = max(alone[m][0], fleet - sum(high[o] for o in MARKET_ORDER if o is not m))
            others = "with the other markets within their tolerance"
            if most < window[m][0] - EPS:
                reasons[m] = (f"{others} at most {most:g} GPUs are left for {m.value}", "change the ratio or markets")
            elif least > window[m][1] + EPS:
                reasons[m] = (f"{others} at least {least:g} GPUs fall to {m.value}", "change the ratio or markets")
    findings: list[PlanFinding] = []
    for m, (reason, fix) in reasons.items():
        lo, hi = alone[m]
        message = (
            f"procurement asks for {shares[m]:g} % {m.value} = {targets[m]:g} of the fleet's {fleet} GPUs "
            f"(±{tol[m]}, one node of the largest pool allowing it), but {reason}; "
            f"achievable {m.value}: {lo}-{hi} GPUs ({_pct(lo, hi, fleet)}); {fix}"
        )
        findings.append(PROCUREMENT_INFEASIBLE.finding((*where, m.procurement_key), message))
    if not findings:
        # Every market is reachable on its own and jointly; whole nodes are what stop it.
        m = min((m for m in MARKET_ORDER if tol[m]), key=lambda m: (tol[m], MARKET_ORDER.index(m)))
        verdict = "no whole-node split" if split.exact else "no whole-node split was found (search limit)"
        ranges = "; ".join(f"{x.value} {alone[x][0]}-{alone[x][1]}" for x in MARKET_ORDER)
        ratio = ", ".join(f"{x.value} {shares[x]:g} %" for x in MARKET_ORDER)
        message = (
            f"{verdict} of the fleet's {fleet} GPUs meets the ratio {ratio} within one node per market "
            f"(achievable GPUs: {ranges}); change the ratio or the pools' sizes or markets"
        )
        findings.append(PROCUREMENT_INFEASIBLE.finding((*where, m.procurement_key), message))
    for i, (mp, p) in zip(members, zip(model_pools, pools, strict=True), strict=True):
        if all(targets[m] <= EPS for m in p.markets):
            message = (
                f"pool {mp.name} may only use {', '.join(m.value for m in p.markets)}, which procurement gives 0 %, "
                f"yet its {p.gpus} GPUs must be bought somewhere; allow a market with a share"
            )
            findings.append(PROCUREMENT_POOL_MARKETS.finding(("gpuNodePools", i, "markets"), message))
    return findings


def even_spread(count: int, zones: Sequence[str]) -> list[tuple[str, int]]:
    """count over zones by largest remainder: equal quotas, so the remainder goes to the first."""
    base, extra = divmod(count, len(zones))
    spread = [(z, base + (1 if k < extra else 0)) for k, z in enumerate(zones)]
    return [(z, n) for z, n in spread if n > 0]


def reservations(
    model: Platform, shares: Sequence[Mapping[Market, MarketShare]], fabric_zone: str | None
) -> tuple[Reservation, ...]:
    zones = model.target.zones  # sorted by the model
    if not zones or fabric_zone is None or model.procurement is None:
        return ()
    out: list[Reservation] = []
    for pool, share in zip(model.pools, shares, strict=True):
        count = share.get(Market.RESERVED, MarketShare(0, 0)).nodes + pool.health.spare_nodes
        if count == 0 or pool.instance_type is None or pool.reservation.kind is ReservationKind.CAPACITY_BLOCK:
            continue
        spread = [(fabric_zone, count)] if pool.fabric else even_spread(count, zones)
        out.extend(Reservation(pool.name, z, pool.instance_type, n, pool.fabric) for z, n in spread)
    return tuple(out)


def capacity_blocks(model: Platform, shares: Sequence[Mapping[Market, MarketShare]]) -> tuple[CapacityBlockUse, ...]:
    """The reserved nodes of capacity-block pools: what their selected blocks should hold."""
    out: list[CapacityBlockUse] = []
    for pool, share in zip(model.pools, shares, strict=True):
        count = share.get(Market.RESERVED, MarketShare(0, 0)).nodes + pool.health.spare_nodes
        if count == 0 or pool.instance_type is None or pool.reservation.kind is not ReservationKind.CAPACITY_BLOCK:
            continue
        out.append(CapacityBlockUse(pool.name, pool.instance_type, count, pool.reservation.ids, pool.reservation.tags))
    return tuple(out)
