"""Node-level packing of one flavor's fixed nodes (`Options(node_packing=True)`).

A job's pods go on nodes, not into a flavor-wide pool of units: a job no wider than a node on the
fullest node it fits on (best fit, as the scheduler's MostAllocated scoring packs), a wider one on
whole free nodes plus, for a remainder, the fullest node that holds it. All of a job's pods start
together or none does (gang start, as Kueue admits a workload whole and a training job runs only
with every worker): a job waits while the flavor's free units would hold it but no set of nodes
does. That wait is *fragmentation*, counted by the engine.

Nodes are counted by their free units (one ordered set of node indices per level), so a fit
costs at most `per_node` look-ups whatever the fleet's size.
"""

from __future__ import annotations

from itertools import islice

Pods = list[tuple[int, int]]  # (node index, units) of one job


class NodeMap:
    def __init__(self, nodes: int, per_node: int) -> None:
        self.per_node = per_node
        self.free = [per_node] * nodes
        self.by_free: list[dict[int, None]] = [{} for _ in range(per_node + 1)]
        self.by_free[per_node] = dict.fromkeys(range(nodes))

    def _fullest_holding(self, units: int, below: int) -> int | None:
        """The node with the fewest free units that still holds `units`, among those with less than `below` free."""
        for level in range(units, below):
            if self.by_free[level]:
                return next(iter(self.by_free[level]))
        return None

    def fit(self, units: int) -> Pods | None:
        """Where a job of `units` would run now, or None when no set of nodes holds it."""
        p = self.per_node
        if units <= p:
            node = self._fullest_holding(units, p + 1)
            return None if node is None else [(node, units)]
        whole, rest = divmod(units, p)
        empty = self.by_free[p]
        if len(empty) < whole:
            return None
        pods = [(n, p) for n in islice(empty, whole)]
        if rest:
            node = self._fullest_holding(rest, p)  # a partly used node for the remainder first
            if node is None:
                if len(empty) == whole:
                    return None
                node = next(islice(empty, whole, None))
            pods.append((node, rest))
        return pods

    def take(self, pods: Pods, sign: int = 1) -> None:
        """Occupy the pods' units (sign -1: give them back)."""
        for node, units in pods:
            before = self.free[node]
            del self.by_free[before][node]
            self.free[node] = before - sign * units
            self.by_free[self.free[node]][node] = None
