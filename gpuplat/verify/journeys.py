# pyright: strict
"""Follow a one-unit job of every tenant on every pool it may use, through what is emitted.

A journey is (tenant, pool, resource): the pools of the tenant's allow-list its isolation
permits, and each resource the pool's nodes advertise (the plan's; a custom MIG layout has one
per profile). Its steps name the object each relied on; a broken step says what is missing.

Steps 2-6 run once per flavor of the pool the tenant's ClusterQueue offers: Kueue may admit
the job into any of them, so every one must lead to a GPU. A step whose input is missing (no
ClusterQueue, no nodes) ends its chain; steps 7 to 9 do not depend on the chain and always run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpuplat.model import GpuNodePool, Platform, Provider, Tenant, isolation_permits
from gpuplat.plan import Plan

from .admission import admission_step
from .devices import device_plugin_step
from .k8s import Obj
from .nodes import capacity_step, existing_nodes_step, karpenter_nodes_step
from .queues import placement_step, queue_step, quota_step
from .render import NO_CHARTS, ChartDirectory
from .repair import repair_step
from .topology import asks_placement, node_levels_step, topology_step
from .types import QUEUE, Journey, Nodes, Placement, Step
from .view import View, build_view
from .volumes import volumes_step


def pool_resources(plan: Plan, pool: str) -> list[str]:
    units = plan.pool(pool).units
    return [r for r, n in (units.resources or {units.resource: units.per_node}).items() if n > 0] or [units.resource]


def journey_targets(model: Platform, plan: Plan) -> list[tuple[Tenant, GpuNodePool, str]]:
    targets: list[tuple[Tenant, GpuNodePool, str]] = []
    for tenant in model.tenants:
        for name in tenant.pools:
            pool = model.pools_by_name.get(name)
            if pool is None or not isolation_permits(tenant.isolation, pool):
                continue
            targets.extend((tenant, pool, resource) for resource in pool_resources(plan, name))
    return targets


def _flavor_chain(
    view: View,
    model: Platform,
    pool: GpuNodePool,
    resource: str,
    route: tuple[Obj, Obj, bool],
    registered: Sequence[str],
) -> list[Step]:
    """`route`: the ClusterQueue, the flavor, and whether the pool's job asks for a placement."""
    queue, flavor, asks = route
    placed = placement_step(flavor)
    steps = [placed.step]
    if not isinstance(placed.value, Placement):
        return steps
    tas = topology_step(view, queue, flavor, asks)
    if tas is not None:
        steps.append(tas)
        if not tas.ok:
            return steps
    placement = placed.value
    if model.target.provider is Provider.AWS:
        found = karpenter_nodes_step(view, placement)
    else:
        found = existing_nodes_step(view, pool, placement)
    steps.append(found.step)
    if not isinstance(found.value, Nodes):
        return steps
    nodes = found.value
    levels = node_levels_step(view, flavor, nodes) if model.target.provider is Provider.AWS else None
    if levels is not None:
        steps.append(levels)
        if not levels.ok:
            return steps
    if model.target.provider is Provider.AWS:
        steps.append(capacity_step(view, nodes, resource, placement.flavor, registered))
    steps.append(device_plugin_step(view, pool, nodes, resource, placement.flavor))
    return steps


def _queue_chain(
    view: View, model: Platform, tenant: Tenant, pool: GpuNodePool, resource: str, registered: Sequence[str]
) -> list[Step]:
    if model.scheduling.queueing != "kueue":
        return [Step(QUEUE, True, "queueing: none; jobs go to the nodes without Kueue (steps 2-6 not followed)")]
    queued = queue_step(view, tenant.name)
    steps = [queued.step]
    if queued.value is None:
        return steps
    quota = quota_step(view, queued.value, pool.name, resource)
    steps.append(quota.step)
    flavors: list[Obj] = quota.value or []
    asks = asks_placement(flavors)
    for flavor in flavors:
        steps += _flavor_chain(view, model, pool, resource, (queued.value, flavor, asks), registered)
    return steps


def follow(
    view: View, model: Platform, tenant: Tenant, pool: GpuNodePool, resource: str, registered: Sequence[str] = ()
) -> Journey:
    """`registered`: the resources the pool's device plugin registers on its nodes (default: `resource`)."""
    steps = _queue_chain(view, model, tenant, pool, resource, registered or (resource,))
    steps.append(admission_step(view, tenant.name, pool, resource))
    steps.append(volumes_step(view, model, tenant.name))
    steps.append(repair_step(view, model, pool))
    return Journey(tenant.name, pool.name, resource, tuple(steps))


def verify(
    model: Platform,
    plan: Plan,
    resources: Sequence[Mapping[str, Any]],
    charts: ChartDirectory = NO_CHARTS,
) -> list[Journey]:
    """Every journey over recorded resources (plain dicts with `type` and `inputs`), the Helm
    releases rendered from `charts` (steps that need a chart it lacks are not checked)."""
    view = build_view(resources, charts)
    return [
        follow(view, model, tenant, pool, resource, pool_resources(plan, pool.name))
        for tenant, pool, resource in journey_targets(model, plan)
    ]
