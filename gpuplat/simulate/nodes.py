"""Node-level packing of one flavor's nodes (`Options(node_packing=True)`).

A job's pods go on nodes, not into a flavor-wide pool of units: a job no wider than a node on the
fullest node it fits on (best fit, as the scheduler's MostAllocated scoring packs), a wider one on
whole free nodes plus, for a remainder, the fullest node that holds it. All of a job's pods start
together or none does (gang start, as Kueue admits a workload whole and a training job runs only
with every worker): a job waits while the flavor's free units would hold it but no set of nodes
does. That wait is *fragmentation*, counted by the engine.

Topology domains (a fabric flavor Kueue places by its Topology, gpuplat/plan/fabric.py's
`topology_domains`): the flavor's nodes in domains of a leaf's nodes (and, on 3 tiers, a pod's),
cabled in order, node 0 first. A job that needs more than one node runs within one domain of the
narrowest level that can hold it (as `podset-required-topology` at that level asks), in the
fullest domain that holds it (best fit); a job wider than every domain runs anywhere. A job that
waits while the flavor's nodes would hold it but no one domain does waits on the *topology*,
counted apart from fragmentation.

Nodes are counted by their free units (one ordered set of node indices per level), so a fit
costs at most `per_node` look-ups whatever the fleet's size (and one per domain of its level).

On a fleet whose nodes come and go (an autoscaled pool, spot interruptions, Capacity Block
windows) the map has a slot per node the NodePool may run: a launched node takes the first empty
slot (the first free port of the fabric, so domains fill in order), and a removed one leaves its
slot empty.
"""

from __future__ import annotations

from itertools import islice

Pods = list[tuple[int, int]]  # (node index, units) of one job
FRAGMENTATION, TOPOLOGY = 0, 1  # why a job waits while the flavor's free units would hold it
ABSENT = -1  # the free units of an empty slot: no node there


class NodeMap:
    def __init__(self, nodes: int, per_node: int, domains: tuple[int, ...] = (), slots: int = 0) -> None:
        """`nodes` present in the first of `slots` (at least `nodes`) slots."""
        slots = max(slots, nodes)
        self.per_node = per_node
        self.free = [per_node] * nodes + [ABSENT] * (slots - nodes)
        self.absent = set(range(nodes, slots))
        self.total = nodes * per_node  # free units on every node together
        self.by_free: list[dict[int, None]] = [{} for _ in range(per_node + 1)]
        self.by_free[per_node] = dict.fromkeys(range(nodes))
        # Per level, narrowest first: its nodes per domain and each domain's own map.
        self.levels = [
            (
                size,
                [
                    NodeMap(min(max(nodes - first, 0), size), per_node, slots=min(size, slots - first))
                    for first in range(0, slots, size)
                ],
            )
            for size in domains
        ]

    def add(self) -> int:
        """A node joins in the first empty slot; -> its index."""
        node = min(self.absent)
        self._set(node, self.per_node)
        return node

    def remove(self, node: int) -> None:
        """An empty node leaves (its pods stopped first)."""
        assert self.free[node] == self.per_node, f"node {node} still runs pods"
        self._set(node, ABSENT)

    def _set(self, node: int, free: int) -> None:
        if free == ABSENT:
            del self.by_free[self.free[node]][node]
            self.absent.add(node)
            self.total -= self.per_node
        else:
            self.by_free[free][node] = None
            self.absent.discard(node)
            self.total += self.per_node
        self.free[node] = free
        for size, maps in self.levels:
            maps[node // size]._set(node % size, free)

    def empty(self) -> list[int]:
        """The nodes running no pod, the last slots first (what consolidation removes first)."""
        return sorted(self.by_free[self.per_node], reverse=True)

    def empty_count(self) -> int:
        return len(self.by_free[self.per_node])

    def present_count(self) -> int:
        return len(self.free) - len(self.absent)

    def node_of(self, index: int) -> int:
        """The node of a pod's index (gpus.py's pods are GPUs)."""
        return index

    def emptiest(self, count: int) -> list[int]:
        """The `count` nodes with the most free units (what a closing window terminates first)."""
        present = (n for n, free in enumerate(self.free) if free != ABSENT)
        return sorted(present, key=lambda n: (-self.free[n], -n))[:count]

    def _fullest_holding(self, units: int, below: int) -> int | None:
        """The node with the fewest free units that still holds `units`, among those with less than `below` free."""
        for level in range(units, below):
            if self.by_free[level]:
                return next(iter(self.by_free[level]))
        return None

    def fit(self, units: int) -> Pods | None:
        """Where a job of `units` would run now, or None when no set of nodes (in one domain) holds it."""
        need = -(-units // self.per_node)
        level = next(((size, maps) for size, maps in self.levels if size >= need), None) if need > 1 else None
        if level is None:
            return self.fit_anywhere(units)
        size, maps = level
        for index in sorted(range(len(maps)), key=lambda i: maps[i].total):  # the fullest domain first
            pods = maps[index].fit_anywhere(units) if maps[index].total >= units else None
            if pods is not None:
                return [(index * size + node, u) for node, u in pods]
        return None

    def waits_on(self, units: int) -> int:
        """Why a job of `units` that `fit` placed nowhere waits: no set of nodes, or no one domain, holds it."""
        return FRAGMENTATION if self.fit_anywhere(units) is None else TOPOLOGY

    def fit_anywhere(self, units: int) -> Pods | None:
        """Where a job of `units` would run now on any of the nodes, or None when no set of them holds it."""
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
            self.total -= sign * units
            for size, maps in self.levels:
                maps[node // size].take([(node % size, units)], sign)
