"""A trace replayed against a fleet: MultiKueue's incremental dispatcher over the members' own replays.

The manager nominates a job's first worker (the fleet's dispatch order, among the workers its
tenant may use); a job that worker has not admitted within a dispatch round (Kueue's
`incrementalDispatcherRoundTimeout`, 5 minutes) is nominated to the next one as well. The
workers are replayed one after another with the single-platform replay (run.py): a worker
replays the jobs offered to it, and a job it has not admitted a round after the offer (or
cannot hold at all) leaves its queue then and is offered to the tenant's next worker at that
time; the tenant's last worker keeps what reaches it. The worker is then replayed once more
with the jobs that stayed: that replay is its result (GPU-hours, waiting, cost at its plan's
rates). docs/simulate.md ("A fleet") says what this leaves out.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType

from gpuplat.fleet.members import LoadedMember, load_member
from gpuplat.model.fleet import Fleet
from gpuplat.simulate.fleet import Flavor, build_flavors, build_tenants
from gpuplat.simulate.job import Job
from gpuplat.simulate.mapping import UnknownTenantError, gpu_hours, tenant_mapping
from gpuplat.simulate.options import Options
from gpuplat.simulate.result import Result, percentile, summarise
from gpuplat.simulate.run import replay
from gpuplat.simulate.trace import Trace

ROUND_SECONDS = 300.0  # Kueue's incrementalDispatcherRoundTimeout (a constant of its dispatcher)


class FleetMemberError(ValueError):
    """A worker whose spec cannot be read or compiled offline: there is nothing to replay it with."""


@dataclass(frozen=True)
class MemberResult:
    name: str
    position: int  # 1-based dispatch position
    provider: str
    jobs: int  # jobs that ran here (admitted here)
    gpu_h: float  # their GPU-hours as the trace asks them (duration x GPUs)
    spilled_in: int  # of them, jobs an earlier worker did not admit within a round
    never_started: int  # admitted here but never started within the replay
    wait_seconds: dict[int, float]  # percentile -> submission to the fleet to first start here
    mean_wait_seconds: float
    cost_usd: float | None  # the member's replay at its plan's rates; None: not priced (provider kubernetes)
    result: Result


@dataclass(frozen=True)
class FleetResult:
    trace: str
    fleet: str
    manager: str
    seed: int
    jobs: int
    members: tuple[MemberResult, ...]
    mapping: dict[str, str]  # trace tenant -> fleet tenant
    unrouted: dict[str, int]  # trace tenant -> jobs of a tenant no worker has
    unplaceable: dict[str, int]  # trace tenant -> jobs no worker of the tenant can hold

    @property
    def gpu_h(self) -> float:
        return sum(m.gpu_h for m in self.members)

    @property
    def cost_usd(self) -> float:
        return sum(m.cost_usd or 0.0 for m in self.members)


def _workers(fleet: Fleet) -> list[LoadedMember]:
    loaded: list[LoadedMember] = []
    for m in fleet.workers:
        member = load_member({"name": m.name, "stack": m.stack, **({"spec": m.spec} if m.spec else {})})
        if member.model is None or member.plan is None:
            why = member.problem or "another project's stack without `spec`: its spec is not readable here"
            raise FleetMemberError(f"fleet {fleet.name}: worker {m.name} cannot be replayed ({why})")
        loaded.append(member)
    return loaded


def _mapping(
    jobs: Sequence[Job], fleet_tenants: list[str], given: dict[str, str], first: LoadedMember
) -> dict[str, str]:
    """Trace tenants -> fleet tenants: as given, a trace tenant named as a fleet tenant keeps its
    name, the rest as a replay of the first worker would map them (mapping.py)."""
    unknown = sorted(set(given.values()) - set(fleet_tenants))
    if unknown:
        raise UnknownTenantError(
            f"--tenant-map names {', '.join(unknown)}, not a tenant of the fleet's manager ({', '.join(fleet_tenants)})"
        )
    pinned = dict(given)
    for job in jobs:
        if job.tenant not in pinned and job.tenant in fleet_tenants:
            pinned[job.tenant] = job.tenant
    assert first.model is not None and first.plan is not None
    flavors = build_flavors(first.model, first.plan)
    tenants = build_tenants(first.model, first.plan, flavors)
    by_key: dict[str, Flavor] = {f.key: f for f in flavors}
    rest = [j for j in jobs if j.tenant not in pinned]
    return {**pinned, **tenant_mapping(rest, tenants, {}, by_key)}


@dataclass
class _Offer:
    job: int
    at: float  # when the job is offered to its current worker
    step: int  # index into its route


@dataclass
class _Ran:
    """A worker's final replay: its result, the offers it ran (in the replay's job order), each
    one's first start in the replay (-1: never), and the ones it could not hold."""

    result: Result
    offers: list[_Offer]
    starts: list[float]
    unplaceable: set[int]


def _replay_worker(
    member: LoadedMember, trace: Trace, offers: list[_Offer], mapping: dict[str, str], options: Options, last: set[int]
) -> tuple[_Ran, list[_Offer]]:
    """The worker's final replay and the offers that move on to their next worker."""
    assert member.model is not None and member.plan is not None
    kept = sorted(offers, key=lambda o: (o.at, o.job))
    leaving: list[_Offer] = []
    # First the dispatch: each job that may move on leaves the queue a round after its offer if
    # not admitted by then. Then the worker's own replay of the jobs that stayed.
    for dispatching in (True, False):
        jobs = tuple(dataclasses.replace(trace.jobs[o.job], submit=o.at) for o in kept)
        sub = Trace(trace.path, trace.shape, jobs, 0, trace.origin)
        opts = dataclasses.replace(options, tenant_map=MappingProxyType({j.tenant: mapping[j.tenant] for j in jobs}))
        leave = {k: o.at + ROUND_SECONDS for k, o in enumerate(kept) if o.job not in last} if dispatching else None
        done = replay(member.model, member.plan, sub, opts, leave)
        if not dispatching:
            break
        admitted = done.engine.admitted_at
        late = {
            k
            for k, o in enumerate(kept)
            if o.job not in last and (k in done.unplaceable or not 0 <= admitted[k] <= o.at + ROUND_SECONDS)
        }
        leaving += [kept[k] for k in sorted(late)]
        kept = [o for k, o in enumerate(kept) if k not in late]
    result = summarise(
        member.model, member.plan, sub, done.engine, opts, done.mapping, done.unplaceable, done.horizon, done.stranded
    )
    return _Ran(result, kept, list(done.engine.started), set(done.unplaceable)), leaving


def _member(member: LoadedMember, position: int, trace: Trace, ran: _Ran) -> MemberResult:
    assert member.model is not None and member.plan is not None
    placed = [k for k in range(len(ran.offers)) if k not in ran.unplaceable]
    waits = sorted(ran.starts[k] - trace.jobs[ran.offers[k].job].submit for k in placed if ran.starts[k] >= 0)
    return MemberResult(
        name=member.name,
        position=position,
        provider=member.model.target.provider.value,
        jobs=len(placed),
        gpu_h=sum(gpu_hours(trace.jobs[ran.offers[k].job]) for k in placed),
        spilled_in=sum(1 for k in placed if ran.offers[k].step > 0),
        never_started=sum(1 for k in placed if ran.starts[k] < 0),
        wait_seconds={p: percentile(waits, p) for p in (50, 95)},
        mean_wait_seconds=sum(waits) / len(waits) if waits else 0.0,
        cost_usd=ran.result.cost_usd if member.plan.cost is not None else None,
        result=ran.result,
    )


def _count(trace: Trace, jobs: list[int]) -> dict[str, int]:
    return dict(sorted(Counter(trace.jobs[i].tenant for i in jobs).items()))


def simulate_fleet(fleet: Fleet, fleet_tenants: list[str], trace: Trace, options: Options) -> FleetResult:
    """The trace's jobs submitted to the fleet's queue, dispatched over its workers in order."""
    workers = _workers(fleet)
    if not workers:
        raise FleetMemberError(f"fleet {fleet.name} has no worker: the manager dispatches to none")
    mapping = _mapping(trace.jobs, fleet_tenants, dict(options.tenant_map), workers[0])
    has = {w.name: {t.name for t in w.model.tenants} for w in workers if w.model is not None}
    routes = {t: [w for w in fleet.tenant_workers(t) if t in has[w]] for t in set(mapping.values())}
    route = [routes[mapping[j.tenant]] for j in trace.jobs]
    unrouted = [i for i, r in enumerate(route) if not r]
    pending = [_Offer(i, j.submit, 0) for i, j in enumerate(trace.jobs) if route[i]]
    members: list[MemberResult] = []
    unplaceable: list[int] = []
    submitted = {j.tenant for j in trace.jobs}
    for position, worker in enumerate(workers, start=1):
        here = [o for o in pending if route[o.job][o.step] == worker.name]
        pending = [o for o in pending if route[o.job][o.step] != worker.name]
        last = {o.job for o in here if o.step == len(route[o.job]) - 1}
        ran, leaving = _replay_worker(worker, trace, here, mapping, options, last)
        unplaceable += [ran.offers[k].job for k in ran.unplaceable]
        pending += [_Offer(o.job, o.at + ROUND_SECONDS, o.step + 1) for o in leaving]
        members.append(_member(worker, position, trace, ran))
    return FleetResult(
        trace=trace.path,
        fleet=fleet.name,
        manager=fleet.manager,
        seed=options.seed,
        jobs=len(trace.jobs),
        members=tuple(members),
        mapping=dict(sorted((k, v) for k, v in mapping.items() if k in submitted)),
        unrouted=_count(trace, unrouted),
        unplaceable=_count(trace, unplaceable),
    )
