"""The replay's numbers: GPU-hours provisioned / allocated / busy, waste, waiting, cost."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuplat.catalog.prices import HOURS_PER_MONTH
from gpuplat.model import Market, Platform
from gpuplat.plan import Plan
from gpuplat.scaling import utilization_record
from gpuplat.simulate.gpus import GpuMap, gpu_policy
from gpuplat.simulate.mapping import gpu_hours
from gpuplat.simulate.nodes import FRAGMENTATION, TOPOLOGY
from gpuplat.simulate.options import Options
from gpuplat.simulate.trace import Trace
from gpuplat.vocabulary import WHOLE_GPU

if TYPE_CHECKING:
    from gpuplat.simulate.engine import Engine
    from gpuplat.simulate.timeline import Timeline

PERCENTILES = (50, 95, 99)


@dataclass(frozen=True)
class PoolResult:
    name: str
    provisioned_gpu_h: float  # billed: running nodes, and reservations around the clock
    allocated_gpu_h: float
    busy_gpu_h: float
    cost_usd: dict[str, float]  # by market
    all_on_demand_usd: float  # the same node-hours at the on-demand rate


@dataclass(frozen=True)
class GpuPlacement:
    """A fractional flavor's pods placed GPU by GPU (gpus.py): how full its GPUs and nodes were."""

    flavor: str
    policy: str  # spread | binpack; or whole: a GPU per job, nodes chosen by the spec's policy
    gpu_h: float  # its Ready GPUs' hours over the replay
    occupied_gpu_h: float  # GPUs holding at least one pod
    busy_gpu_h: float
    node_h: float
    empty_node_h: float  # nodes holding no pod: what consolidation could give back

    @property
    def busy_of_occupied(self) -> float:
        return self.busy_gpu_h / self.occupied_gpu_h if self.occupied_gpu_h else 0.0


@dataclass(frozen=True)
class WaitResult:
    tenant: str
    priority: str
    jobs: int
    seconds: dict[int, float]  # percentile -> queueing delay (submission to first start)
    mean_seconds: float


@dataclass(frozen=True)
class TargetWait:
    """A tenant's service level: of its replayed jobs, how many started within its `targetWait`."""

    tenant: str
    target_seconds: int
    jobs: int  # placed jobs (unplaceable ones are in the coverage); one that never started missed
    within: int

    @property
    def share(self) -> float | None:
        """None: no job of the trace is the tenant's, so there is nothing to measure."""
        return self.within / self.jobs if self.jobs else None


@dataclass(frozen=True)
class Coverage:
    """How much of the trace the replay ran: GPU-hours as the trace asks them (duration x GPUs)."""

    trace_gpu_h: float
    replayed_gpu_h: float  # of the jobs that ran to their end
    not_replayed: dict[str, tuple[int, float]]  # why -> (jobs, GPU-hours)

    @property
    def share(self) -> float:
        return self.replayed_gpu_h / self.trace_gpu_h if self.trace_gpu_h else 1.0


@dataclass(frozen=True)
class BusyShare:
    """Where each job's busy share came from, and what waste would be at the distribution's quartiles."""

    source: str
    mean: float
    p25: float
    p75: float
    drawn_jobs: int
    own_jobs: int  # the trace's own utilisation column
    waste_at_p25: float
    waste_at_p75: float


@dataclass(frozen=True)
class Result:
    trace: str
    shape: str  # canonical, philly, helios, prometheus-json, prometheus-text
    jobs: int
    seed: int
    options: Options
    signal: str  # the recorded series the autoscaler reads
    hours: float
    pools: tuple[PoolResult, ...]
    waits: tuple[WaitResult, ...]
    unplaceable: dict[str, int]  # trace tenant -> jobs no pool of its mapped tenant can hold
    mapping: dict[str, str]
    preempted: int
    interrupted: int
    lost_gpu_h: float
    block_stops: int  # pods stopped when their Capacity Block's instances were terminated
    stranded: int  # jobs that never finished: admitted onto a block flavor after its last window
    windows: dict[str, int]  # capacity-block pool -> booked windows replayed (absent: around the clock)
    static_usd: float  # every pool at nodes.max for the same hours, as the plan prices it
    coverage: Coverage
    busy_share: BusyShare
    timeline: Timeline | None = None  # the replay sampled over time (simulate --plot draws it)
    # Node packing: GPU-hours of waits while free GPUs would hold a job but no set of nodes did, and the jobs.
    fragmented_gpu_h: float = 0.0
    fragmented_jobs: int = 0
    # ... and while the nodes would hold it but no one topology domain did (nodes.py), and the jobs.
    topology_gpu_h: float = 0.0
    topology_jobs: int = 0
    domains: tuple[tuple[str, tuple[int, ...]], ...] = ()  # (flavor, its nodes per domain, narrowest first)
    retried: int = 0  # jobs drawn to fail, freed and queued again (Options.outcomes)
    targets: tuple[TargetWait, ...] = ()  # tenants with a targetWait, in the spec's order
    gpu_placements: tuple[GpuPlacement, ...] = ()  # node packing: the fractional flavors'
    lending_none: tuple[str, ...] = ()  # hard tenants: their idle quota runs no one else's jobs

    def total(self, field: str) -> float:
        return sum(getattr(p, field) for p in self.pools)

    @property
    def cost_usd(self) -> float:
        return sum(sum(p.cost_usd.values()) for p in self.pools)

    @property
    def monthly_usd(self) -> float:
        return self.cost_usd * HOURS_PER_MONTH / self.hours if self.hours else 0.0

    @property
    def waste(self) -> dict[str, float]:
        prov, alloc, busy = (self.total(f) for f in ("provisioned_gpu_h", "allocated_gpu_h", "busy_gpu_h"))
        if prov <= 0:
            return {"unallocated": 0.0, "idle": 0.0, "total": 0.0}
        return {"unallocated": 1 - alloc / prov, "idle": (alloc - busy) / prov, "total": 1 - busy / prov}


def percentile(ordered: list[float], p: int) -> float:
    """Nearest rank: the smallest value with at least p % of the values at or below it."""
    if not ordered:
        return 0.0
    rank = max(1, -(-p * len(ordered) // 100))
    return ordered[rank - 1]


def _waits(engine: Engine) -> tuple[WaitResult, ...]:
    names = {v: k for k, v in {"low": 0, "normal": 1, "high": 2, "critical": 3}.items()}
    groups: dict[tuple[str, str], list[float]] = {}
    for i, job in enumerate(engine.jobs):
        if engine.started[i] >= 0:
            key = (engine.tenants[engine.tenant_of[i]].name, names[engine.ranks[i]])
            groups.setdefault(key, []).append(engine.started[i] - job.submit)
    out: list[WaitResult] = []
    for (tenant, priority), waits in sorted(groups.items()):
        waits.sort()
        stats = {p: percentile(waits, p) for p in PERCENTILES}
        out.append(WaitResult(tenant, priority, len(waits), stats, sum(waits) / len(waits)))
    return tuple(out)


def _targets(model: Platform, engine: Engine, unplaceable: dict[int, str]) -> tuple[TargetWait, ...]:
    jobs = [0] * len(engine.tenants)
    within = [0] * len(engine.tenants)
    targets = [t.target_wait_seconds for t in model.tenants]  # engine.tenants are built in this order
    for i, job in enumerate(engine.jobs):
        k = engine.tenant_of[i]
        target = targets[k]
        if target is None or i in unplaceable:
            continue
        jobs[k] += 1
        start = engine.started[i]
        if start >= 0 and start - job.submit <= target:
            within[k] += 1
    return tuple(
        TargetWait(t.name, target, jobs[k], within[k])
        for k, (t, target) in enumerate(zip(model.tenants, targets, strict=True))
        if target is not None
    )


def _pools(engine: Engine, plan: Plan, horizon: float) -> tuple[PoolResult, ...]:
    out: list[PoolResult] = []
    for pool in engine.pools:
        prov = alloc = busy = on_demand = 0.0
        cost: dict[str, float] = {}
        od_hourly = (
            next((c.on_demand_hourly_usd for c in plan.cost.pools if c.pool == pool.name), 0.0) if plan.cost else 0.0
        )
        for f in pool.flavors:
            billed_h = f.billed_node_s(horizon) / 3600
            prov += billed_h * f.gpus_per_node
            alloc += f.alloc_gpu_s / 3600
            busy += f.busy_gpu_s / 3600
            market = f.market.value if f.market is not None else "existing"
            cost[market] = cost.get(market, 0.0) + billed_h * f.hourly
            on_demand += billed_h * od_hourly
        out.append(PoolResult(pool.name, prov, alloc, busy, cost, on_demand))
    return tuple(out)


def summarise(
    model: Platform,
    plan: Plan,
    trace: Trace,
    engine: Engine,
    options: Options,
    mapping: dict[str, str],
    unplaceable: dict[int, str],
    horizon: float,
    stranded: int = 0,
) -> Result:
    lost: dict[str, int] = {}
    for i in unplaceable:
        lost[engine.jobs[i].tenant] = lost.get(engine.jobs[i].tenant, 0) + 1
    pools = _pools(engine, plan, horizon)
    # The pools' nodes only: the plan's total also holds spare nodes for repairs, which the replay
    # never runs, so counting them would show a static fleet saving against itself.
    fleet = sum(sum(p.monthly_usd.values()) for p in plan.cost.pools) if plan.cost else 0.0
    static = fleet * (horizon / 3600) / HOURS_PER_MONTH
    return Result(
        trace=trace.path,
        shape=trace.shape,
        jobs=len(engine.jobs),
        seed=options.seed,
        options=options,
        signal=utilization_record(model.autoscaling.window).replace("utilization", "floor_signal"),
        hours=horizon / 3600,
        pools=pools,
        waits=_waits(engine),
        unplaceable=dict(sorted(lost.items())),
        mapping=dict(sorted(mapping.items())),
        preempted=engine.preempted,
        interrupted=engine.interrupted,
        lost_gpu_h=engine.lost_gpu_s / 3600,
        block_stops=engine.block_stops,
        stranded=stranded,
        windows={f.pool: len(f.blocks) for f in engine.flavors if f.blocks},
        static_usd=static,
        coverage=_coverage(engine, unplaceable),
        busy_share=_busy_share(engine, options, pools),
        fragmented_gpu_h=engine.node_waits.gpu_s[FRAGMENTATION] / 3600,
        fragmented_jobs=len(engine.node_waits.jobs[FRAGMENTATION]),
        topology_gpu_h=engine.node_waits.gpu_s[TOPOLOGY] / 3600,
        topology_jobs=len(engine.node_waits.jobs[TOPOLOGY]),
        domains=tuple((f.key, f.domains) for f in engine.flavors if f.nodes is not None and f.nodes.levels),
        retried=sum(engine.retried),
        targets=_targets(model, engine, unplaceable),
        gpu_placements=_gpu_placements(engine, model, options),
        lending_none=tuple(t.name for t in engine.tenants if not t.lends),
    )


def _gpu_placements(engine: Engine, model: Platform, options: Options) -> tuple[GpuPlacement, ...]:
    policy = gpu_policy(model.scheduling.gpu_scheduler_policy, options.gpu_placement)
    out: list[GpuPlacement] = []
    for f in engine.flavors:
        if isinstance(f.nodes, GpuMap):
            shown = WHOLE_GPU if f.whole_gpu else policy
            gpu_h, node_h = f.ready_gpu_s / 3600, f.ready_gpu_s / 3600 / f.gpus_per_node
            occupied, empty = f.nodes.occupied_gpu_s / 3600, f.nodes.empty_node_s / 3600
            out.append(GpuPlacement(f.key, shown, gpu_h, occupied, f.busy_gpu_s / 3600, node_h, empty))
    return tuple(out)


def _coverage(engine: Engine, unplaceable: dict[int, str]) -> Coverage:
    total = replayed = 0.0
    why: dict[str, tuple[int, float]] = {}
    for i, job in enumerate(engine.jobs):
        hours = gpu_hours(job)
        total += hours
        reason = unplaceable.get(i)
        if reason is None and engine.remaining[i] > 0:
            reason = "stranded: admitted onto a Capacity Block flavor after its last window"
        if reason is None:
            replayed += hours
            continue
        key = f"{job.tenant} -> {engine.tenants[engine.tenant_of[i]].name}: {reason}"
        jobs, gpu_h = why.get(key, (0, 0.0))
        why[key] = (jobs + 1, gpu_h + hours)
    ordered = dict(sorted(why.items(), key=lambda kv: -kv[1][1]))
    return Coverage(total, replayed, ordered)


def _busy_share(engine: Engine, options: Options, pools: tuple[PoolResult, ...]) -> BusyShare:
    dist = options.utilization
    prov = sum(p.provisioned_gpu_h for p in pools) * 3600
    busy = sum(p.busy_gpu_h for p in pools) * 3600
    own = busy - engine.drawn_busy_gpu_s  # the busy time of jobs with their own share stays

    def waste_at(share: float) -> float:
        return 1 - (own + share * engine.drawn_alloc_gpu_s) / prov if prov > 0 else 0.0

    p25, p75 = dist.quantile(0.25), dist.quantile(0.75)
    drawn = sum(engine.drawn)
    return BusyShare(dist.source, dist.mean, p25, p75, drawn, len(engine.jobs) - drawn, waste_at(p25), waste_at(p75))


__all__ = [
    "BusyShare",
    "Coverage",
    "Market",
    "PoolResult",
    "Result",
    "TargetWait",
    "WaitResult",
    "percentile",
    "summarise",
]
