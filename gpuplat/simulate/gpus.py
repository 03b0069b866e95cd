"""GPU-level placement of a fractional pool's pods (`Options(node_packing=True)` on a fractional pool).

The pool's scheduler (HAMi, as the platform deploys it) places a pod of a share of one GPU on one
GPU: it filters the GPUs whose free cores and memory hold the pod's, then scores the nodes left
and, on the chosen node, its GPUs, by the spec's `scheduling.gpuScheduler.policy` (the emitted
`nodeSchedulerPolicy` and `gpuSchedulerPolicy`):

- spread: the least-used node first, score 1/(1+usage) (usage: the node's allocated share), and
  on it the GPU with the most free;
- binpack: the most-used node first, and on it the fullest GPU that holds the pod.

A job's share is its units: `fraction` x the pool's units per GPU (its `replicas`, HAMi's tasks
per GPU), rounded, at least one. The trace has no memory column, so a job's memory share is its
core share and one number filters both; a pod takes one of the GPU's task slots, and as every pod
takes at least one unit, the slots never run out before the cores do. Pods never span GPUs, so a
job waits while the flavor's free units would hold it but no one GPU does: fragmentation, counted
as node packing counts it (waits.py).

Besides the waits, the map integrates over time the GPUs holding a pod (what a sharing scheduler
saves against a GPU per job) and the nodes holding none (what consolidation could give back).
As nodes.py's map, it has a slot per node the NodePool may run: a launched node takes the first
empty slot, and only a node holding no pod leaves.
"""

from __future__ import annotations

from gpuplat.simulate.nodes import FRAGMENTATION, Pods
from gpuplat.vocabulary import WHOLE_GPU, GpuSchedulerPolicy

SPREAD, BINPACK = GpuSchedulerPolicy.SPREAD.value, GpuSchedulerPolicy.BINPACK.value
POLICIES = (SPREAD, BINPACK)


def gpu_policy(spec_policy: str, asked: str | None) -> str:
    """How a fractional pool's scheduler scores nodes and GPUs: the spec's, or the what-if's (whole
    GPUs are placed by the spec's policy: only the sharing differs)."""
    return spec_policy if asked in (None, WHOLE_GPU) else asked


class GpuMap:
    levels: tuple[()] = ()  # no topology domains: a pod holds one GPU of one node

    def __init__(self, nodes: int, gpus_per_node: int, per_gpu: int, policy: str, slots: int = 0) -> None:
        if policy not in POLICIES:
            raise ValueError(f"GPU scheduler policy {policy!r}: one of {', '.join(POLICIES)}")
        slots = max(slots, nodes)
        self.gpus_per_node, self.per_gpu, self.policy = gpus_per_node, per_gpu, policy
        self.free = [per_gpu] * (slots * gpus_per_node)  # free units of each GPU, node by node
        self.used = [0] * slots  # allocated units of each node
        self.present = [True] * nodes + [False] * (slots - nodes)
        self.with_free = [0] * (per_gpu + 1)  # present GPUs by their free units: does one hold a pod?
        self.with_free[per_gpu] = nodes * gpus_per_node
        self.occupied = 0  # GPUs holding a pod
        self.empty_nodes = nodes  # present nodes holding none
        self.last = 0.0
        self.occupied_gpu_s = 0.0
        self.empty_node_s = 0.0

    def advance(self, t: float) -> None:
        dt = t - self.last
        if dt > 0:
            self.occupied_gpu_s += self.occupied * dt
            self.empty_node_s += self.empty_nodes * dt
            self.last = t

    def fit(self, units: int) -> Pods | None:
        """The GPU a pod of `units` goes on now, as [(GPU index, units)], or None when no GPU holds it."""
        if units > self.per_gpu or not any(self.with_free[units:]):
            return None
        sign = 1 if self.policy == SPREAD else -1  # spread: the highest 1/(1+usage) is the lowest usage
        best: tuple[int, int, int] | None = None  # (node's rank, GPU's rank, GPU): the lowest wins
        for node, used in enumerate(self.used):
            if not self.present[node] or (best is not None and sign * used > best[0]):
                continue
            first = node * self.gpus_per_node
            for gpu in range(first, first + self.gpus_per_node):
                free = self.free[gpu]
                if free >= units and (best is None or (sign * used, -sign * free) < best[:2]):
                    best = (sign * used, -sign * free, gpu)
        return None if best is None else [(best[2], units)]

    def waits_on(self, units: int) -> int:
        return FRAGMENTATION

    def node_of(self, index: int) -> int:
        """The node of a pod's GPU index."""
        return index // self.gpus_per_node

    def add(self) -> int:
        node = self.present.index(False)
        self._presence(node, True)
        return node

    def remove(self, node: int) -> None:
        assert self.present[node] and self.used[node] == 0, f"node {node} still runs pods"
        self._presence(node, False)

    def _presence(self, node: int, present: bool) -> None:
        sign = 1 if present else -1
        self.present[node] = present
        self.with_free[self.per_gpu] += sign * self.gpus_per_node
        self.empty_nodes += sign

    def present_count(self) -> int:
        return self.present.count(True)

    def empty_count(self) -> int:
        return self.empty_nodes

    def empty(self) -> list[int]:
        return [n for n in reversed(range(len(self.used))) if self.present[n] and self.used[n] == 0]

    def emptiest(self, count: int) -> list[int]:
        present = (n for n in range(len(self.used)) if self.present[n])
        return sorted(present, key=lambda n: (self.used[n], -n))[:count]

    def take(self, pods: Pods, sign: int = 1) -> None:
        """Occupy the pods' units on their GPUs (sign -1: give them back); `advance` first."""
        for gpu, units in pods:
            node = gpu // self.gpus_per_node
            before = self.free[gpu]
            after = before - sign * units
            self.with_free[before] -= 1
            self.with_free[after] += 1
            self.free[gpu] = after
            self.occupied += (after < self.per_gpu) - (before < self.per_gpu)
            was_empty = self.used[node] == 0
            self.used[node] += sign * units
            self.empty_nodes += (self.used[node] == 0) - was_empty
