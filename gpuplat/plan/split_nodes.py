"""The last step of the market split: a GPU-size class's node counts per market, given to its pools.

Gale's theorem (see split.py) guarantees the counts fit the pools' allowed markets; this finds
one such assignment close to each pool's ideal (fractional) split: the ideal rounded down
first, then the remaining nodes placed along augmenting paths, as in a maximum flow.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

from gpuplat.model import MARKET_ORDER, Market
from gpuplat.plan.split_types import SplitPool

EPS = 1e-9


def decompose(
    pools: Sequence[SplitPool],
    members: Sequence[int],
    g: int,
    vec: tuple[int, int, int],
    ideal: Sequence[Mapping[Market, float]],
    out: list[dict[Market, int]],
) -> None:
    """Give a class's node counts per market (`vec`, in MARKET_ORDER) to its pools (`members`,
    `g` GPUs per node): the ideal rounded down, then max-flow."""
    supply = {i: pools[i].max_nodes for i in members}
    demand = dict(zip(MARKET_ORDER, vec, strict=True))
    for i in members:
        for m in pools[i].markets:
            take = min(math.floor(ideal[i][m] / g + EPS), supply[i], demand[m])
            out[i][m] += take
            supply[i] -= take
            demand[m] -= take
    while any(supply.values()):
        path = _augmenting_path(pools, members, supply, demand, out)
        assert path is not None, "Gale's condition guarantees an augmenting path"
        # path alternates pool, market, pool, market ...: +1 on pool->market, -1 back.
        amount = min(supply[path[0][0]], demand[path[-1][1]])
        for (_, m), (j, _) in itertools.pairwise(path):
            amount = min(amount, out[j][m])
        for step, (i, m) in enumerate(path):
            out[i][m] += amount
            if step + 1 < len(path):
                out[path[step + 1][0]][m] -= amount
        supply[path[0][0]] -= amount
        demand[path[-1][1]] -= amount


def _augmenting_path(
    pools: Sequence[SplitPool],
    members: Sequence[int],
    supply: Mapping[int, int],
    demand: Mapping[Market, int],
    out: Sequence[Mapping[Market, int]],
) -> list[tuple[int, Market]] | None:
    """Breadth-first: pool with spare nodes -> market -> (pool giving up that market) -> ...
    Returns the (pool, market) edges to increase; each next pool gives up the previous market."""
    frontier = [i for i in members if supply[i] > 0]
    came: dict[Market, tuple[int, Market | None]] = {}
    seen_pools = set(frontier)
    parent_market: dict[int, Market | None] = dict.fromkeys(frontier)
    while frontier:
        nxt: list[int] = []
        for i in frontier:
            for m in pools[i].markets:
                if m in came:
                    continue
                came[m] = (i, parent_market[i])
                if demand[m] > 0:
                    edges: list[tuple[int, Market]] = []
                    cur: Market | None = m
                    while cur is not None:
                        pool, prev = came[cur]
                        edges.append((pool, cur))
                        cur = prev
                    return edges[::-1]
                for j in members:
                    if j not in seen_pools and out[j].get(m, 0) > 0:
                        seen_pools.add(j)
                        parent_market[j] = m
                        nxt.append(j)
        frontier = nxt
    return None
