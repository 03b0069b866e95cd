"""The split's search under smaller cost bounds first: the full budget's answer, found early.

The budget (split_search.budget_of) is a worst case; on a large fleet the chosen split costs a
few dozen GPUs, and most of the states within the budget are far costlier. `cheap_run` tries
bounds from twice the reach up, and returns a run only when its answer is provably the one
the full budget gives; otherwise the caller runs the full budget.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from gpuplat.model import MARKET_ORDER, Market
from gpuplat.plan.split_search import (
    EPS,
    Entry,
    Run,
    SizeClass,
    State,
    Vec,
    best_total,
    layer,
    pair_cost,
    rows,
    run_search,
    slack_of,
)


def cheap_run(
    classes: Sequence[SizeClass],
    goal: tuple[Mapping[Market, float], Mapping[Market, int]],
    limit: int,
    reach: float,
    budget: float,
) -> Run | None:
    """The full run's answer from runs under smaller cost bounds, or None (then the full run).

    The budget is a worst case; on a large fleet the chosen split costs a few dozen GPUs at
    most, and the states within the budget are mostly far costlier. Under a bound b, every
    window total whose cheapest vectors cost at most b - 1e-6 is found at that cheapest cost,
    with the same path (states are visited in the same order). So when the best total found
    has the best score any window total has and costs less than b, it is the full run's
    choice too. What could still differ is a tie: the full run keeps the first path in the
    order of its own layers, and a layer built from a layer other than the first is ordered
    by where each state was first reached, which a smaller bound can move. With at most three
    classes only the last step has that, and `_break_tie` repeats the full run's order for it.
    """
    trial = 2 * reach
    while trial < budget / 2:  # from there on, the full run costs about as much
        run = run_search(classes, goal, limit, reach, trial)
        if run.first_level and run.exact and run.layers[-1]:
            state = best_total(run, *goal)
            cheap_enough = run.layers[-1][state][0] <= trial - 1e-6
            if cheap_enough and _break_tie(run, classes, goal, limit, (reach, budget), state):
                return run
        trial *= 2
    return None


def _break_tie(
    run: Run,
    classes: Sequence[SizeClass],
    goal: tuple[Mapping[Market, float], Mapping[Market, int]],
    limit: int,
    bound: tuple[float, float],
    point: State,
) -> bool:
    """Make the chosen total's entry the full run's: False when that cannot be told here."""
    if len(run.order) < 3:
        return True  # the last layer's states come from the first layer or the start: same order
    reach, budget = bound
    first, second, last = (classes[k] for k in run.order)
    targets, tolerance = goal
    windows = [(targets[m] - tolerance[m] - EPS, targets[m] + tolerance[m] + EPS) for m in MARKET_ORDER]
    ref1 = [first.gpus_per_node * w for w in first.ideal]
    ref2 = [r + second.gpus_per_node * w for r, w in zip(ref1, second.ideal, strict=True)]
    if _lattice_points(ref2, budget + reach, math.gcd(first.gpus_per_node, second.gpus_per_node)) > limit:
        return False  # the full run might cut its second layer to the limit
    spent = run.layers[-1][point][0]
    tied: list[tuple[float, State, Vec]] = []
    for state, (cost, _, _) in run.layers[-2].items():
        vec = _vector_to(last, state, point)
        if vec is not None and pair_cost(last, cost, vec) <= spent + 1e-6:
            tied.append((pair_cost(last, cost, vec), state, vec))
    if max(t[0] for t in tied) - min(t[0] for t in tied) >= EPS / 2:
        return False  # a near tie the full run's EPS rule might break either way
    if len(tied) == 1:
        return True
    full_first = layer(first, run.layers[0], 0, slack_of([second, last]), windows, (ref1, reach, budget))
    placed = first.gpus_per_node * first.nodes
    position = {
        t[1]: _first_reached(second, full_first, t[1], placed, slack_of([last]), windows, (ref2, reach, budget))
        for t in tied
    }
    # Reached from the same state, totals come in the order of their vectors, i.e. their own.
    run.layers[-1][point] = min(tied, key=lambda t: (position[t[1]], t[1]))
    return True


def _vector_to(c: SizeClass, state: State, point: State) -> Vec | None:
    g = c.gpus_per_node
    dr, ds = point[0] - state[0], point[1] - state[1]
    if dr % g or ds % g:
        return None
    vec = (dr // g, ds // g, c.nodes - dr // g - ds // g)
    return vec if all(c.lo[i] <= vec[i] <= c.hi[i] for i in range(3)) else None


def _first_reached(
    c: SizeClass,
    states: Mapping[State, Entry],
    target: State,
    placed: int,
    slack: tuple[Vec, Vec],
    windows: Sequence[tuple[float, float]],
    bound: tuple[Sequence[float], float, float],
) -> int:
    """The index of the first of `states` from which `layer` reaches `target`: where the
    layer inserts it (one vector leads from a state to a given total)."""
    ref, reach, budget = bound
    for index, (state, (cost, _, _)) in enumerate(states.items()):
        vec = _vector_to(c, state, target)
        if vec is None:
            continue
        for n_r, row in rows(c, state, placed, slack, windows, budget - cost):
            if n_r == vec[0] and vec[1] in row and _kept(c, cost, state, vec, ref, reach) <= budget:
                return index
    raise AssertionError("a tied state is reached in the full layer")


def _kept(c: SizeClass, cost: float, state: State, vec: Vec, ref: Sequence[float], reach: float) -> float:
    """What `layer` compares with the budget for one pair, computed as it does."""
    g, (w_r, w_s, w_o) = c.gpus_per_node, c.ideal
    n_r, n_s, _ = vec
    a_r = abs(n_r - w_r)
    new_r = state[0] + g * n_r
    away_r = abs(new_r - ref[0])
    rest_rs = ref[0] + ref[1] - new_r
    n_o = c.nodes - n_r - n_s
    total = cost + g * (a_r + abs(n_s - w_s) + abs(n_o - w_o))
    new_s = state[1] + g * n_s
    over = away_r + abs(new_s - ref[1]) + abs(rest_rs - new_s) - reach
    return total + over if over > 0.0 else total


def _lattice_points(ref: Sequence[float], radius: float, d: int) -> int:
    """How many (r, s), multiples of d, lie within L1 distance `radius` of `ref` over the
    three markets (r, s and the rest): a bound on the states a layer can hold."""
    count = 0
    for r in range(math.ceil((ref[0] - radius) / d) * d, math.floor((ref[0] + radius) / d) * d + 1, d):
        spare = radius - abs(r - ref[0])
        a, b = ref[1], ref[0] + ref[1] - r  # |s - a| + |b - s| <= spare
        if spare >= abs(a - b):
            lo, hi = (a + b - spare) / 2, (a + b + spare) / 2
            count += max(0, math.floor(hi / d) - math.ceil(lo / d) + 1)
    return count
