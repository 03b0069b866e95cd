"""The planner: derived numbers (procurement split, sharing capacity, fabric, storage, cost).

`build_plan` runs every stage and collects all findings, so one run reports every problem.
Any error finding leaves `plan` None: numbers built on an impossible split or fabric would
only mislead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gpuplat.diagnostics import Level
from gpuplat.model import GpuNodePool, Market, Platform
from gpuplat.plan.capacity import flavors, floor_findings, node_overlays, node_pools, quotas, topology_findings
from gpuplat.plan.cost import missing_prices, plan_cost
from gpuplat.plan.eks_support import eks_support
from gpuplat.plan.fabric import efa_interfaces, plan_fabric, ports_per_node
from gpuplat.plan.health import plan_health
from gpuplat.plan.procurement import capacity_blocks, plan_procurement, reservations
from gpuplat.plan.queues import flavor_limit_findings, stranded, unquoted_pool_findings
from gpuplat.plan.rails import plan_rails
from gpuplat.plan.sharing import sharing_units
from gpuplat.plan.storage import plan_storage, storage_quota_findings
from gpuplat.plan.types import MarketShare, Plan, PlanFinding, PlanOutcome, PoolPlan
from gpuplat.plan.workload_fit import capacity_findings, workload_findings
from gpuplat.plan.workloads import plan_workloads, storage_sizes
from gpuplat.plan.zones import fabric_zone


def _ports(model: Platform, pool: GpuNodePool) -> int:
    fabric = model.network.fabric
    return ports_per_node(pool, fabric) if pool.fabric and fabric is not None else 0


def _pool_plans(model: Platform, shares: Sequence[Mapping[Market, MarketShare]], fabric: bool) -> tuple[PoolPlan, ...]:
    return tuple(
        PoolPlan(
            name=p.name,
            instance_type=p.instance_type,
            gpu_model=p.gpu_model,
            gpus_per_node=p.gpus_per_node,
            nodes=p.nodes,
            markets=market_shares,
            units=sharing_units(p),
            ports_per_node=_ports(model, p) if fabric else 0,
            efa_interfaces=efa_interfaces(p, model) if fabric else 0,
        )
        for p, market_shares in zip(model.pools, shares, strict=True)
    )


def stranded_tenants(model: Platform) -> dict[str, list[str]]:
    """Per pool, the tenants allowed there that Kueue would never admit there (GP354), from the
    quota flow alone: for a generator or a tool that fixes a spec by the finding's advice."""
    procurement = plan_procurement(model)
    fabric, _ = plan_fabric(model)
    pools = _pool_plans(model, procurement.shares, fabric is not None)
    planned_flavors = flavors(model, pools, node_pools(model, pools))
    unlent, no_gpus = stranded(model, planned_flavors, quotas(model, planned_flavors)[0])
    return {pool: unlent.get(pool, []) + no_gpus.get(pool, []) for pool in {*unlent, *no_gpus}}


def build_plan(model: Platform) -> PlanOutcome:
    procurement = plan_procurement(model)
    fabric, fabric_findings = plan_fabric(model)
    findings = (*procurement.findings, *fabric_findings, *missing_prices(model), *capacity_findings(model))
    if any(f.level is Level.ERROR for f in findings):
        return PlanOutcome(None, findings)
    pools = _pool_plans(model, procurement.shares, fabric is not None)
    planned_node_pools = node_pools(model, pools)
    planned_flavors = flavors(model, pools, planned_node_pools)
    planned_quotas, quota_findings = quotas(model, planned_flavors)
    storage = plan_storage(model, storage_sizes(model))
    workloads = plan_workloads(model, storage)
    findings = (
        *findings,
        *flavor_limit_findings(model, pools),
        *quota_findings,
        *unquoted_pool_findings(model, planned_flavors, planned_quotas),
        *topology_findings(model, pools),
        *floor_findings(model, pools),
        *workload_findings(model, workloads, storage),
        *storage_quota_findings(model, storage),
    )
    if any(f.level is Level.ERROR for f in findings):
        return PlanOutcome(None, findings)
    zone = fabric_zone(model)
    cost = plan_cost(model, procurement.shares, storage)
    plan = Plan(
        pools=pools,
        fleet_gpus=sum(p.max_gpus for p in model.pools),
        fleet_markets=procurement.fleet_markets,
        reservations=reservations(model, procurement.shares, zone),
        fabric=fabric,
        storage=storage,
        cost=cost,
        capacity_blocks=capacity_blocks(model, procurement.shares),
        fleet_targets=procurement.targets,
        fleet_tolerance=procurement.tolerance,
        node_pools=planned_node_pools,
        node_overlays=node_overlays(pools, planned_node_pools),
        flavors=planned_flavors,
        quotas=planned_quotas,
        workloads=workloads,
        fabric_zone=zone,
        eks_support=eks_support(model),
        rails=plan_rails(model),
        health=plan_health(model, planned_node_pools, cost),
    )
    return PlanOutcome(plan, findings)


__all__ = ["Plan", "PlanFinding", "PlanOutcome", "build_plan"]
