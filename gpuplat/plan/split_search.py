"""The dynamic programme of the market split (see split.py for the problem and why it is exact).

Layers over the GPU-size classes, the most GPUs first; a state is (GPUs on reserved, GPUs on
spot) so far and keeps its cheapest path; a cost bound (`budget_of`) keeps the states a bounded
neighbourhood of the ideal split; the last class is costed only for the window totals, best
score first.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from gpuplat.model import MARKET_ORDER, Market

EPS = 1e-9
Vec = tuple[int, int, int]  # nodes per market in MARKET_ORDER
State = tuple[int, int]  # GPUs on reserved and spot so far


@dataclass(frozen=True)
class SizeClass:
    gpus_per_node: int
    members: tuple[int, ...]
    nodes: int
    lo: Vec
    hi: Vec
    ideal: tuple[float, float, float]

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes


def _range(lo: float, hi: float, g: int) -> range:
    """Integers n with lo <= g*n <= hi."""
    return range(math.ceil(lo / g - EPS), math.floor(hi / g + EPS) + 1)


def rows(
    c: SizeClass,
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


Layers = list[dict[State, Entry]]


@dataclass(frozen=True)
class Run:
    """One pass of the dynamic programme under one cost bound."""

    layers: Layers
    order: tuple[int, ...]  # class indices, in the order the layers place them
    placed: int  # GPUs of all classes
    exact: bool  # no layer was cut to the state limit
    first_level: bool  # the last layer is `last_class`'s, at the best score any window total has


def best_total(run: Run, targets: Mapping[Market, float], tolerance: Mapping[Market, int]) -> State:
    def score(item: tuple[State, Entry]) -> tuple[float, float, float, State]:
        state, (cost, _, _) = item
        return (*deviation(state, run.placed, targets, tolerance), round(cost, 9), state)

    return min(run.layers[-1].items(), key=score)[0]


def run_search(
    classes: Sequence[SizeClass],
    goal: tuple[Mapping[Market, float], Mapping[Market, int]],
    limit: int,
    reach: float,
    budget: float,
) -> Run:
    targets, tolerance = goal
    windows = [(targets[m] - tolerance[m] - EPS, targets[m] + tolerance[m] + EPS) for m in MARKET_ORDER]
    order = tuple(sorted(range(len(classes)), key=lambda k: (-classes[k].gpus, k)))
    layers: Layers = [{(0, 0): (0.0, None, None)}]
    placed, exact, first_level = 0, True, False
    ref = [0.0, 0.0, 0.0]  # the ideal's GPUs per market over the classes placed so far
    for pos, k in enumerate(order):
        c, later = classes[k], [classes[j] for j in order[pos + 1 :]]
        g = c.gpus_per_node
        ref = [r + g * w for r, w in zip(ref, c.ideal, strict=True)]
        if budget < math.inf and not later:
            last = last_class(c, layers[-1], placed, windows, goal, (ref, reach, budget), limit, _steps(classes))
            if last is not None:
                layers.append(last[0])
                first_level = last[1]
                placed += g * c.nodes
                break
        nxt = layer(c, layers[-1], placed, slack_of(later), windows, (ref, reach, budget))
        if len(nxt) > limit:
            exact = False
            nxt = dict(sorted(nxt.items(), key=lambda kv: (kv[1][0], kv[0]))[:limit])
        layers.append(nxt)
        placed += c.gpus_per_node * c.nodes
    return Run(layers, order, placed, exact, first_level)


def slack_of(later: Sequence[SizeClass]) -> tuple[Vec, Vec]:
    return (
        _vec(sum(x.gpus_per_node * x.lo[i] for x in later) for i in range(3)),
        _vec(sum(x.gpus_per_node * x.hi[i] for x in later) for i in range(3)),
    )


def layer(
    c: SizeClass,
    states: Mapping[State, Entry],
    placed: int,
    slack: tuple[Vec, Vec],
    windows: Sequence[tuple[float, float]],
    bound: tuple[Sequence[float], float, float],
) -> dict[State, Entry]:
    """The next layer: every state reachable from `states` with the class's vectors of `rows`
    whose cost, plus what the later classes must at least spend to come back into the windows,
    stays within the budget; each keeps its cheapest path (the first found on a tie).

    The search's hot loop (hundreds of thousands of pairs on a 200-pool fleet), written row by
    row: what depends only on the reserved count is computed once per row. Every sum is formed
    in the same order as `pair_cost` and `_away` (which say what it computes), so the floats,
    and with them every comparison and tie, are the same."""
    g, (w_r, w_s, w_o) = c.gpus_per_node, c.ideal
    (ref_r, ref_s, _), reach, budget = bound
    ref_rs = ref_r + ref_s
    nxt: dict[State, Entry] = {}
    for state, (cost, _, _) in states.items():
        s_r, s_s = state
        for n_r, row in rows(c, state, placed, slack, windows, budget - cost):
            a_r = abs(n_r - w_r)
            new_r = s_r + g * n_r
            away_r = abs(new_r - ref_r)
            rest_rs = ref_rs - new_r
            rest = c.nodes - n_r
            row = _within_bound(
                row,
                (w_s, rest - w_o, (ref_s - s_s) / g, (rest_rs - s_s) / g),
                (budget - (cost + g * a_r + away_r - reach)) / g,
            )
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


def _within_bound(row: range, points: tuple[float, float, float, float], radius: float) -> range:
    """The part of `row` where the sum of distances from n_s to the four `points` is at most
    `radius` (plus a margin far above rounding), in closed form.

    Along a row (reserved count fixed) a pair's cost plus its distance bound is
    K + g * sum_i |n_s - p_i|: the spot and on-demand costs and the two market offsets of the
    bound, each linear in n_s with slope +-g. That is at most what the search tests (which
    clips the bound at 0), so every n_s the search would keep is inside the returned range and
    the search still tests each one exactly; the rest of the row, most of it on a large
    fleet, is never visited. The sum is convex: flat between the middle two points, slope 2
    then 4 outside them."""
    if radius == math.inf:  # the unbounded search (bounded=False)
        return row
    q1, q2, q3, q4 = sorted(points)
    slack = radius + 1e-6 - (q3 + q4 - q1 - q2)
    if slack < 0:
        return range(0)
    left = (q2 + q3 + q4 - q1 - radius - 1e-6) / 2
    if left < q1:
        left = (q1 + q2 + q3 + q4 - radius - 1e-6) / 4
    right = (radius + 1e-6 + q1 + q2 + q3 - q4) / 2
    if right > q4:
        right = (radius + 1e-6 + q1 + q2 + q3 + q4) / 4
    return range(max(row.start, math.ceil(left - 1e-6)), min(row.stop, math.floor(right + 1e-6) + 1))


def pair_cost(c: SizeClass, cost: float, vec: Vec) -> float:
    """The cost of a path after the class takes `vec`: GPUs away from the ideal class split."""
    g = c.gpus_per_node
    return cost + g * (abs(vec[0] - c.ideal[0]) + abs(vec[1] - c.ideal[1]) + abs(vec[2] - c.ideal[2]))


def _away(new: State, ref: Sequence[float]) -> float:
    """L1 distance (over the three markets) of the totals `new` from the ideal's `ref`."""
    return abs(new[0] - ref[0]) + abs(new[1] - ref[1]) + abs(ref[0] + ref[1] - new[0] - new[1])


def last_class(
    c: SizeClass,
    states: Mapping[State, Entry],
    placed: int,
    windows: Sequence[tuple[float, float]],
    goal: tuple[Mapping[Market, float], Mapping[Market, int]],
    bound: tuple[Sequence[float], float, float],
    limit: int,
    steps: Sequence[tuple[int, int]],
) -> tuple[dict[State, Entry], bool] | None:
    """The last layer, only as far as the choice needs it: the totals in the windows, best score
    first; the first score some state reaches wins, so the other totals are never costed.
    The entries it keeps are the ones the full layer would hold for those totals (same order of
    states, same tie rule), and whether they are at the best score of all window totals that
    `steps` (`_steps`) does not rule out. None when the state limit could cut the layer: then
    the full one."""
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
    for point in filter(lambda p: _congruent(p, total, steps), candidates):
        levels.setdefault(deviation(point, total, *goal), []).append(point)
    ref, reach, budget = bound
    for rank, key in enumerate(sorted(levels)):
        best: dict[State, Entry] = {}
        for state, (cost, _, _) in states.items():
            for point in levels[key]:
                dr, ds = point[0] - state[0], point[1] - state[1]
                if dr % g or ds % g:
                    continue
                vec = (dr // g, ds // g, c.nodes - dr // g - ds // g)
                if not all(c.lo[i] <= vec[i] <= c.hi[i] for i in range(3)):
                    continue
                spent = pair_cost(c, cost, vec)
                if spent + max(0.0, _away(point, ref) - reach) > budget:
                    continue
                if point not in best or spent < best[point][0] - EPS:
                    best[point] = (spent, state, vec)
        if best:
            return best, rank == 0
    return {}, False


def _steps(classes: Sequence[SizeClass]) -> list[tuple[int, int]]:
    """Per market, (d, base): every total the classes can put on it is base + a multiple of d.
    d is the gcd of the GPU sizes of the classes whose node count there may vary (lo < hi);
    the others always add g * lo. d = 0: the total is base, exactly."""
    steps: list[tuple[int, int]] = []
    for i in range(3):
        d = math.gcd(*(c.gpus_per_node for c in classes if c.lo[i] < c.hi[i]), 0)
        base = sum(c.gpus_per_node * c.lo[i] for c in classes if c.lo[i] == c.hi[i])
        steps.append((d, base))
    return steps


def _congruent(point: State, total: int, steps: Sequence[tuple[int, int]]) -> bool:
    """Whether the window total `point` (and the rest on-demand) agrees with `steps`: a
    total that does not is reached by no split, so leaving it out changes no result."""
    for value, (d, base) in zip((point[0], point[1], total - point[0] - point[1]), steps, strict=True):
        if (value - base) % d if d else value != base:
            return False
    return True


def deviation(
    point: State, total: int, targets: Mapping[Market, float], tolerance: Mapping[Market, int]
) -> tuple[float, float]:
    """(worst deviation / tolerance, sum of deviations) of the totals `point` + the rest."""
    s_r, s_s = point
    dev = [abs(s - targets[m]) for s, m in zip((s_r, s_s, total - s_r - s_s), MARKET_ORDER, strict=True)]
    worst = max((d / tolerance[m] for d, m in zip(dev, MARKET_ORDER, strict=True) if tolerance[m]), default=0.0)
    return (round(worst, 9), round(sum(dev), 9))


def budget_of(
    classes: Sequence[SizeClass], targets: Mapping[Market, float], tolerance: Mapping[Market, int]
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
