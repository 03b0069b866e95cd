"""The event loop: a heap of (time, sequence, kind, a, b); one Random(seed) draws every spot
interruption and another each job's busy share (utilization.py), so a seed fixes the replay.
Jobs, Kueue admission, pods and nodes; the autoscaler's 30-second poll is autoscale.py's.

Admission (Kueue): each tenant's queue in order of priority then submission; BestEffortFIFO
looks `lookahead` heads deep (1 = StrictFIFO). A job is admitted on the first of its tenant's
flavors, in the plan's order, where the flavor's quota has room beside what hard tenants keep
unused (they lend none) and the tenant stays within its borrowing limit; failing that, within its
nominal quota, by preempting borrowers there and its own tenant's lower-priority jobs
(preemption.py). Admitted work waits for a node; Karpenter launches nodes for it up to the
flavor's NodePool limit, ready `boot_seconds` later. Nodes are packed perfectly (units), or with
`node_packing` node by node (nodes.py), a job's pods all at once and within one topology domain of
a fabric flavor: a node that goes (consolidated when empty, interrupted, its window closed) takes
its pods with it. With `outcomes`, a job drawn to fail stops at its drawn point, frees its GPUs
and quota, and queues again for the rest of its run.
"""

from __future__ import annotations

import heapq
import math
import random

from gpuplat.simulate import preemption
from gpuplat.simulate.fleet import SPOT_TOLERANT_BELOW, Flavor, Lending, SimPool, SimTenant
from gpuplat.simulate.gpus import GpuMap
from gpuplat.simulate.nodes import NodeMap, Pods
from gpuplat.simulate.options import Options
from gpuplat.simulate.trace import Job
from gpuplat.simulate.waits import NodeWaits

ARRIVE, FINISH, READY, TICK, INTERRUPT, BLOCK, FAIL, LEAVE = range(8)
_OPEN = (1 << 30, float("inf"), 0)  # the window of an emptied queue: every arrival is inside it


class InvariantError(AssertionError):
    """provisioned >= allocated >= busy failed somewhere: a bug in the replay, never the input."""


class Engine:
    def __init__(
        self,
        jobs: list[Job],
        ranks: list[int],
        placements: list[list[tuple[Flavor, int]]],
        tenants: list[SimTenant],
        tenant_of: list[int],
        pools: list[SimPool],
        options: Options,
    ) -> None:
        self.jobs, self.ranks, self.placements = jobs, ranks, placements
        self.tenants, self.tenant_of, self.pools, self.options = tenants, tenant_of, pools, options
        self.flavors = [f for p in pools for f in p.flavors]
        self.rng = random.Random(options.seed)
        self.heap: list[tuple[float, int, int, int, int]] = []
        self.seq = 0
        n = len(jobs)
        self.remaining = [j.duration for j in jobs]  # the work left, in seconds on the trace's GPUs
        self.rate = [1.0] * n  # how fast a running job's pool runs it (Options.speedup)
        self.busy_share = options.utilization.draws(options.seed, jobs)
        self.drawn = [j.utilization is None for j in jobs]
        # Allocated and busy GPU-seconds of the jobs whose share was drawn: the sensitivity line's inputs.
        self.drawn_alloc_gpu_s = self.drawn_busy_gpu_s = 0.0
        self.started = [-1.0] * n  # first start
        self.admitted_at = [-1.0] * n  # first quota reservation (a fleet worker's dispatch decision)
        self.run_start = [0.0] * n
        self.runs = [0] * n  # invalidates a FINISH after an eviction
        self.on: list[tuple[Flavor, int] | None] = [None] * n
        self.running: dict[str, dict[int, None]] = {f.key: {} for f in self.flavors}
        self.usage: list[dict[str, int]] = [dict.fromkeys(t.flavors, 0) for t in tenants]
        self.queues: list[list[tuple[int, float, int]]] = [[] for _ in tenants]
        self.tenant_order = sorted(range(len(tenants)), key=lambda i: -tenants[i].rank)
        self.lending = Lending(tenants, self.usage)
        self.lowest_rank = preemption.lowest_ranks(ranks, tenant_of, len(tenants))
        self.sizes = [min((u for _, u in p), default=0) for p in placements]
        self.epoch = 0  # counts quota releases: a blocked queue waits for the next one
        self.blocked = [-1] * len(tenants)
        self.window_end: list[tuple[int, float, int]] = [(0, 0.0, 0)] * len(tenants)
        self.preempted = self.interrupted = self.node_token = self.block_stops = 0
        self.lost_gpu_s = self.now = 0.0
        self.polls = 0  # TICK events handled: what skipping quiet stretches saves
        self.outcome, self.fail_at = (
            options.outcomes.draws(options.seed, jobs) if options.outcomes else (["completed"] * n, [1.0] * n)
        )
        self.retried = [False] * n
        self.pods: list[Pods] = [[] for _ in range(n)]  # node packing: where each running job's pods are
        self.node_waits = NodeWaits([j.gpus for j in jobs])  # fragmentation and topology (waits.py)

    def open_nodes(self, gpu_policy: str) -> None:
        """Node-level packing: every flavor's ready nodes, empty, in a slot for each node the NodePool
        may run, in its topology domains unless `Options.topology` is off; a fractional pool's GPU by
        GPU, as its scheduler places them by `gpu_policy` (gpus.py)."""
        for f in self.flavors:
            if f.fractional:
                f.nodes = GpuMap(f.ready, f.gpus_per_node, f.per_gpu, gpu_policy, f.max_nodes)
            else:
                f.nodes = NodeMap(f.ready, f.per_node, f.domains if self.options.topology else (), f.max_nodes)

    def push(self, t: float, kind: int, a: int = 0, b: int = 0) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, kind, a, b))

    # ------------------------------------------------------------------ nodes
    def launch(self, flavor: Flavor, count: int, t: float) -> None:
        flavor.mutate(t)
        flavor.booting += count
        for _ in range(count):
            self.push(t + self.options.boot_seconds, READY, self.flavors.index(flavor))

    def node_ready(self, flavor: Flavor, t: float) -> None:
        if flavor.cancelled:
            flavor.cancelled -= 1  # its Capacity Block closed while it booted: it never joins
            return
        flavor.mutate(t)
        flavor.booting -= 1
        flavor.ready += 1
        node = flavor.nodes.add() if flavor.nodes is not None else -1
        if flavor.hazard > 0 and self.options.spot:
            self.node_token += 1
            flavor.spot_nodes[self.node_token] = node
            when = t + self.rng.expovariate(flavor.hazard)
            self.push(when, INTERRUPT, self.flavors.index(flavor), self.node_token)
        self.start_pods(flavor, t)

    def remove_nodes(self, flavor: Flavor, count: int, t: float) -> None:
        """Karpenter removes `count` empty nodes (with node packing, the last slots' first)."""
        flavor.mutate(t)
        flavor.ready -= count
        if flavor.nodes is not None:
            gone = set(flavor.nodes.empty()[:count])
            for node in gone:
                flavor.nodes.remove(node)
            dropped = [token for token, node in flavor.spot_nodes.items() if node in gone]
        else:  # packed perfectly, the newest spot nodes go
            dropped = list(flavor.spot_nodes)[-count:]
        for token in dropped:
            del flavor.spot_nodes[token]
        self.audit(flavor)

    def provision(self, flavor: Flavor, t: float) -> None:
        """Karpenter: nodes for pods that fit on no ready or booting node, up to the limit. With
        node packing the waiting pods fit on no ready node (the last pass tried them): only the
        booting nodes count."""
        want = sum(self.placement_units(j, flavor) for j in flavor.waiting)
        spare = 0 if flavor.nodes is not None else flavor.ready * flavor.per_node - flavor.alloc
        free = flavor.booting * flavor.per_node + spare
        short = want - free
        room = flavor.limit - flavor.ready - flavor.booting
        if short > 0 and room > 0:
            self.launch(flavor, min(room, math.ceil(short / flavor.per_node)), t)

    def stop_newest(self, flavor: Flavor, units: int, t: float) -> int:
        """Stop the newest pods on `flavor` until `units` are free (their nodes went): they keep
        their admission and wait for a node, their work since the last checkpoint lost."""
        stopped = 0
        for job in sorted(self.running[flavor.key], key=lambda j: -self.run_start[j]):
            if units <= 0:
                break
            units -= self.on[job][1]  # type: ignore[index]
            self.stop(job, t, done=False)
            flavor.waiting.append(job)
            stopped += 1
        return stopped

    def lose_nodes(self, flavor: Flavor, nodes: list[int], t: float) -> int:
        """Node packing: these nodes went, and the jobs with a pod on them stop (newest first) and
        wait for a node, as `stop_newest`; -> how many stopped. `ready` is the caller's to lower."""
        gone, node_of = set(nodes), flavor.nodes.node_of  # type: ignore[union-attr]
        hit = [j for j in self.running[flavor.key] if any(node_of(index) in gone for index, _ in self.pods[j])]
        for job in sorted(hit, key=lambda j: -self.run_start[j]):
            self.stop(job, t, done=False)
            flavor.waiting.append(job)
        for node in nodes:
            flavor.nodes.remove(node)  # type: ignore[union-attr]
        return len(hit)

    def placement_units(self, job: int, flavor: Flavor) -> int:
        placed = self.on[job]
        return placed[1] if placed is not None and placed[0] is flavor else 0

    # ------------------------------------------------------------------ pods
    def start_pods(self, flavor: Flavor, t: float) -> None:
        free = flavor.ready * flavor.per_node - flavor.alloc
        if not flavor.waiting or (free <= 0 and not self.node_waits.open):
            return
        still: list[int] = []
        nodes = flavor.nodes
        for job in flavor.waiting:
            units = self.placement_units(job, flavor)
            pods = nodes.fit(units) if nodes is not None and units <= free else None
            if units <= free and (nodes is None or pods is not None):
                free -= units
                if pods is not None:
                    flavor.mutate(t)  # the GPU map's time integrals run up to the change
                    nodes.take(pods)  # type: ignore[union-attr]
                    self.pods[job] = pods
                self.run(job, flavor, units, t)
            else:
                still.append(job)
        flavor.waiting = still
        if nodes is not None:
            for job in still:  # judged on what is free once this pass has started what it could
                units = self.placement_units(job, flavor)
                self.node_waits.mark(job, nodes.waits_on(units) if units <= free else None, t)

    def run(self, job: int, flavor: Flavor, units: int, t: float) -> None:
        flavor.mutate(t)
        flavor.alloc += units
        flavor.busy += self.busy_gpus(job, flavor, units)
        if self.started[job] < 0:
            self.started[job] = t
        self.run_start[job] = t
        self.running[flavor.key][job] = None
        self.node_waits.mark(job, None, t)
        self.rate[job] = self.options.speed_of(flavor.pool)
        left = self.remaining[job] / self.rate[job]
        if self.fail_at[job] < 1.0 and not self.retried[job]:
            self.push(t + left * self.fail_at[job], FAIL, job, self.runs[job])
        else:
            self.push(t + left, FINISH, job, self.runs[job])
        self.audit(flavor)

    def utilization(self, job: int) -> float:
        return self.busy_share[job]

    def busy_gpus(self, job: int, flavor: Flavor, units: int) -> float:
        """GPUs' worth of busy time while the job runs: a share given a whole GPU does its share's work."""
        held = min(units / flavor.per_gpu, self.jobs[job].fraction) if flavor.whole_gpu else units / flavor.per_gpu
        return held * self.utilization(job)

    def stop(self, job: int, t: float, *, done: bool) -> Flavor:
        """Take a running job off its flavor; not done: its work since the last checkpoint is lost."""
        placed = self.on[job]
        assert placed is not None
        flavor, units = placed
        flavor.mutate(t)
        flavor.alloc -= units
        flavor.busy -= self.busy_gpus(job, flavor, units)
        flavor.busy = max(flavor.busy, 0.0)  # float residue of many adds and subtracts
        del self.running[flavor.key][job]
        if flavor.nodes is not None:
            flavor.nodes.take(self.pods[job], -1)
            self.pods[job] = []
        self.runs[job] += 1
        ran = t - self.run_start[job]
        if self.drawn[job]:
            self.drawn_alloc_gpu_s += ran * units / flavor.per_gpu
            self.drawn_busy_gpu_s += ran * self.busy_gpus(job, flavor, units)
        if done:
            self.remaining[job] = 0.0
        else:
            lost = ran % self.options.checkpoint_seconds
            self.remaining[job] -= (ran - lost) * self.rate[job]
            self.lost_gpu_s += lost * units / flavor.per_gpu
        self.audit(flavor)
        return flavor

    def audit(self, flavor: Flavor) -> None:
        if not self.options.audit:
            return
        if not flavor.consistent():
            gpus = (flavor.ready + flavor.booting) * flavor.gpus_per_node
            raise InvariantError(
                f"{flavor.key} at {self.now}: provisioned {gpus}, allocated {flavor.alloc / flavor.per_gpu}, "
                f"busy {flavor.busy}, nodes ready {flavor.ready}"
            )

    # ------------------------------------------------------------------ admission
    def enqueue(self, job: int, at: float | None = None) -> None:
        at = self.jobs[job].submit if at is None else at
        heapq.heappush(self.queues[self.tenant_of[job]], (-self.ranks[job], at, job))

    def withdraw(self, job: int, t: float) -> bool:
        """A fleet worker's job never admitted leaves its queue (dispatched elsewhere); the queue
        is tried again, as the job may have been what the last pass stopped at."""
        i = self.tenant_of[job]
        item = next((q for q in self.queues[i] if q[2] == job), None) if self.admitted_at[job] < 0 else None
        if item is None:
            return False
        self.queues[i].remove(item)
        heapq.heapify(self.queues[i])
        self.blocked[i] = -1
        self.admit_all(t, only=i)
        return True

    def fail(self, job: int, t: float) -> Flavor:
        """The job failed: its GPUs and quota go back, and it queues again, behind the jobs already
        waiting, for the rest of its run (the trace's duration is its attempts together: nothing lost)."""
        left = self.remaining[job] - (t - self.run_start[job]) * self.rate[job]
        flavor = self.stop(job, t, done=True)
        self.remaining[job] = max(left, 0.0)
        self.release(job)
        self.retried[job] = True
        self.enqueue(job, t)
        self.blocked[self.tenant_of[job]] = -1
        return flavor

    def arrive(self, job: int, t: float) -> None:
        i = self.tenant_of[job]
        item = (-self.ranks[job], self.jobs[job].submit, job)
        heapq.heappush(self.queues[i], item)
        if item < self.window_end[i] or len(self.queues[i]) <= self.options.lookahead:
            self.blocked[i] = -1  # the job is inside the window the last pass looked at
        self.admit_all(t, only=i)

    def admit_all(self, t: float, only: int | None = None) -> None:
        """A Kueue pass over every tenant's queue (or only one's, when only its queue changed).

        A pass admits what fits and skips over up to `lookahead` jobs that do not (BestEffortFIFO;
        1: StrictFIFO), and stops at the first failure of the smallest size: a larger job fails
        where a smaller one did (the same flavors, the same quota). As Kueue parks inadmissible
        workloads until a requeue event, a queue is not tried again until quota is freed
        (`epoch`) or a job lands inside the window the last pass looked at.
        """
        for i in [only] if only is not None else self.tenant_order:
            queue = self.queues[i]
            if self.blocked[i] == self.epoch or not queue:
                continue
            kept: list[tuple[int, float, int]] = []
            smallest_failed = 1 << 30
            while queue and len(kept) < self.options.lookahead:
                item = heapq.heappop(queue)
                if self.sizes[item[2]] < smallest_failed and self.admit(item[2], t):
                    continue
                kept.append(item)
                smallest_failed = min(smallest_failed, self.sizes[item[2]])
                if smallest_failed <= 1:
                    break
            for item in kept:
                heapq.heappush(queue, item)
            self.blocked[i], self.window_end[i] = self.epoch, max(kept) if kept else _OPEN

    def admit(self, job: int, t: float) -> bool:
        i, places = self.tenant_of[job], self.placements[job]
        tenant, usage, held_back = self.tenants[i], self.usage[i], self.lending.held_back
        for flavor, units in places:
            room = flavor.cap - flavor.admitted - units
            if room >= 0 and usage[flavor.key] + units <= tenant.limit[flavor.key] and room >= held_back(flavor.key, i):
                self.place(job, flavor, units, t)
                return True
        for flavor, units in places:
            chosen = preemption.victims(self, job, flavor, units)
            if chosen is not None:
                for victim in chosen:
                    self.evict(victim, t)
                self.preempted += len(chosen)
                self.place(job, flavor, units, t)
                return True
        return False

    def place(self, job: int, flavor: Flavor, units: int, t: float) -> None:
        if self.admitted_at[job] < 0:
            self.admitted_at[job] = t
        flavor.admitted += units
        self.usage[self.tenant_of[job]][flavor.key] += units
        self.on[job] = (flavor, units)
        flavor.waiting.append(job)
        self.start_pods(flavor, t)
        self.provision(flavor, t)

    def admitted_on(self, flavor: Flavor) -> list[int]:
        return [*self.running[flavor.key], *flavor.waiting]

    def evict(self, job: int, t: float) -> None:
        """Kueue evicts the workload: off the flavor and its quota, back to the tenant's queue."""
        placed = self.on[job]
        assert placed is not None
        flavor, units = placed
        if job in self.running[flavor.key]:
            self.stop(job, t, done=False)
        else:
            flavor.waiting.remove(job)
            self.node_waits.mark(job, None, t)  # back in the queue: no longer waiting for nodes
        flavor.admitted -= units
        self.usage[self.tenant_of[job]][flavor.key] -= units
        self.on[job] = None
        self.epoch += 1
        self.enqueue(job)

    def release(self, job: int) -> None:
        placed = self.on[job]
        assert placed is not None
        flavor, units = placed
        flavor.admitted -= units
        self.usage[self.tenant_of[job]][flavor.key] -= units
        self.on[job] = None
        self.epoch += 1

    def spot_tolerant(self, job: int) -> bool:
        return self.ranks[job] < SPOT_TOLERANT_BELOW
