"""Kueue's preemption, as every ClusterQueue is emitted: `reclaimWithinCohort: Any`,
`withinClusterQueue: LowerPriority`, `borrowWithinCohort: Never`.

A job that fits no flavor as it stands may preempt, on a flavor, the admitted jobs of tenants
borrowing there (any priority, and only while their tenant still borrows once the jobs chosen
before are gone) and its own tenant's jobs of lower priority there, as long as it then fits within
its tenant's nominal quota: with borrowing never allowed to preempt, no job preempts to borrow.
Candidates go in Kueue's order, other tenants' first, then the lowest priority, then the newest;
they are taken until the job fits, and then, newest choice first, each is given back when the job
fits without it (Kueue's fill-back), so no more is preempted than needed.
"""

from __future__ import annotations

from typing import Protocol

from gpuplat.simulate.fleet import Flavor, Lending, SimTenant
from gpuplat.simulate.trace import Job


class Engine(Protocol):
    """What the search reads of the replay's state (engine.py's Engine)."""

    jobs: list[Job]
    ranks: list[int]
    tenants: list[SimTenant]
    tenant_of: list[int]
    usage: list[dict[str, int]]
    on: list[tuple[Flavor, int] | None]
    lending: Lending
    lowest_rank: list[int]

    def admitted_on(self, flavor: Flavor) -> list[int]: ...


def victims(engine: Engine, job: int, flavor: Flavor, units: int) -> list[int] | None:
    """The jobs to preempt so that `job` is admitted on `flavor` with `units`, or None when no set
    does it. The hard tenants' unused quota there stays out of reach (Lending)."""
    mine, key = engine.tenant_of[job], flavor.key
    nominal, used, rank = engine.tenants[mine].nominal.get(key, 0), engine.usage[mine][key], engine.ranks[job]
    if units > nominal or (used + units > nominal and rank <= engine.lowest_rank[mine]):
        return None  # beyond its quota, with none of its own jobs below its priority to make room
    tenants = engine.tenants
    # Per other tenant, what it holds beyond its nominal quota: it is reclaimed only while it borrows.
    borrowed = {i: held.get(key, 0) - tenants[i].nominal.get(key, 0) for i, held in enumerate(engine.usage)}
    borrowed = {i: over for i, over in borrowed.items() if over > 0 and i != mine}
    candidates = [
        j
        for j in engine.admitted_on(flavor)
        if engine.tenant_of[j] in borrowed or (engine.tenant_of[j] == mine and engine.ranks[j] < rank)
    ]
    candidates.sort(key=lambda j: (engine.tenant_of[j] == mine, engine.ranks[j], -engine.jobs[j].submit))
    base = flavor.cap - engine.lending.held_back(key, mine) - flavor.admitted

    def fits(freed: int, own: int) -> bool:  # the job's room, and its tenant within nominal
        return units <= base + freed and used - own + units <= nominal

    chosen: list[tuple[int, int, int]] = []  # (job, units it frees, of them its own tenant's)
    freed = own = 0
    for candidate in candidates:
        if fits(freed, own):
            break
        size, owner = _units(engine, candidate), engine.tenant_of[candidate]
        if owner != mine:
            if borrowed[owner] <= 0:
                continue  # its tenant no longer borrows here once the jobs chosen are gone
            borrowed[owner] -= size
        ours = size if owner == mine else 0
        chosen.append((candidate, size, ours))
        freed, own = freed + size, own + ours
    if not fits(freed, own):
        return None
    for choice in reversed(chosen[:]):
        if fits(freed - choice[1], own - choice[2]):
            chosen.remove(choice)
            freed, own = freed - choice[1], own - choice[2]
    return [j for j, _, _ in chosen]


def _units(engine: Engine, job: int) -> int:
    placed = engine.on[job]
    assert placed is not None
    return placed[1]


def lowest_ranks(ranks: list[int], tenant_of: list[int], tenants: int) -> list[int]:
    """Per tenant, the lowest priority rank of its jobs: a job of that rank has no one of its own
    tenant to preempt, which spares the search for most jobs of most traces."""
    lowest = [max(ranks, default=0)] * tenants
    for rank, tenant in zip(ranks, tenant_of, strict=True):
        lowest[tenant] = min(lowest[tenant], rank)
    return lowest
