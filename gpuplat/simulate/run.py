"""One replay: map the trace onto the platform, run the event loop, summarise."""

from __future__ import annotations

import dataclasses
import heapq
import math
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from gpuplat.model import Platform, Provider, SharingMode
from gpuplat.plan import Plan
from gpuplat.scaling import POLLING_SECONDS, stabilization_seconds
from gpuplat.simulate import autoscale
from gpuplat.simulate.engine import ARRIVE, BLOCK, FAIL, FINISH, INTERRUPT, LEAVE, READY, TICK, Engine
from gpuplat.simulate.fleet import PRIORITY_RANK, Flavor, build_flavors, build_pools, build_tenants
from gpuplat.simulate.gpus import gpu_policy
from gpuplat.simulate.mapping import NoTenantsError, UnknownTenantError, placements, tenant_mapping, why_not
from gpuplat.simulate.options import Options
from gpuplat.simulate.result import Result, summarise
from gpuplat.simulate.timeline import Timeline, sample_step
from gpuplat.simulate.trace import Trace
from gpuplat.vocabulary import WHOLE_GPU

__all__ = [
    "GpuPlacementError",
    "NoTenantsError",
    "Replay",
    "UnknownTenantError",
    "build",
    "replay",
    "simulate",
    "simulate_seeds",
]


class GpuPlacementError(ValueError):
    """A GPU placement asked of a replay that places no pod GPU by GPU."""


def _check_gpu_placement(model: Platform, options: Options) -> None:
    if options.gpu_placement is None:
        return
    if not options.node_packing:
        raise GpuPlacementError("--gpu-placement places pods GPU by GPU, which needs --node-packing")
    if not any(p.sharing.mode is SharingMode.FRACTIONAL for p in model.pools):
        raise GpuPlacementError("--gpu-placement: the spec has no pool of sharing mode fractional to place on")


def build(model: Platform, plan: Plan, trace: Trace, options: Options) -> tuple[Engine, dict[str, str], dict[int, str]]:
    """The engine, the tenant mapping and the jobs no flavor of their tenant can hold (-> why)."""
    _check_gpu_placement(model, options)
    flavors = build_flavors(model, plan, options.capacity_blocks)
    for f in flavors:
        f.whole_gpu = f.fractional and options.gpu_placement == WHOLE_GPU
    pools = build_pools(model, plan, flavors)
    tenants = build_tenants(model, plan, flavors)
    by_key: dict[str, Flavor] = {f.key: f for f in flavors}
    mapping = tenant_mapping(trace.jobs, tenants, dict(options.tenant_map), by_key)
    index = {t.name: i for i, t in enumerate(tenants)}
    jobs = list(trace.jobs)
    tenant_of = [index[mapping[j.tenant]] for j in jobs]
    ranks = [PRIORITY_RANK[j.priority] if j.priority else tenants[tenant_of[i]].rank for i, j in enumerate(jobs)]
    places = [placements(j, ranks[i], tenants[tenant_of[i]], by_key) for i, j in enumerate(jobs)]
    engine = Engine(jobs, ranks, places, tenants, tenant_of, pools, options)
    unplaceable = {i: why_not(jobs[i], ranks[i], tenants[tenant_of[i]], by_key) for i, p in enumerate(places) if not p}
    return engine, mapping, unplaceable


def _start(engine: Engine, dynamic: bool, policy: str | None) -> None:
    """The fleet at 0; `policy`: node packing's, whose maps hold the nodes Ready at 0."""
    for pool in engine.pools:
        if not dynamic:
            for f in pool.flavors:
                f.ready = f.limit  # the static fleet: every pool at nodes.max (blocks: what is open)
        elif pool.bounds is not None:
            pool.floor = pool.bounds[0]  # the platform stood before the trace began
            autoscale.hold_floor(pool, engine, 0.0)
            for f in pool.flavors:
                f.ready, f.booting = f.booting, 0
    engine.heap.clear()  # the floor's initial nodes are Ready at 0, not booting
    spot = [f for f in engine.flavors if f.hazard > 0 and engine.options.spot]
    for f in spot:
        f.booting, f.ready = f.ready, 0
    if policy is not None:
        engine.open_nodes(policy)
    for f in spot:
        for _ in range(f.booting):
            engine.node_ready(f, 0.0)  # draws the node's interruption


def _interrupt(engine: Engine, flavor: Flavor, token: int, t: float, dynamic: bool) -> None:
    """A spot node's notice: its pods go (their work since the last checkpoint lost), back to wait for a node."""
    if token not in flavor.spot_nodes:
        return  # that node was already removed
    node = flavor.spot_nodes.pop(token)
    engine.interrupted += 1
    flavor.mutate(t)
    if flavor.nodes is not None:
        engine.lose_nodes(flavor, [node], t)
        flavor.ready -= 1
        engine.start_pods(flavor, t)  # its jobs on the nodes left, where they fit
    else:
        share = -(-flavor.alloc // max(flavor.ready, 1))
        engine.stop_newest(flavor, max(share, flavor.alloc - (flavor.ready - 1) * flavor.per_node), t)
        flavor.ready -= 1
    engine.audit(flavor)
    if dynamic:
        engine.provision(flavor, t)
    else:
        engine.launch(flavor, 1, t)  # Karpenter replaces it at the notice


def _window(engine: Engine, flavor: Flavor, t: float, dynamic: bool) -> None:
    """A Capacity Block window opened or closed: Karpenter may run what the open ones hold.
    Closing, EC2 terminates the instances beyond that (booting ones first; with node packing the
    emptiest); opening, Karpenter launches for the waiting pods (static fleet: up to the limit)."""
    flavor.mutate(t)
    flavor.limit = flavor.block_limit(t)
    excess = flavor.ready + flavor.booting - flavor.limit
    cut = min(flavor.booting, max(excess, 0))
    flavor.booting, flavor.cancelled, excess = flavor.booting - cut, flavor.cancelled + cut, excess - cut
    if excess > 0 and flavor.nodes is not None:
        engine.block_stops += engine.lose_nodes(flavor, flavor.nodes.emptiest(excess), t)
        flavor.ready -= excess
        engine.start_pods(flavor, t)  # the stopped jobs on the nodes left, where they fit
    elif excess > 0:
        engine.block_stops += engine.stop_newest(flavor, flavor.alloc - (flavor.ready - excess) * flavor.per_node, t)
        flavor.ready -= excess
    engine.audit(flavor)
    if dynamic:
        engine.provision(flavor, t)
    elif flavor.limit > flavor.ready + flavor.booting:
        engine.launch(flavor, flavor.limit - flavor.ready - flavor.booting, t)


def _stuck(engine: Engine) -> bool:
    """Nothing runs, boots or is still to come (checked once arrivals and windows are over): no
    event left can start a job. Only stale spot notices and the poll would follow, the notices
    months away, so the replay ends at the last event that could have started one."""
    return not any(engine.running[f.key] or f.booting or f.cancelled for f in engine.flavors)


def _next_poll(engine: Engine, t: float) -> float:
    """The next poll that can decide anything. While every pool is quiet (autoscale._settled) a
    poll changes nothing until the next other event wakes one, so the polls before it are jumped
    over: the poll lands on the last of its 30-second phase before that event, and the one after
    is pushed from there as before, so it keeps its place among events at the same time."""
    after = t + POLLING_SECONDS
    if not engine.options.skip_quiet or not engine.heap or any(p.quiet_since is None for p in engine.pools):
        return after
    upcoming = engine.heap[0][0]  # the only TICK was just popped: this is another kind of event
    skipped = math.ceil((upcoming - t) / POLLING_SECONDS) - 1
    return t + skipped * POLLING_SECONDS if skipped > 1 else after


@dataclass
class Replay:
    """A finished event loop, before it is summarised (tests read the engine's per-job times)."""

    engine: Engine
    mapping: dict[str, str]
    unplaceable: dict[int, str]  # job -> why no flavor of its tenant can hold it
    horizon: float
    stranded: int  # jobs that never finished: nothing left could run them
    timeline: Timeline


def _schedule(engine: Engine, skip: set[int], leave: dict[int, float], dynamic: bool) -> tuple[int, int]:
    """The events known before the replay starts: arrivals, a fleet worker's leaving jobs, the
    Capacity Block windows, the first poll. -> (arrivals, window events)."""
    arrivals = [(j.submit, i, ARRIVE, i, 0) for i, j in enumerate(engine.jobs) if i not in skip]
    engine.heap.extend(arrivals)
    engine.seq = len(engine.jobs)
    heapq.heapify(engine.heap)
    for job, when in leave.items():
        if job not in skip:
            engine.push(when, LEAVE, job)
    for index, f in enumerate(engine.flavors):
        for b in f.blocks:
            for when in (b.start, b.usable_until):
                if when > 0:
                    engine.push(when, BLOCK, index)
    if dynamic:
        engine.push(0.0, TICK)
    return len(arrivals), sum(1 for e in engine.heap if e[2] == BLOCK)


def replay(
    model: Platform, plan: Plan, trace: Trace, options: Options, leave: dict[int, float] | None = None
) -> Replay:
    """`leave`: job -> when it leaves the queue if not admitted by then (a fleet worker, dispatch.py)."""
    engine, mapping, unplaceable = build(model, plan, trace, options)
    # An existing cluster's nodes are there whether used or not: nothing scales them.
    dynamic = options.autoscaling and model.target.provider is Provider.AWS
    policy = gpu_policy(model.scheduling.gpu_scheduler_policy, options.gpu_placement)
    _start(engine, dynamic, policy if options.node_packing else None)
    arrivals, windows = _schedule(engine, set(unplaceable), leave or {}, dynamic)
    outstanding, horizon, arriving = arrivals, 0.0, arrivals
    stabilize = stabilization_seconds(model)
    timeline = Timeline(sample_step(max((j.submit + j.duration for j in engine.jobs), default=0.0)))
    while engine.heap and outstanding:
        t, _, kind, a, b = heapq.heappop(engine.heap)
        timeline.until(engine, t)
        engine.now = horizon = t
        if kind == ARRIVE:
            arriving -= 1
            engine.arrive(a, t)
        elif kind == FINISH:
            if engine.runs[a] != b:
                continue  # evicted since; this finish is void
            flavor = engine.stop(a, t, done=True)
            engine.release(a)
            outstanding -= 1
            engine.start_pods(flavor, t)
            engine.admit_all(t)
        elif kind == FAIL:
            if engine.runs[a] != b:
                continue  # evicted since
            engine.start_pods(engine.fail(a, t), t)
            engine.admit_all(t)
        elif kind == READY:
            engine.node_ready(engine.flavors[a], t)
        elif kind == TICK:
            engine.polls += 1
            autoscale.tick(engine, model.autoscaling, t, stabilize)
            engine.push(_next_poll(engine, t), TICK)
        elif kind == INTERRUPT:
            _interrupt(engine, engine.flavors[a], b, t, dynamic)
        elif kind == LEAVE:
            outstanding -= engine.withdraw(a, t)
        elif kind == BLOCK:
            windows -= 1
            _window(engine, engine.flavors[a], t, dynamic)
        if kind != TICK and not arriving and not windows and outstanding and _stuck(engine):
            break  # the jobs left can never run: they are stranded, and the replay ends here
    for f in engine.flavors:
        f.advance(horizon)
    timeline.until(engine, horizon, inclusive=True)
    return Replay(engine, mapping, unplaceable, horizon, outstanding, timeline)


def simulate(model: Platform, plan: Plan, trace: Trace, options: Options | None = None) -> Result:
    options = options or Options()
    done = replay(model, plan, trace, options)
    result = summarise(
        model, plan, trace, done.engine, options, done.mapping, done.unplaceable, done.horizon, stranded=done.stranded
    )
    return dataclasses.replace(result, timeline=done.timeline)


# The replay's inputs for forked workers (set only while a pool runs): they inherit it, so
# nothing large is pickled on the way in.
_FORKED: dict[str, tuple[Platform, Plan, Trace, Options]] = {}


def _one_seed(seed: int) -> Result:
    model, plan, trace, options = _FORKED["inputs"]
    result = simulate(model, plan, trace, dataclasses.replace(options, seed=seed))
    # The options' read-only tenant map does not pickle; the parent puts the options back.
    return dataclasses.replace(result, options=dataclasses.replace(options, tenant_map={}))


def simulate_seeds(
    model: Platform, plan: Plan, trace: Trace, options: Options, seeds: int, workers: int = 1
) -> list[Result]:
    """One replay per seed, `options.seed` and the next `seeds - 1`: a base replayed with the same
    options draws the same numbers (common random numbers). `workers` > 1 replays seeds in that
    many forked processes (each replay is single-threaded), where the platform can fork."""
    numbers = [options.seed + i for i in range(seeds)]
    if workers <= 1 or seeds <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return [simulate(model, plan, trace, dataclasses.replace(options, seed=n)) for n in numbers]
    _FORKED["inputs"] = (model, plan, trace, options)
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(min(workers, seeds), mp_context=context) as pool:
            results = list(pool.map(_one_seed, numbers))
    finally:
        _FORKED.clear()
    return [
        dataclasses.replace(r, options=dataclasses.replace(options, seed=n))
        for r, n in zip(results, numbers, strict=True)
    ]
