"""Kueue capacity limits the plan can see before anything is applied.

A ClusterQueue lists, per resource group, at most 64 flavors (Kueue CRD
`spec.resourceGroups[].flavors`, maxItems 64), and every flavor that offers a resource must sit
in the same group as that resource. The platform makes one flavor per pool and market with
nodes (one per pool on provider kubernetes), so a tenant allowed on many pools can need more
flavors for one resource than a ClusterQueue holds; the API server would refuse it on apply.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from gpuplat.model import Platform, Provider
from gpuplat.plan.capacity import FlavorPlan, QuotaPlan, tenant_flavors
from gpuplat.plan.codes import KUEUE_FLAVORS_PER_GROUP, NO_QUOTA_ON_POOL
from gpuplat.plan.types import PlanFinding, PoolPlan

MAX_FLAVORS_PER_GROUP = 64


def _flavor_resources(model: Platform, pool: PoolPlan) -> list[set[str]]:
    """One entry per flavor the pool yields: the resources that flavor offers."""
    resources = set(pool.units.resources or {pool.units.resource: pool.units.per_node})
    if model.target.provider is Provider.KUBERNETES:
        return [resources]
    return [resources for _ in pool.bought]


def flavor_limit_findings(model: Platform, pools: tuple[PoolPlan, ...]) -> list[PlanFinding]:
    if model.scheduling.queueing != "kueue":
        return []
    by_name = {p.name: p for p in pools}
    findings: list[PlanFinding] = []
    for index, tenant in enumerate(model.tenants):
        per_resource: Counter[str] = Counter()
        for name in tenant.pools:
            for resources in _flavor_resources(model, by_name[name]):
                per_resource.update(resources)
        if not per_resource:
            continue
        resource, count = per_resource.most_common(1)[0]
        if count > MAX_FLAVORS_PER_GROUP:
            findings.append(
                KUEUE_FLAVORS_PER_GROUP.finding(
                    ("tenants", index, "name"),
                    f"tenant {tenant.name} would need {count} Kueue flavors offering {resource} (one per pool "
                    f"and market with nodes) in one ClusterQueue resource group, above Kueue's "
                    f"{MAX_FLAVORS_PER_GROUP}; give the tenant a `pools` allow-list with fewer pools",
                )
            )
    return findings


def stranded(
    model: Platform, flavors: Sequence[FlavorPlan], quotas: Sequence[QuotaPlan]
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Pools a tenant may use where it can never be admitted: it holds no quota there and no
    other tenant lends any. A soft tenant lends all its quota to the cohort; a hard one lends
    none (`lendingLimit: 0`), so a pool only hard tenants hold strands every other tenant allowed
    on it, whatever its isolation: Kueue's quota nobody else can use. Returns, per pool, the
    tenants no one lends to there and the tenants of `gpus: 0` (who may borrow nothing)."""
    unlent: dict[str, list[str]] = {}
    no_gpus: dict[str, list[str]] = {}
    if model.scheduling.queueing != "kueue":
        return unlent, no_gpus
    pool_of = {f.key: f.pool for f in flavors}
    held: Counter[tuple[str, str]] = Counter()
    for q in quotas:
        held[q.tenant, pool_of[q.flavor]] += q.gpus
    isolation = {t.name: t.isolation for t in model.tenants}
    lent: Counter[str] = Counter()  # per pool, what soft tenants hold there (and lend when idle)
    for (tenant, pool), gpus in held.items():
        if isolation.get(tenant) != "hard":
            lent[pool] += gpus
    for tenant in model.tenants:
        for pool in sorted({f.pool for f in tenant_flavors(model, tenant, flavors)}):
            own = held[tenant.name, pool]
            lent_by_others = lent[pool] - (own if tenant.isolation != "hard" else 0)
            if own > 0:
                continue
            # A ClusterQueue borrows at most its tenant's gpus beyond its nominal quota, so a
            # tenant of `gpus: 0` is admitted nowhere, however much its cohort lends.
            if tenant.gpus <= 0:
                no_gpus.setdefault(pool, []).append(tenant.name)
            elif lent_by_others <= 0:
                unlent.setdefault(pool, []).append(tenant.name)
    return unlent, no_gpus


def unquoted_pool_findings(
    model: Platform, flavors: Sequence[FlavorPlan], quotas: Sequence[QuotaPlan]
) -> list[PlanFinding]:
    """GP354 at each pool that strands a tenant (`stranded`). `gpuplat verify` fails those
    journeys at the quota step, and the real Kueue leaves such a job pending for ever, so this
    is an error: `check` passes nothing `verify` fails."""
    unlent, no_gpus = stranded(model, flavors, quotas)
    return [
        NO_QUOTA_ON_POOL.finding(
            ("gpuNodePools", index, "name"),
            _stranded_message(pool.name, unlent.get(pool.name, []), no_gpus.get(pool.name, [])),
        )
        for index, pool in enumerate(model.pools)
        if pool.name in unlent or pool.name in no_gpus
    ]


def _stranded_message(pool: str, unlent: list[str], no_gpus: list[str]) -> str:
    """The cause each stranded tenant has; both named apart when a pool strands tenants of both."""
    both = bool(unlent and no_gpus)
    causes: list[str] = []
    if unlent:
        who = f"{_names(unlent)}: " if both else ""
        causes.append(
            f"{who}the quota flow placed their GPUs on their other pools and no tenant lends any "
            f"here (hard tenants lend none: lendingLimit 0)"
        )
    if no_gpus:
        who = f"{_names(no_gpus)} have" if both else "they have"
        causes.append(f"{who} gpus: 0 and may borrow none")
    return (
        f"pool {pool} holds no Kueue quota for {_names(unlent + no_gpus)}, which may use it: "
        f"{'; '.join(causes)}, so Kueue admits none of their jobs on {pool}; raise their gpus or leave "
        f"{pool} out of their pools"
    )


def _names(tenants: list[str]) -> str:
    shown = ", ".join(tenants[:5]) + (f" and {len(tenants) - 5} more" if len(tenants) > 5 else "")
    return f"tenant(s) {shown}"
