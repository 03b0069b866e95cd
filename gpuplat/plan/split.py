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

If more than `state_limit` states survive a layer, the cheapest are kept and the result is
marked not exact: an infeasible verdict is then not a proof (never the case for fleets of
a realistic number of GPU sizes; the tests check the exact verdict against brute force).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from gpuplat.model import MARKET_ORDER, Market
from gpuplat.plan.split_nodes import decompose

EPS = 1e-9
Vec = tuple[int, int, int]  # nodes per market in MARKET_ORDER
State = tuple[int, int]  # GPUs on reserved and spot so far


@dataclass(frozen=True)
class SplitPool:
    gpus_per_node: int
    max_nodes: int
    markets: tuple[Market, ...]

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.max_nodes


@dataclass(frozen=True)
class Split:
    nodes: tuple[Mapping[Market, int], ...]  # per pool, every allowed market; () when infeasible
    totals: Mapping[Market, int]  # GPUs per market; zeros when infeasible
    targets: Mapping[Market, float]
    tolerance: Mapping[Market, int]
    feasible: bool
    exact: bool  # the search was exhaustive, so `feasible=False` is a proof


@dataclass(frozen=True)
class _Class:
    gpus_per_node: int
    members: tuple[int, ...]
    nodes: int
    lo: Vec
    hi: Vec
    ideal: tuple[float, float, float]

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes


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


def _classes(pools: Sequence[SplitPool], ideal: Sequence[Mapping[Market, float]]) -> list[_Class]:
    out: list[_Class] = []
    for g in sorted({p.gpus_per_node for p in pools}):
        members = tuple(i for i, p in enumerate(pools) if p.gpus_per_node == g)
        lo = tuple(sum(pools[i].max_nodes for i in members if pools[i].markets == (m,)) for m in MARKET_ORDER)
        hi = tuple(sum(pools[i].max_nodes for i in members if m in pools[i].markets) for m in MARKET_ORDER)
        want = tuple(sum(ideal[i].get(m, 0.0) for i in members) / g for m in MARKET_ORDER)
        nodes = sum(pools[i].max_nodes for i in members)
        out.append(_Class(g, members, nodes, (lo[0], lo[1], lo[2]), (hi[0], hi[1], hi[2]), (want[0], want[1], want[2])))
    return out


def _range(lo: float, hi: float, g: int) -> range:
    """Integers n with lo <= g*n <= hi."""
    return range(math.ceil(lo / g - EPS), math.floor(hi / g + EPS) + 1)


def _rows(
    c: _Class,
    state: State,
    placed: int,
    slack: tuple[Vec, Vec],
    windows: Sequence[tuple[float, float]],
    spare: float,
) -> Iterator[tuple[int, range]]:
    """Class vectors that keep every market reachable (slack = GPUs the later classes must
    and can still add per market: their lo and hi) and cost at most `spare` GPUs, as rows:
    each reserved node count with its range of spot counts (on-demand takes the rest)."""
    g, (rlo, rhi) = c.gpus_per_node, slack
    s_r, s_s = state
    s_o = placed - s_r - s_s
    (lr, ur), (ls, us), (lo_, uo) = windows
    (w_r, w_s, w_o), near = c.ideal, spare / g
    r_lo = max(lr - rhi[0] - s_r, g * c.lo[0], g * (w_r - near))
    r_hi = min(ur - rlo[0] - s_r, g * c.hi[0], g * (w_r + near))
    # n_o = rest - n_s must respect the class box, the on-demand window and the spare cost.
    o_lo = max(lo_ - rhi[2] - s_o, g * c.lo[2], g * (w_o - near))
    o_hi = min(uo - rlo[2] - s_o, g * c.hi[2], g * (w_o + near))
    o = _range(o_lo, o_hi, g)
    for n_r in _range(r_lo, r_hi, g):
        rest = c.nodes - n_r
        s_from = max(c.lo[1], rest - (o.stop - 1), math.ceil(max((ls - rhi[1] - s_s) / g, w_s - near) - EPS))
        s_to = min(c.hi[1], rest - o.start, math.floor(min((us - rlo[1] - s_s) / g, w_s + near) + EPS))
        if s_from <= s_to:
            yield n_r, range(s_from, s_to + 1)


Entry = tuple[float, State | None, Vec | None]


def _search(
    classes: Sequence[_Class],
    targets: Mapping[Market, float],
    tolerance: Mapping[Market, int],
    limit: int,
    bounded: bool,
) -> tuple[list[Vec] | None, bool]:
    windows = [(targets[m] - tolerance[m] - EPS, targets[m] + tolerance[m] + EPS) for m in MARKET_ORDER]
    order = sorted(range(len(classes)), key=lambda k: (-classes[k].gpus, k))
    layers: list[dict[State, Entry]] = [{(0, 0): (0.0, None, None)}]
    placed, exact = 0, True
    reach, budget = _budget(classes, targets, tolerance) if bounded else (math.inf, math.inf)
    ref = [0.0, 0.0, 0.0]  # the ideal's GPUs per market over the classes placed so far
    for pos, k in enumerate(order):
        c, later = classes[k], [classes[j] for j in order[pos + 1 :]]
        slack = (
            _vec(sum(x.gpus_per_node * x.lo[i] for x in later) for i in range(3)),
            _vec(sum(x.gpus_per_node * x.hi[i] for x in later) for i in range(3)),
        )
        g = c.gpus_per_node
        ref = [r + g * w for r, w in zip(ref, c.ideal, strict=True)]
        if bounded and not later:
            last = _last_class(c, layers[-1], placed, windows, (targets, tolerance), (ref, reach, budget), limit)
            if last is not None:
                layers.append(last)
                placed += g * c.nodes
                break
        nxt = _layer(c, layers[-1], placed, slack, windows, (ref, reach, budget))
        if len(nxt) > limit:
            exact = False
            nxt = dict(sorted(nxt.items(), key=lambda kv: (kv[1][0], kv[0]))[:limit])
        layers.append(nxt)
        placed += c.gpus_per_node * c.nodes
    if not layers[-1]:
        return None, exact

    def score(item: tuple[State, Entry]) -> tuple[float, float, float, State]:
        state, (cost, _, _) = item
        return (*_deviation(state, placed, targets, tolerance), round(cost, 9), state)

    state = min(layers[-1].items(), key=score)[0]
    vectors: dict[int, Vec] = {}
    for pos in range(len(order), 0, -1):
        _, prev, vec = layers[pos][state]
        assert prev is not None and vec is not None
        vectors[order[pos - 1]] = vec
        state = prev
    return [vectors[k] for k in range(len(classes))], exact


def _layer(
    c: _Class,
    states: Mapping[State, Entry],
    placed: int,
    slack: tuple[Vec, Vec],
    windows: Sequence[tuple[float, float]],
    bound: tuple[Sequence[float], float, float],
) -> dict[State, Entry]:
    """The next layer: every state reachable from `states` with the class's vectors of `_rows`
    whose cost, plus what the later classes must at least spend to come back into the windows,
    stays within the budget; each keeps its cheapest path (the first found on a tie).

    The search's hot loop (hundreds of thousands of pairs on a 200-pool fleet), written row by
    row: what depends only on the reserved count is computed once per row. Every sum is formed
    in the same order as `_pair_cost` and `_away` (which say what it computes), so the floats,
    and with them every comparison and tie, are the same."""
    g, (w_r, w_s, w_o) = c.gpus_per_node, c.ideal
    (ref_r, ref_s, _), reach, budget = bound
    ref_rs = ref_r + ref_s
    nxt: dict[State, Entry] = {}
    for state, (cost, _, _) in states.items():
        s_r, s_s = state
        for n_r, row in _rows(c, state, placed, slack, windows, budget - cost):
            a_r = abs(n_r - w_r)
            new_r = s_r + g * n_r
            away_r = abs(new_r - ref_r)
            rest_rs = ref_rs - new_r
            rest = c.nodes - n_r
            for n_s in row:
                n_o = rest - n_s
                total = cost + g * (a_r + abs(n_s - w_s) + abs(n_o - w_o))
                new_s = s_s + g * n_s
                # Bound: the later classes must move at least |offset| - reach GPUs back.
                over = away_r + abs(new_s - ref_s) + abs(rest_rs - new_s) - reach
                if (total + over if over > 0.0 else total) > budget:
                    continue
                new = (new_r, new_s)
                kept = nxt.get(new)
                if kept is None or total < kept[0] - EPS:
                    nxt[new] = (total, state, (n_r, n_s, n_o))
    return nxt


def _pair_cost(c: _Class, cost: float, vec: Vec) -> float:
    """The cost of a path after the class takes `vec`: GPUs away from the ideal class split."""
    g = c.gpus_per_node
    return cost + g * (abs(vec[0] - c.ideal[0]) + abs(vec[1] - c.ideal[1]) + abs(vec[2] - c.ideal[2]))


def _away(new: State, ref: Sequence[float]) -> float:
    """L1 distance (over the three markets) of the totals `new` from the ideal's `ref`."""
    return abs(new[0] - ref[0]) + abs(new[1] - ref[1]) + abs(ref[0] + ref[1] - new[0] - new[1])


def _last_class(
    c: _Class,
    states: Mapping[State, Entry],
    placed: int,
    windows: Sequence[tuple[float, float]],
    goal: tuple[Mapping[Market, float], Mapping[Market, int]],
    bound: tuple[Sequence[float], float, float],
    limit: int,
) -> dict[State, Entry] | None:
    """The last layer, only as far as the choice needs it: the totals in the windows, best score
    first; the first score some state reaches wins, so the other totals are never costed.
    The entries it keeps are the ones the full layer would hold for those totals (same order of
    states, same tie rule). None when the state limit could cut the layer: then the full one."""
    g, total = c.gpus_per_node, placed + c.gpus_per_node * c.nodes
    (lr, ur), (ls, us), (lo_, uo) = windows
    candidates = [
        (a, b)
        for a in range(math.ceil(lr), math.floor(ur) + 1)
        for b in range(math.ceil(ls), math.floor(us) + 1)
        if lo_ <= total - a - b <= uo
    ]
    if len(candidates) > limit:
        return None
    levels: dict[tuple[float, float], list[State]] = {}
    for point in candidates:
        levels.setdefault(_deviation(point, total, *goal), []).append(point)
    ref, reach, budget = bound
    for key in sorted(levels):
        best: dict[State, Entry] = {}
        for state, (cost, _, _) in states.items():
            for point in levels[key]:
                dr, ds = point[0] - state[0], point[1] - state[1]
                if dr % g or ds % g:
                    continue
                vec = (dr // g, ds // g, c.nodes - dr // g - ds // g)
                if not all(c.lo[i] <= vec[i] <= c.hi[i] for i in range(3)):
                    continue
                spent = _pair_cost(c, cost, vec)
                if spent + max(0.0, _away(point, ref) - reach) > budget:
                    continue
                if point not in best or spent < best[point][0] - EPS:
                    best[point] = (spent, state, vec)
        if best:
            return best
    return {}


def _deviation(
    point: State, total: int, targets: Mapping[Market, float], tolerance: Mapping[Market, int]
) -> tuple[float, float]:
    """(worst deviation / tolerance, sum of deviations) of the totals `point` + the rest."""
    s_r, s_s = point
    dev = [abs(s - targets[m]) for s, m in zip((s_r, s_s, total - s_r - s_s), MARKET_ORDER, strict=True)]
    worst = max((d / tolerance[m] for d, m in zip(dev, MARKET_ORDER, strict=True) if tolerance[m]), default=0.0)
    return (round(worst, 9), round(sum(dev), 9))


def _budget(
    classes: Sequence[_Class], targets: Mapping[Market, float], tolerance: Mapping[Market, int]
) -> tuple[float, float]:
    """(reach, budget): every total S in the windows is within `reach` GPUs (L1) of the ideal's
    totals, and if S is reachable at all, its cheapest class vectors cost at most `budget`.

    Why (cost = sum over classes of g * |n - ideal| = sum of |u_k|, u_k the class's GPUs minus
    its ideal's): take the cheapest vectors for S. With L = lcm of the GPU sizes, if one class
    has u[i] >= L, u[j] <= -L and another u[j] >= L, u[i] <= -L, moving L GPUs of each back
    toward its ideal keeps S and every box, and costs 4L less; the same holds for a cycle of
    three classes over i -> j -> k -> i. So no such pair or cycle exists: the markets have an
    order (top, middle, bottom) in which no class moves L or more GPUs "up". Then no class has
    u[top] <= -2L or u[bottom] >= 2L, so summing over K classes, |u[top]| and |u[bottom]| add
    up to at most |S - ideal| in those markets + 4KL each, and as each u sums to zero, the
    middle market's |u| is at most the other two's: cost <= 2 |S - ideal| + 16KL. This bound
    does not grow with the number of pools, so neither does the number of states the search keeps.
    """
    lcm = math.lcm(*(c.gpus_per_node for c in classes)) if classes else 1
    ideal = [sum(c.gpus_per_node * c.ideal[i] for c in classes) for i in range(3)]
    off = sum(abs(targets[m] - ideal[i]) for i, m in enumerate(MARKET_ORDER))
    reach = sum(tolerance[m] for m in MARKET_ORDER) + off + EPS
    return reach, 2 * reach + 16 * len(classes) * lcm + 1e-6


def _vec(values: Iterator[int]) -> Vec:
    a, b, c = values
    return (a, b, c)
