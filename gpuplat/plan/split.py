"""Whole-node split of a fleet's GPU capacity into markets: the exact search behind procurement.

Problem. Pool i has g_i GPUs per node, N_i nodes (its max) and a set A_i of allowed markets.
Choose integers x[i][m] >= 0 (m in A_i) with sum_m x[i][m] = N_i. Market totals are
S_m = sum_i g_i x[i][m] GPUs; the ratio asks for T_m = G * share_m / 100 of the fleet's
G = sum_i g_i N_i GPUs. A split is *within tolerance* when |S_m - T_m| <= tol_m for every m,
tol_m = the largest g_i among pools allowing m (one node's GPUs; 0 if no pool allows m).

Why it is exact and still cheap: pools with the same g form a *class*. By Gale's theorem
(supply/demand in a bipartite graph) a class can deliver the node counts n_m to the markets
iff lo_m <= n_m <= hi_m for every market and sum_m n_m = N_class, where lo_m = nodes of the
class's pools that allow only m and hi_m = nodes of its pools that allow m. (With three
markets, the Hall conditions for pairs of markets are the singleton conditions of the third.)
So the search runs over a handful of classes (GPU sizes: 1, 4, 8 ...) instead of over pools:

1. Ideal split (fractional): each pool starts from the ratio restricted to its markets, then
   iterative proportional fitting rescales columns to T_m and rows to the pool's GPUs.
2. Dynamic programming over the classes, the most GPUs first. The state is (GPUs on
   reserved, GPUs on spot) so far; on-demand is the rest. A class vector is tried only if
   the remaining classes (their lo and hi) can still bring every market into its window
   [T_m - tol_m, T_m + tol_m]; big classes first leaves little slack, so few survive.
   Each state keeps its cheapest path, cost = GPUs away from the ideal class split.
   A bound that does not depend on the pool count (`_budget`: the cheapest class vectors of
   any reachable total cost at most 2 x its distance from the ideal + 16 x classes x lcm of
   the GPU sizes) drops every path that would cost more, so the states stay a bounded
   neighbourhood of the ideal instead of growing with the square of the fleet: once the
   fleet is larger than that neighbourhood the search stops growing with the number of pools;
   the rest of the split is linear in it.
3. Among complete splits within tolerance pick the least (max_m |S_m - T_m| / tol_m,
   sum_m |S_m - T_m|, distance from the ideal, state): the closest to the ratio first, then
   the one that looks most like the ratio pool by pool.
4. Each class's node counts go back to its pools: the ideal rounded down, then augmenting
   paths (max-flow) place the rest; Gale's theorem guarantees they all fit.

The search itself (the layers, the last class, the bounds) is gpuplat/plan/split_search.py;
the runs under smaller bounds that usually settle it early, split_cheap.py; giving each class's
counts to its pools, split_nodes.py.

If more than `state_limit` states survive a layer, the cheapest are kept and the result is
marked not exact: an infeasible verdict is then not a proof (never the case for fleets of
a realistic number of GPU sizes; the tests check the exact verdict against brute force).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from gpuplat.model import MARKET_ORDER, Market
from gpuplat.plan.split_cheap import cheap_run
from gpuplat.plan.split_nodes import decompose
from gpuplat.plan.split_search import EPS, SizeClass, State, Vec, best_total, budget_of, run_search
from gpuplat.plan.split_types import Split, SplitPool

__all__ = ["EPS", "Split", "SplitPool", "State", "Vec", "ideal_split", "split_fleet", "targets_of", "tolerance_of"]


def targets_of(pools: Sequence[SplitPool], shares: Mapping[Market, float]) -> dict[Market, float]:
    gpus = sum(p.gpus for p in pools)
    total = sum(shares.get(m, 0.0) for m in MARKET_ORDER)
    return {m: gpus * shares.get(m, 0.0) / total if total > 0 else 0.0 for m in MARKET_ORDER}


def tolerance_of(pools: Sequence[SplitPool]) -> dict[Market, int]:
    return {m: max((p.gpus_per_node for p in pools if m in p.markets), default=0) for m in MARKET_ORDER}


def ideal_split(pools: Sequence[SplitPool], targets: Mapping[Market, float]) -> list[dict[Market, float]]:
    """Fractional GPUs per pool and market (iterative proportional fitting)."""
    total_target = sum(targets.values()) or 1.0

    def start(p: SplitPool) -> dict[Market, float]:
        weights = {m: targets[m] / total_target for m in p.markets}
        norm = sum(weights.values())
        if norm <= 0:  # every market it may use gets 0 %: it still has to go somewhere
            return {m: p.gpus / len(p.markets) for m in p.markets}
        return {m: p.gpus * w / norm for m, w in weights.items()}

    rows = [start(p) for p in pools]
    for _ in range(200):
        before = [dict(r) for r in rows]
        for m in MARKET_ORDER:
            col = sum(r.get(m, 0.0) for r in rows)
            if col > 0:
                for r in rows:
                    if m in r:
                        r[m] *= targets[m] / col
        for p, r in zip(pools, rows, strict=True):
            s = sum(r.values())
            if s > 0:
                for m in r:
                    r[m] *= p.gpus / s
            else:
                r.update(start(p))
        if rows == before:
            # A fixed point: every further pass would compute exactly these floats again, so
            # stopping here gives the 200 passes' answer bit for bit (most fleets get there in
            # a few dozen).
            break
    return rows


def split_fleet(
    pools: Sequence[SplitPool], shares: Mapping[Market, float], *, state_limit: int = 20000, bounded: bool = True
) -> Split:
    """`bounded=False` turns the cost bound off (the plain search the tests compare against)."""
    targets = targets_of(pools, shares)
    tolerance = tolerance_of(pools)
    zeros = dict.fromkeys(MARKET_ORDER, 0)
    if any(tolerance[m] == 0 and targets[m] > EPS for m in MARKET_ORDER):
        return Split((), zeros, targets, tolerance, feasible=False, exact=True)
    ideal = ideal_split(pools, targets)
    classes = _classes(pools, ideal)
    vectors, exact = _search(classes, targets, tolerance, state_limit, bounded)
    if vectors is None:
        return Split((), zeros, targets, tolerance, feasible=False, exact=exact)
    nodes: list[dict[Market, int]] = [dict.fromkeys(p.markets, 0) for p in pools]
    for c, vec in zip(classes, vectors, strict=True):
        decompose(pools, c.members, c.gpus_per_node, vec, ideal, nodes)
    totals = {m: sum(p.gpus_per_node * n.get(m, 0) for p, n in zip(pools, nodes, strict=True)) for m in MARKET_ORDER}
    return Split(tuple(nodes), totals, targets, tolerance, feasible=True, exact=exact)


def _classes(pools: Sequence[SplitPool], ideal: Sequence[Mapping[Market, float]]) -> list[SizeClass]:
    out: list[SizeClass] = []
    for g in sorted({p.gpus_per_node for p in pools}):
        members = tuple(i for i, p in enumerate(pools) if p.gpus_per_node == g)
        lo = tuple(sum(pools[i].max_nodes for i in members if pools[i].markets == (m,)) for m in MARKET_ORDER)
        hi = tuple(sum(pools[i].max_nodes for i in members if m in pools[i].markets) for m in MARKET_ORDER)
        want = tuple(sum(ideal[i].get(m, 0.0) for i in members) / g for m in MARKET_ORDER)
        nodes = sum(pools[i].max_nodes for i in members)
        out.append(
            SizeClass(g, members, nodes, (lo[0], lo[1], lo[2]), (hi[0], hi[1], hi[2]), (want[0], want[1], want[2]))
        )
    return out


def _search(
    classes: Sequence[SizeClass],
    targets: Mapping[Market, float],
    tolerance: Mapping[Market, int],
    limit: int,
    bounded: bool,
) -> tuple[list[Vec] | None, bool]:
    reach, budget = budget_of(classes, targets, tolerance) if bounded else (math.inf, math.inf)
    run = None
    if bounded and len(classes) <= 3:
        run = cheap_run(classes, (targets, tolerance), limit, reach, budget)
    if run is None:
        run = run_search(classes, (targets, tolerance), limit, reach, budget)
    layers = run.layers
    if not layers[-1]:
        return None, run.exact
    state = best_total(run, targets, tolerance)
    vectors: dict[int, Vec] = {}
    for pos in range(len(run.order), 0, -1):
        _, prev, vec = layers[pos][state]
        assert prev is not None and vec is not None
        vectors[run.order[pos - 1]] = vec
        state = prev
    return [vectors[k] for k in range(len(classes))], run.exact
