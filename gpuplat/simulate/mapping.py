"""Which spec tenant runs each trace tenant's jobs, on which flavors, and why a job cannot run.

The default mapping weighs the trace's tenants by GPU-hours, the largest first, and gives each to
the spec tenant that can place most of its GPU-hours (the pools it may use, the shapes those pools
take, the most it may hold on one flavor), among those the one left least loaded for the GPUs it
may hold (longest-processing-time balancing). A tenant the spec restricts to a pool the trace's
jobs cannot use gets none of them, so the trace's big tenants are placed. `--tenant-map` pins any.
"""

from __future__ import annotations

from collections import defaultdict

from gpuplat.simulate.fleet import PRIORITY_RANK, SPOT_TOLERANT_BELOW, Flavor, SimTenant
from gpuplat.simulate.job import Job


class NoTenantsError(ValueError):
    """The spec has no tenant: no queue, so no job of a trace can be submitted anywhere."""


class UnknownTenantError(ValueError):
    """`--tenant-map` names a tenant the spec does not have."""


def gpu_hours(job: Job) -> float:
    return job.duration * job.gpus * job.fraction / 3600


def units(job: Job, flavor: Flavor) -> int | None:
    """Units the job asks of a flavor's pool, or None where its shape does not go."""
    if job.fraction < 1:
        if flavor.whole_gpu:
            return flavor.per_gpu
        return max(1, round(job.fraction * flavor.per_gpu)) if flavor.per_gpu > 1 else 1
    return job.gpus if flavor.per_gpu == 1 else None


def placements(job: Job, rank: int, tenant: SimTenant, by_key: dict[str, Flavor]) -> list[tuple[Flavor, int]]:
    out: list[tuple[Flavor, int]] = []
    for key in tenant.flavors:
        flavor = by_key[key]
        asked = units(job, flavor)
        if asked is None or asked > min(flavor.cap, tenant.limit[key]):
            continue
        if flavor.hazard > 0 and rank >= SPOT_TOLERANT_BELOW:
            continue  # only preemptible work tolerates the spot taint
        out.append((flavor, asked))
    return out


def why_not(job: Job, rank: int, tenant: SimTenant, by_key: dict[str, Flavor]) -> str:
    """Why `placements` is empty for the job, in words that group alike jobs."""
    flavors = [by_key[k] for k in tenant.flavors]
    shaped = [f for f in flavors if units(job, f) is not None]
    if not shaped:
        return f"whole GPUs: {tenant.name} may use no pool of whole GPUs"
    widest = max(min(f.cap, tenant.limit[f.key]) // f.per_gpu for f in shaped)
    fitting = [f for f in shaped if (units(job, f) or 0) <= min(f.cap, tenant.limit[f.key])]
    if not fitting:
        return f"wider than {tenant.name} may hold on one flavor ({widest} GPUs)"
    return f"critical work: {tenant.name}'s flavors wide enough are spot"


def _capacity(tenant: SimTenant, by_key: dict[str, Flavor], whole: bool) -> float:
    """GPUs the tenant may hold on the flavors that take the trace tenant's jobs (whole GPUs or shares)."""
    keys = [k for k in tenant.flavors if not whole or by_key[k].per_gpu == 1]
    return sum(min(by_key[k].cap, tenant.limit[k]) / by_key[k].per_gpu for k in keys)


def tenant_mapping(
    jobs: tuple[Job, ...] | list[Job], tenants: list[SimTenant], given: dict[str, str], by_key: dict[str, Flavor]
) -> dict[str, str]:
    """The trace's tenants -> the spec's: as given, the rest by GPU-hours onto the tenant that
    places most of them, balancing load against the GPUs each tenant may hold."""
    if not tenants and jobs:
        raise NoTenantsError(
            "the spec has no tenants, so the trace's jobs have no queue to be submitted to: add a tenant"
        )
    # Alike jobs (tenant, shape, priority) are weighed once: placement depends on nothing else.
    shapes: dict[str, dict[tuple[int, float, str | None], float]] = defaultdict(lambda: defaultdict(float))
    for j in jobs:
        shapes[j.tenant][j.gpus, j.fraction, j.priority] += gpu_hours(j)
    unknown = sorted(set(given.values()) - {t.name for t in tenants})
    if unknown:
        names = ", ".join(t.name for t in tenants)
        raise UnknownTenantError(f"--tenant-map names {', '.join(unknown)}, not a tenant of the spec ({names})")
    load = {t.name: 0.0 for t in tenants}
    out = {k: v for k, v in given.items() if k in shapes}
    for k, v in out.items():
        load[v] += sum(shapes[k].values())
    rest = sorted((k for k in shapes if k not in out), key=lambda k: (-sum(shapes[k].values()), k))
    for name in rest:
        total = sum(shapes[name].values())

        def placed(t: SimTenant, name: str = name) -> float:
            return sum(
                h
                for (gpus, fraction, priority), h in shapes[name].items()
                if placements(Job(0, 1, gpus, fraction, name, priority, None), _rank_of(priority, t), t, by_key)
            )

        # Whole-GPU work weighs a tenant by its whole-GPU flavors: shared pools do not run it.
        whole = sum(h for (_, fraction, _), h in shapes[name].items() if fraction >= 1) >= total / 2
        capacity = {t.name: _capacity(t, by_key, whole) or 1e-9 for t in tenants}
        scores = {t.name: placed(t) for t in tenants}
        best = max(scores.values())
        candidates = [t.name for t in tenants if scores[t.name] >= best - 1e-9 * max(best, 1.0)]
        chosen = min(candidates, key=lambda n: ((load[n] + total) / capacity[n], n))
        out[name] = chosen
        load[chosen] += total
    return out


def _rank_of(priority: str | None, tenant: SimTenant) -> int:
    return PRIORITY_RANK[priority] if priority else tenant.rank
