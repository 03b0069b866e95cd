"""Kueue flavors and tenant quotas as plain data (no Pulumi): what Scheduling emits.

The plan owns the list of flavors (gpuplat/plan/capacity.py: one per NodePool on aws, one per
pool on provider kubernetes) and each tenant's nominal GPUs on them, which never promise a
flavor more GPUs than it has. Here they become Kueue's resource groups.

Quota in GPU units. A tenant's `gpus` are whole-GPU equivalents; Kueue counts the extended
resources pods request, which differ per sharing mode, so each flavor's GPUs are converted with
the units one GPU of that pool advertises: 1 nvidia.com/gpu per whole GPU, `replicas`
nvidia.com/gpu.shared per time-sliced / MPS GPU, `replicas` HAMi vGPUs, and per MIG profile the
instances one GPU holds. The borrowing limit lets a tenant concentrate its whole quota on one
flavor, borrowing from the cohort, but never hold more than `gpus` GPUs' worth of any one flavor.
Lending follows isolation: a hard tenant lends nothing (`lendingLimit: 0`), so its guaranteed
GPUs are idle when it does not use them but free the moment it does, without waiting for a
preemption; a soft tenant lends all it does not use and reclaims it by preemption.

Resource groups: Kueue wants each resource in exactly one group and each flavor of a group to
list every resource of the group, so flavors whose resources overlap form one group (whole GPUs
share nvidia.com/gpu, time-sliced and MPS GPUs nvidia.com/gpu.shared, MIG pools profile names),
and a flavor lists 0 for a resource of its group it does not have.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from components.conventions import CAPACITY_TYPE_LABEL, POOL_LABEL, SPOT_TAINT_KEY, pool_taints
from gpuplat.model import Market, Platform, Tenant
from gpuplat.plan import Plan
from gpuplat.plan.capacity import isolation_permits, unit_resources
from gpuplat.plan.capacity import tenant_flavors as _tenant_flavors
from gpuplat.plan.types import FlavorPlan

from ._common import toleration, topology_name


def flavor_spec(model: Platform, flavor: FlavorPlan) -> dict[str, Any]:
    pool = model.pools_by_name[flavor.pool]
    if flavor.market is None:
        labels = {**pool.node_selector, POOL_LABEL: pool.name}
    else:
        labels = {POOL_LABEL: pool.name, CAPACITY_TYPE_LABEL: flavor.market.value}
    taints = pool_taints(pool, flavor.market)
    spec: dict[str, Any] = {
        "nodeLabels": labels,
        # Injected into admitted pods, so a workload needs no knowledge of the pool's taints;
        # Kueue also counts them when it checks the flavor's nodeTaints (flavorassigner.go).
        "tolerations": [toleration(t) for t in taints],
    }
    if flavor.market is Market.SPOT:
        # The spot decision is per tenant: a tenant whose ClusterQueue lists this flavor (its
        # allowed pools with a spot market, where the plan placed part of its quota) runs
        # here without tolerating anything itself, and Kueue preempts / requeues it like any
        # other work. The taint stays declared so the flavor says what its nodes carry.
        spec["nodeTaints"] = [t for t in taints if t["key"] == SPOT_TAINT_KEY]
    if flavor.topology_aware:
        spec["topologyName"] = topology_name(model)
    return spec


def tenant_flavors(model: Platform, tenant: Tenant, plan: Plan) -> list[FlavorPlan]:
    return _tenant_flavors(model, tenant, plan.flavors)


def _groups(chosen: Sequence[FlavorPlan]) -> list[list[FlavorPlan]]:
    """Flavors whose resources overlap, transitively, in first-seen order (Kueue tries a group's
    flavors in order: keep the pools' and markets' order, the one place where the order of the
    spec's pools means something). Union-find over the resources, so a
    tenant allowed on every pool costs one pass, not one comparison per pair of flavors."""
    root = list(range(len(chosen)))

    def find(i: int) -> int:
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    first: dict[str, int] = {}  # resource -> the first flavor listing it
    for i, flavor in enumerate(chosen):
        for resource in flavor.units:
            j = first.setdefault(resource, i)
            a, b = find(i), find(j)
            root[max(a, b)] = min(a, b)  # a group's root is its first flavor
    groups: dict[int, list[FlavorPlan]] = {}
    for i, flavor in enumerate(chosen):
        groups.setdefault(find(i), []).append(flavor)
    # Groups cover disjoint resources, so their order means nothing to Kueue: by resource name,
    # so that reordering pools that share no resource leaves the ClusterQueue as it is.
    return sorted(groups.values(), key=lambda group: min(r for f in group for r in f.units))


def resource_groups(model: Platform, tenant: Tenant, plan: Plan) -> list[dict[str, Any]]:
    chosen = tenant_flavors(model, tenant, plan)
    shares = plan.tenant_quotas(tenant.name)
    result: list[dict[str, Any]] = []
    for group in _groups(chosen):
        covered: list[str] = []
        for flavor in group:
            covered.extend(r for r in flavor.units if r not in covered)
        entries: list[dict[str, Any]] = []
        for flavor in group:
            quotas: list[dict[str, Any]] = []
            for resource in covered:
                per_gpu = flavor.units.get(resource, 0)
                nominal = shares.get(flavor.key, 0) * per_gpu
                # Quantities as strings, the form Kueue's webhook writes back (resource.Quantity):
                # as numbers, every `pulumi up` after the first would update each ClusterQueue.
                quota: dict[str, Any] = {
                    "name": resource,
                    "nominalQuota": str(nominal),
                    "borrowingLimit": str(tenant.gpus * per_gpu - nominal),
                }
                if tenant.isolation == "hard":
                    quota["lendingLimit"] = "0"
                quotas.append(quota)
            entries.append({"name": flavor.name, "resources": quotas})
        result.append({"coveredResources": covered, "flavors": entries})
    return result


def quota_ceilings(model: Platform, tenant: Tenant, plan: Plan, resources: Sequence[str]) -> dict[str, int]:
    """Per resource, the most units pods holding the tenant's `gpus` GPUs can request: the GPUs
    placed on the allowed pools with the most units of it per GPU first, each pool only up to
    its capacity (the sum of its flavors'); 0 for resources no allowed pool offers.

    Any placement of at most `gpus` GPUs within the pools' capacity stays under the ceiling, so
    the namespace quota never refuses work Kueue may admit within the tenant's GPUs.
    """
    capacity: dict[str, int] = {}
    units: dict[str, dict[str, int]] = {}
    for flavor in tenant_flavors(model, tenant, plan):
        capacity[flavor.pool] = capacity.get(flavor.pool, 0) + flavor.gpus
        units[flavor.pool] = dict(flavor.units)
    if model.scheduling.queueing != "kueue":
        # No Kueue, no flavors: the namespace quota alone bounds the tenant, over its allowed
        # pools at nodes.max (0 everywhere would refuse every GPU pod the tenant may run).
        for pool in plan.pools:
            if pool.name in tenant.pools and isolation_permits(tenant.isolation, model.pools_by_name[pool.name]):
                capacity[pool.name] = pool.nodes.max * pool.gpus_per_node
                units[pool.name] = unit_resources(pool)
    ceilings: dict[str, int] = {}
    for resource in resources:
        left, total = tenant.gpus, 0
        for pool in sorted(capacity, key=lambda p: -units[p].get(resource, 0)):
            per_gpu = units[pool].get(resource, 0)
            take = min(capacity[pool], left) if per_gpu > 0 else 0
            total, left = total + take * per_gpu, left - take
        ceilings[resource] = total
    return ceilings
