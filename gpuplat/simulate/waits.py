"""Node packing's waits (nodes.py): an admitted job that waits while its flavor's free units would
hold it, counted by why: no set of nodes holds it (fragmentation), or the nodes do but not
within one topology domain (topology). A job's wait ends when it starts, leaves the flavor, or
its flavor's free units no longer hold it (then it waits on capacity, as without node packing)."""

from __future__ import annotations

from gpuplat.simulate.nodes import FRAGMENTATION, TOPOLOGY

KINDS = (FRAGMENTATION, TOPOLOGY)


class NodeWaits:
    def __init__(self, gpus: list[int]) -> None:
        self.gpus = gpus
        self.since = [-1.0] * len(gpus)  # when the open wait began; -1: none open
        self.kind = [FRAGMENTATION] * len(gpus)
        self.gpu_s = [0.0 for _ in KINDS]  # GPU-seconds waited, by kind
        self.jobs: list[set[int]] = [set() for _ in KINDS]  # the jobs that ever waited so, by kind
        self.open = 0  # waits being counted now

    def mark(self, job: int, kind: int | None, t: float) -> None:
        """From `t` the job waits on nodes for `kind` (None: not on nodes, or not waiting)."""
        since = self.since[job]
        if since >= 0 and kind == self.kind[job]:
            return
        if since >= 0:
            self.gpu_s[self.kind[job]] += (t - since) * self.gpus[job]
            self.since[job] = -1.0
            self.open -= 1
        if kind is not None:
            self.since[job], self.kind[job] = t, kind
            self.jobs[kind].add(job)
            self.open += 1
