"""Rules on `procurement`, a pool's own `procurement` and pool markets (the exact split is the
planner's: GP23x)."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplat.diagnostics import Level
from gpuplat.validate.registry import Finding, rule
from gpuplat.validate.rules._common import (
    Data,
    as_list,
    as_str,
    is_number,
    markets,
    pool_name,
    pools,
    provider,
    section,
    show_number,
)
from gpuplat.view import pool_procurement
from gpuplat.vocabulary import DEFAULT_MIX, PROCUREMENT_ORDER, Market

# procurement key -> market spelling in gpuNodePools[].markets, in the schema's order of the keys
_KEYS = tuple((m.procurement_key, m) for m in PROCUREMENT_ORDER)


def _shares(data: Data) -> dict[str, float] | None:
    procurement = section(data, "procurement")
    if provider(data) != "aws" or procurement is None:
        return None
    values = {key: procurement.get(key) for key, _ in _KEYS}
    if not all(is_number(v) for v in values.values()):
        return None
    return {key: float(v) for key, v in values.items() if v is not None}


@rule(
    "GP260",
    "procurement-sums-to-100",
    Level.ERROR,
    "The procurement mix splits 100 % of the fleet's GPU capacity between spot, reserved and on-demand.",
    fix="Make `procurement.spot`, `reserved` and `onDemand` add up to 100.",
)
def procurement_sums_to_100(data: Data) -> Iterator[Finding]:
    shares = _shares(data)
    if shares is None:
        return
    total = sum(shares.values())
    if abs(total - 100) > 1e-6:
        parts = " + ".join(f"{key} {show_number(shares[key])}" for key, _ in _KEYS)
        yield Finding(
            ("procurement",),
            f"procurement adds up to {show_number(round(total, 6))} % ({parts}), not 100 %",
            at_key=True,
        )


@rule(
    "GP261",
    "procurement-market-allowed",
    Level.ERROR,
    "Capacity can only be bought in a market some pool's Karpenter NodePools allow (pool markets).",
    source="https://karpenter.sh/docs/concepts/nodepools/",
    fix="Give the market 0 %, or add it to some pool's `markets`.",
)
def procurement_market_allowed(data: Data) -> Iterator[Finding]:
    implicit = provider(data) == "aws" and "procurement" not in data
    # Without a procurement section the whole fleet is bought on demand (the model's default).
    shares = {m.procurement_key: float(p) for m, p in DEFAULT_MIX.items()} if implicit else _shares(data)
    if shares is None:
        return
    if not any(True for _ in pools(data)):
        return  # no pools at all is the schema pass's error, not three market errors
    fleet_wide = [(i, pool) for i, pool in pools(data) if "procurement" not in pool]
    if not fleet_wide:
        return  # every pool has its own mix: the fleet-wide one splits none (GP266/GP267 judge theirs)
    allowed: set[str] = set()
    for _, pool in fleet_wide:
        raw = pool.get("markets")
        if raw is not None and (not isinstance(raw, list) or any(m not in tuple(Market) for m in as_list(raw))):
            return  # malformed markets: the schema pass reports them
        allowed.update(markets(pool))
    if implicit and Market.ON_DEMAND not in allowed:
        yield Finding(
            ("gpuNodePools",),
            "without a procurement section the whole fleet is bought on demand, but no pool allows the "
            "on-demand market; add a procurement mix or add on-demand to a pool's markets",
            at_key=True,
        )
        return
    for key, market in _KEYS:
        if shares.get(key, 0) > 0 and market not in allowed:
            yield Finding(
                ("procurement", key),
                f"procurement puts {show_number(shares[key])} % in {market} but no pool it splits (the pools "
                f"without a procurement of their own) allows the {market} market; add {market} to such a "
                f"pool's markets or set {key}: 0",
            )


@rule(
    "GP262",
    "procurement-aws-only",
    Level.ERROR,
    "An existing cluster's nodes are already bought: there is no market to choose on provider kubernetes.",
    fix="Remove `procurement` (and pool `markets`) on provider kubernetes.",
)
def procurement_aws_only(data: Data) -> Iterator[Finding]:
    if provider(data) != "kubernetes":
        return
    if "procurement" in data:
        yield Finding(
            ("procurement",),
            "procurement does not apply to provider kubernetes, whose nodes already exist; remove it",
            at_key=True,
        )
    for i, pool in pools(data):
        for key in ("markets", "reservation", "procurement"):
            if key in pool:
                yield Finding(
                    ("gpuNodePools", i, key),
                    f"{key} of pool {pool_name(pool, i)} do not apply to provider kubernetes, whose nodes "
                    f"already exist; remove them",
                    at_key=True,
                )


def _own(data: Data) -> Iterator[tuple[int, Data, dict[Market, float]]]:
    if provider(data) != "aws":
        return
    for i, pool in pools(data):
        shares = pool_procurement(pool)
        if shares is not None:
            yield i, pool, shares


@rule(
    "GP266",
    "pool-procurement-sums-to-100",
    Level.ERROR,
    "A pool's own procurement splits 100 % of that pool's GPU capacity between spot, reserved and on-demand.",
    fix="Make the pool's spot, reserved and onDemand add up to 100 (a market left out counts 0), or remove the "
    "pool's procurement to have the fleet-wide mix split it.",
)
def pool_procurement_sums_to_100(data: Data) -> Iterator[Finding]:
    for i, pool, shares in _own(data):
        total = sum(shares.values())
        if abs(total - 100) > 1e-6:
            parts = " + ".join(f"{m.procurement_key} {show_number(shares[m])}" for m in PROCUREMENT_ORDER)
            yield Finding(
                ("gpuNodePools", i, "procurement"),
                f"pool {pool_name(pool, i)}'s procurement adds up to {show_number(round(total, 6))} % ({parts}), "
                "not 100 % (a market left out counts 0 %)",
                at_key=True,
            )


@rule(
    "GP267",
    "pool-procurement-market-allowed",
    Level.ERROR,
    "A pool buys capacity only in the markets its Karpenter NodePools allow (its markets).",
    source="https://karpenter.sh/docs/concepts/nodepools/",
    fix="Add the market to the pool's markets, or set that market's share of the pool's procurement to 0.",
)
def pool_procurement_market_allowed(data: Data) -> Iterator[Finding]:
    for i, pool, shares in _own(data):
        allowed = markets(pool)
        for m in PROCUREMENT_ORDER:
            if shares[m] > 0 and m not in allowed:
                yield Finding(
                    ("gpuNodePools", i, "procurement", m.procurement_key),
                    f"pool {pool_name(pool, i)}'s procurement puts {show_number(shares[m])} % in {m.value}, "
                    f"which its markets ({', '.join(x.value for x in allowed)}) do not allow; add {m.value} to "
                    f"its markets or set {m.procurement_key}: 0",
                )


@rule(
    "GP360",
    "price-override-unused",
    Level.WARNING,
    "Cost is computed per pool instance type; a price for a type no pool uses changes nothing.",
    fix="Remove the price of the type no pool uses from `procurement.prices`.",
)
def price_override_unused(data: Data) -> Iterator[Finding]:
    prices = section(data, "procurement", "prices", "onDemandHourly")
    if provider(data) != "aws" or prices is None:
        return
    used = {as_str(pool.get("instanceType")) for _, pool in pools(data)}
    for name in prices:
        if name not in used:
            yield Finding(
                ("procurement", "prices", "onDemandHourly", name),
                f"no pool uses {name}, so its price override has no effect "
                f"(pool instance types: {', '.join(sorted(u for u in used if u))})",
                at_key=True,
            )
