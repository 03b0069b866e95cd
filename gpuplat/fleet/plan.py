"""The fleet's numbers, seen from one member: who dispatches, in what order, each tenant's reach
and combined quota, and each member's GPUs and monthly cost.

Built when a spec with a `fleet` section compiles (gpuplat/compile.py), from the members' own
specs (members.py): the manager's ClusterQueues take their quotas from here, and `plan` and the
pull-request comment show it. A member that cannot be read offline (another project's stack
without `spec`) is listed with unknown numbers, and its share of a quota is left out, not guessed.
"""

from __future__ import annotations

from typing import Any

from gpuplat.fleet.members import LoadedMember, load_member
from gpuplat.fleet.quota import combined, tenant_units
from gpuplat.model import Platform
from gpuplat.model.fleet import Fleet
from gpuplat.plan.fleet_types import FleetPlan, MemberPlan, TenantReach


def _member_plan(fleet: Fleet, loaded: LoadedMember) -> MemberPlan:
    workers = [m.name for m in fleet.workers]
    role = "manager" if loaded.name == fleet.manager else "worker"
    position = workers.index(loaded.name) + 1 if role == "worker" else None
    model, plan = loaded.model, loaded.plan
    if model is None or plan is None:
        return MemberPlan(loaded.name, loaded.stack, role, position, "")
    cost = plan.cost.total_monthly_usd if plan.cost is not None else None
    return MemberPlan(
        loaded.name, loaded.stack, role, position, loaded.source, model.target.provider.value, plan.fleet_gpus, cost
    )


def build_fleet_plan(model: Platform, own_plan: Any = None) -> FleetPlan | None:
    """The fleet plan of a compiled spec with a `fleet` section, None without one."""
    fleet = model.fleet
    if fleet is None:
        return None
    loaded = {
        m.name: load_member({"name": m.name, "stack": m.stack, **({"spec": m.spec} if m.spec else {})})
        for m in fleet.members
    }
    manager = loaded[fleet.manager].model
    tenants = manager.tenants if manager is not None else model.tenants
    reaches: list[TenantReach] = []
    for tenant in tenants:
        workers = fleet.tenant_workers(tenant.name)
        per_worker: dict[str, dict[str, int]] = {}
        unknown: list[str] = []
        for worker in workers:
            member = loaded[worker]
            if member.model is None or member.plan is None:
                unknown.append(worker)
                continue
            units = tenant_units(member.model, member.plan, tenant.name)
            if units:
                per_worker[worker] = units
        reaches.append(TenantReach(tenant.name, workers, per_worker, combined(per_worker.values()), tuple(unknown)))
    members = tuple(_member_plan(fleet, loaded[m.name]) for m in fleet.members)
    return FleetPlan(fleet.name, fleet.manager, fleet.queue, members, tuple(reaches))
