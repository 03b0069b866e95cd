"""The whole-node market split: hand-checked cases, then hypothesis against brute force."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplat.model import MARKET_ORDER, GpuNodePool, Market, NodeRange, Sharing, SharingMode
from gpuplat.plan import split as split_module
from gpuplat.plan.procurement import infeasible_findings
from gpuplat.plan.split import SplitPool, split_fleet
from gpuplat.plan.split_cheap import cheap_run
from gpuplat.plan.split_search import budget_of

R, S, OD = Market.RESERVED, Market.SPOT, Market.ON_DEMAND
ALL = (R, S, OD)


def shares(reserved: float, spot: float, on_demand: float) -> dict[Market, float]:
    return {R: reserved, S: spot, OD: on_demand}


def test_single_pool_hits_the_ratio_exactly() -> None:
    # 10 nodes x 8 = 80 GPUs; 30/30/40 -> 24/24/32 GPUs = 3/3/4 nodes, no deviation.
    split = split_fleet([SplitPool(8, 10, ALL)], shares(30, 30, 40))
    assert split.feasible and split.exact
    assert dict(split.nodes[0]) == {R: 3, S: 3, OD: 4}
    assert dict(split.totals) == {R: 24, S: 24, OD: 32}


def test_example_platform_split() -> None:
    # train 32x8 (all), infer 8x8 (reserved, on-demand), dev 6x4 (spot, on-demand),
    # notebooks 4x4 (on-demand): 360 GPUs; 30/30/40 -> 108/108/144, tolerance 8 everywhere.
    # Reserved only comes in 8s (train, infer): 104 or 112, 4 off. Spot mixes 8s and 4s, so
    # 108 is exact with an odd number of dev nodes; on-demand takes the rest, 4 off.
    pools = [SplitPool(8, 32, ALL), SplitPool(8, 8, (R, OD)), SplitPool(4, 6, (S, OD)), SplitPool(4, 4, (OD,))]
    split = split_fleet(pools, shares(30, 30, 40))
    assert split.feasible and split.exact
    assert split.totals[R] in (104, 112)
    assert split.totals[S] == 108
    assert split.totals[OD] == 360 - 108 - split.totals[R]
    assert split.nodes[2][S] % 2 == 1
    assert split.nodes[3] == {OD: 4}


def test_deviation_of_exactly_one_node_is_allowed() -> None:
    # One 8-GPU node, 50/50 reserved/spot: targets 4 and 4; either market is 4 off = 8/2.
    split = split_fleet([SplitPool(8, 1, (R, S))], shares(50, 50, 0))
    assert split.feasible
    assert sorted(split.totals.values()) == [0, 0, 8]


def test_market_no_pool_allows() -> None:
    # 10 % spot but nobody allows spot: tolerance 0 and target 8 -> infeasible, proven.
    pools = [SplitPool(8, 10, (R, OD))]
    split = split_fleet(pools, shares(30, 10, 60))
    assert not split.feasible and split.exact
    assert split_fleet(pools, shares(30, 0, 70)).feasible


def test_small_spot_pool_cannot_carry_thirty_percent() -> None:
    # 10 x 8 on-demand-only + 2 x 4 spot-only = 88 GPUs; 30 % spot = 26.4 +- 4, but spot
    # reaches 8 at most. GP230 at procurement.spot says so, and nothing else.
    pools = [SplitPool(8, 10, (OD,)), SplitPool(4, 2, (S,))]
    split = split_fleet(pools, shares(0, 30, 70))
    assert not split.feasible
    findings = infeasible_findings(_model_pools(pools, ["big", "small"]), [0, 1], shares(0, 30, 70), split)
    # on-demand fails too: big may use nothing else, 80 GPUs > 61.6 + 8.
    assert [f.path for f in findings] == [("procurement", "spot"), ("procurement", "onDemand")]
    assert "only small allows it" in findings[0].message and "achievable spot: 8-8 GPUs" in findings[0].message
    assert "at least 80 GPUs must be on-demand: big may use nothing else" in findings[1].message


def test_pool_whose_markets_all_get_zero() -> None:
    # reserved 0 %, but pool b may only be reserved: 16 GPUs can't go anywhere the ratio wants.
    pools = [SplitPool(8, 10, (S, OD)), SplitPool(8, 2, (R,))]
    split = split_fleet(pools, shares(0, 50, 50))
    assert not split.feasible
    findings = infeasible_findings(_model_pools(pools, ["a", "b"]), [0, 1], shares(0, 50, 50), split)
    codes = {(f.code, f.path) for f in findings}
    assert ("GP230", ("procurement", "reserved")) in codes
    assert ("GP231", ("gpuNodePools", 1, "markets")) in codes


def _model_pools(pools: Sequence[SplitPool], names: Sequence[str]) -> list[GpuNodePool]:
    return [
        GpuNodePool(
            name,
            None,
            "H100-SXM-80GB",
            p.gpus_per_node,
            {},
            None,
            NodeRange(0, p.max_nodes),
            Sharing(SharingMode.EXCLUSIVE),
            False,
            p.markets,
            {},
            (),
        )
        for name, p in zip(names, pools, strict=True)
    ]


def test_state_limit_keeps_a_valid_split() -> None:
    # Two classes (8- and 1-GPU nodes) and a limit of one state: not exact, but what it returns
    # must still be a valid split within tolerance.
    pools = [SplitPool(8, 12, ALL), SplitPool(1, 9, ALL), SplitPool(4, 5, (S, OD))]
    split = split_fleet(pools, shares(30, 30, 40), state_limit=1)
    if split.feasible:
        _assert_valid(pools, split.nodes, split.totals, split.targets, split.tolerance)


def test_large_fleet_is_fast_enough() -> None:
    pools = [SplitPool(8, 900, ALL), SplitPool(4, 500, (S, OD)), SplitPool(1, 300, (R, OD)), SplitPool(8, 200, (R,))]
    split = split_fleet(pools, shares(30, 30, 40))
    assert split.feasible and split.exact
    _assert_valid(pools, split.nodes, split.totals, split.targets, split.tolerance)


# ---- properties ------------------------------------------------------------------------------


def _assert_valid(
    pools: Sequence[SplitPool],
    nodes: Sequence[Mapping[Market, int]],
    totals: Mapping[Market, int],
    targets: Mapping[Market, float],
    tolerance: Mapping[Market, int],
) -> None:
    for pool, split in zip(pools, nodes, strict=True):
        assert set(split) <= set(pool.markets), "a market the pool does not allow"
        assert all(n >= 0 for n in split.values())
        assert sum(split.values()) == pool.max_nodes
    for m in MARKET_ORDER:
        assert totals[m] == sum(p.gpus_per_node * n.get(m, 0) for p, n in zip(pools, nodes, strict=True))
        assert abs(totals[m] - targets[m]) <= tolerance[m] + 1e-9


def _brute_force(
    pools: Sequence[SplitPool], targets: Mapping[Market, float], tol: Mapping[Market, int]
) -> float | None:
    """Best (smallest) max normalised deviation over every whole-node split, None if none fits."""
    totals = {(0, 0, 0)}
    for p in pools:
        options = set()
        for x in itertools.product(range(p.max_nodes + 1), repeat=len(p.markets)):
            if sum(x) == p.max_nodes:
                vec = dict(zip(p.markets, x, strict=True))
                options.add(tuple(p.gpus_per_node * vec.get(m, 0) for m in MARKET_ORDER))
        totals = {(a[0] + b[0], a[1] + b[1], a[2] + b[2]) for a in totals for b in options}
    best: float | None = None
    for total in totals:
        devs = [abs(t - targets[m]) for t, m in zip(total, MARKET_ORDER, strict=True)]
        if any(d > tol[m] + 1e-9 for d, m in zip(devs, MARKET_ORDER, strict=True)):
            continue
        worst = max((d / tol[m] for d, m in zip(devs, MARKET_ORDER, strict=True) if tol[m]), default=0.0)
        best = worst if best is None else min(best, worst)
    return best


markets_st = st.sets(st.sampled_from(ALL), min_size=1).map(lambda s: tuple(m for m in MARKET_ORDER if m in s))
pool_st = st.builds(SplitPool, st.sampled_from([1, 2, 4, 8]), st.integers(1, 4), markets_st)


@st.composite
def ratio_st(draw: st.DrawFn) -> dict[Market, float]:
    a = draw(st.integers(0, 100))
    b = draw(st.integers(0, 100 - a))
    return shares(a, b, 100 - a - b)


@settings(max_examples=300, deadline=None)
@given(st.lists(pool_st, min_size=1, max_size=4), ratio_st())
def test_split_matches_brute_force(pools: list[SplitPool], ratio: dict[Market, float]) -> None:
    split = split_fleet(pools, ratio)
    assert split.exact
    best = _brute_force(pools, split.targets, split.tolerance)
    assert split.feasible == (best is not None)
    if not split.feasible:
        names = [f"p{i}" for i in range(len(pools))]
        findings = infeasible_findings(_model_pools(pools, names), list(range(len(pools))), ratio, split)
        assert any(f.code == "GP230" for f in findings)
        return
    _assert_valid(pools, split.nodes, split.totals, split.targets, split.tolerance)
    worst = max(
        (abs(split.totals[m] - split.targets[m]) / split.tolerance[m] for m in MARKET_ORDER if split.tolerance[m]),
        default=0.0,
    )
    assert abs(worst - (best or 0.0)) < 1e-9, "not the split closest to the ratio"


big_pool_st = st.builds(SplitPool, st.sampled_from([1, 2, 3, 4, 8]), st.integers(1, 30), markets_st)


@settings(max_examples=150, deadline=None)
@given(st.lists(big_pool_st, min_size=1, max_size=8), ratio_st())
def test_cost_bound_loses_nothing(pools: list[SplitPool], ratio: dict[Market, float]) -> None:
    # Fleets too large for brute force: the bounded search must find exactly what the plain
    # search over every state finds (same verdict, same totals, same nodes per pool).
    bounded, plain = split_fleet(pools, ratio), split_fleet(pools, ratio, bounded=False)
    assert (bounded.feasible, bounded.exact) == (plain.feasible, plain.exact)
    assert dict(bounded.totals) == dict(plain.totals)
    assert [dict(n) for n in bounded.nodes] == [dict(n) for n in plain.nodes]


three_sizes_pool_st = st.builds(
    SplitPool, st.sampled_from([1, 4, 8]), st.integers(1, 40), st.sampled_from([ALL, (R, OD), (S, OD), (R, S)])
)


@settings(max_examples=40, deadline=None)
@given(st.lists(three_sizes_pool_st, min_size=20, max_size=60), st.sampled_from([(30, 30, 40), (20, 30, 50)]))
def test_smaller_bounds_find_what_the_full_budget_finds(pools: list[SplitPool], mix: tuple[int, int, int]) -> None:
    # Fleets of three GPU sizes large enough that the search first tries smaller cost bounds
    # (and has to repeat the full run's order on ties): the same split, node for node, as the
    # search under the full budget alone.
    ratio = shares(*mix)
    fast = split_fleet(pools, ratio)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(split_module, "cheap_run", lambda *_args, **_kwargs: None)
        full = split_fleet(pools, ratio)
    assert repr(fast) == repr(full)


def test_the_smaller_bounds_are_used_on_a_large_fleet() -> None:
    pools = [SplitPool(8, 30 + i % 7, ALL if i % 3 else (R, OD)) for i in range(60)]
    pools += [SplitPool(4, 10 + i % 5, (S, OD) if i % 2 else ALL) for i in range(30)]
    pools += [SplitPool(1, 8 + i % 3, (S, OD)) for i in range(30)]
    ratio = shares(30, 30, 40)
    targets = split_module.targets_of(pools, ratio)
    tolerance = split_module.tolerance_of(pools)
    classes = split_module._classes(pools, split_module.ideal_split(pools, targets))  # pyright: ignore[reportPrivateUsage]
    reach, budget = budget_of(classes, targets, tolerance)
    assert cheap_run(classes, (targets, tolerance), 20000, reach, budget) is not None
