"""Kueue flavors and tenant quotas as plain data (no Pulumi): what Scheduling emits.

Flavors: one per pool and market on aws (the market is a node label Karpenter sets), only for
the markets the plan gives nodes (the others have no NodePool), one per pool on provider
kubernetes. A flavor's capacity is the GPUs the plan gives that pool and market (on kubernetes
the pool at max size).

Quota in GPU units. A tenant's `gpus` are whole-GPU equivalents; Kueue counts the extended
resources pods request, which differ per sharing mode. So the tenant's GPUs are first split
over its allowed flavors in proportion to their capacity (largest remainder, whole GPUs; the
split sums to `gpus`), then each flavor's share is converted with the units one GPU of that
pool advertises (`_common.unit_resources`): 1 nvidia.com/gpu per whole GPU, `replicas` per
time-sliced / MPS / HAMi GPU, and per MIG profile the instances one GPU holds. The
borrowing limit lets a tenant concentrate its whole quota on one flavor, borrowing from the
cohort, but never hold more than `gpus` GPUs' worth of any one flavor.

Resource groups: Kueue wants each resource in exactly one group and each flavor of a group to
list every resource of the group, so flavors whose resources overlap form one group (whole,
time-sliced and MPS GPUs share nvidia.com/gpu; MIG pools share profile names), and a flavor
lists 0 for a resource of its group it does not have.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from components.conventions import CAPACITY_TYPE_LABEL, POOL_LABEL, SPOT_TAINT_KEY, pool_taints
from gpuplat.model import GpuNodePool, Market, Platform, Provider, Tenant, isolation_permits
from gpuplat.plan import Plan

from ._common import prefix, toleration, topology_name, unit_resources


@dataclass(frozen=True)
class Flavor:
    key: str  # stable suffix of Pulumi names: pool, or pool-market
    name: str  # ResourceFlavor metadata.name
    pool: GpuNodePool
    market: Market | None
    gpus: int  # capacity
    units: dict[str, int]  # resource -> units per GPU


def flavors(model: Platform, plan: Plan) -> list[Flavor]:
    result: list[Flavor] = []
    for pool in model.pools:
        plan_pool = plan.pool(pool.name)
        units = unit_resources(pool, plan_pool)
        if model.target.provider is Provider.AWS:
            for market in pool.markets:
                share = plan_pool.share(market)
                if share.nodes == 0:
                    # No NodePool behind it (GpuNodePool skips the market): a flavor would
                    # only be a first choice Kueue tries and fails to place on.
                    continue
                key = f"{pool.name}-{market.value}"
                result.append(Flavor(key, f"{prefix(model)}-{key}", pool, market, share.gpus, units))
        else:
            result.append(Flavor(pool.name, f"{prefix(model)}-{pool.name}", pool, None, pool.max_gpus, units))
    return result


def flavor_spec(model: Platform, flavor: Flavor) -> dict[str, Any]:
    pool = flavor.pool
    if flavor.market is None:
        labels = {**pool.node_selector, POOL_LABEL: pool.name}
    else:
        labels = {POOL_LABEL: pool.name, CAPACITY_TYPE_LABEL: flavor.market.value}
    spec: dict[str, Any] = {
        "nodeLabels": labels,
        # Injected into admitted pods, so a workload needs no knowledge of the pool's taints.
        "tolerations": [toleration(t) for t in pool_taints(pool, None)],
    }
    if flavor.market is Market.SPOT:
        # A node taint, not a toleration: Kueue only assigns this flavor to workloads that
        # tolerate the spot taint themselves, i.e. declare that they may be interrupted.
        spec["nodeTaints"] = [{"key": SPOT_TAINT_KEY, "value": "true", "effect": "NoSchedule"}]
    if pool.fabric and model.scheduling.topology_aware and model.network.fabric is not None:
        spec["topologyName"] = topology_name(model)
    return spec


def split(total: int, weights: Sequence[int]) -> list[int]:
    """`total` in whole parts proportional to `weights` (largest remainder; ties: first)."""
    if not weights:
        return []
    if sum(weights) <= 0:
        weights = [1] * len(weights)
    whole = sum(weights)
    exact = [total * w / whole for w in weights]
    parts = [int(x) for x in exact]
    order = sorted(range(len(weights)), key=lambda i: (-(exact[i] - parts[i]), i))
    for i in order[: total - sum(parts)]:
        parts[i] += 1
    return parts


def tenant_flavors(tenant: Tenant, all_flavors: Sequence[Flavor]) -> list[Flavor]:
    return [f for f in all_flavors if f.pool.name in tenant.pools and isolation_permits(tenant.isolation, f.pool)]


def _groups(chosen: Sequence[Flavor]) -> list[list[Flavor]]:
    """Flavors whose resources overlap, transitively, in first-seen order."""
    groups: list[list[Flavor]] = []
    for flavor in chosen:
        touching = [g for g in groups if any(set(f.units) & set(flavor.units) for f in g)]
        merged = [f for g in touching for f in g] + [flavor]
        groups = [g for g in groups if g not in touching]
        groups.append(merged)
    # Kueue tries a group's flavors in order: keep the pools' and markets' order.
    ordered = [sorted(g, key=chosen.index) for g in groups]
    return sorted(ordered, key=lambda g: chosen.index(g[0]))


def resource_groups(tenant: Tenant, all_flavors: Sequence[Flavor]) -> list[dict[str, Any]]:
    chosen = tenant_flavors(tenant, all_flavors)
    shares = dict(zip((f.key for f in chosen), split(tenant.gpus, [f.gpus for f in chosen]), strict=True))
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
                nominal = shares[flavor.key] * per_gpu
                quotas.append(
                    {"name": resource, "nominalQuota": nominal, "borrowingLimit": tenant.gpus * per_gpu - nominal}
                )
            entries.append({"name": flavor.name, "resources": quotas})
        result.append({"coveredResources": covered, "flavors": entries})
    return result


def quota_ceilings(tenant: Tenant, all_flavors: Sequence[Flavor], resources: Sequence[str]) -> dict[str, int]:
    """Per resource, the most units pods holding the tenant's `gpus` GPUs can request: the GPUs
    placed on the allowed pools with the most units of it per GPU first, each pool only up to
    its capacity (the sum of its flavors'); 0 for resources no allowed pool offers.

    Any placement of at most `gpus` GPUs within the pools' capacity stays under the ceiling, so
    the namespace quota never refuses work Kueue may admit within the tenant's GPUs.
    """
    capacity: dict[str, int] = {}
    units: dict[str, dict[str, int]] = {}
    for flavor in tenant_flavors(tenant, all_flavors):
        capacity[flavor.pool.name] = capacity.get(flavor.pool.name, 0) + flavor.gpus
        units[flavor.pool.name] = flavor.units
    ceilings: dict[str, int] = {}
    for resource in resources:
        left, total = tenant.gpus, 0
        for pool in sorted(capacity, key=lambda p: -units[p].get(resource, 0)):
            per_gpu = units[pool].get(resource, 0)
            take = min(capacity[pool], left) if per_gpu > 0 else 0
            total, left = total + take * per_gpu, left - take
        ceilings[resource] = total
    return ceilings
