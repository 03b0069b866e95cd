"""A tenant's quota on one member, per resource name, and the fleet's combined quota.

On a member, the tenant's ClusterQueue guarantees its nominal GPUs on each flavor it may use
(gpuplat/plan/capacity.py); Kueue counts them in the units pods request (a whole GPU is one
nvidia.com/gpu, a time-sliced GPU `replicas` nvidia.com/gpu.shared, ...). The manager's queue
for the tenant is sized to the sum over the workers it may use, as Kueue advises for MultiKueue
(a smaller quota leaves workers idle, a larger one dispatches work no worker can admit).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gpuplat.model import Platform
from gpuplat.plan import Plan
from gpuplat.plan.capacity import tenant_flavors


def tenant_units(model: Platform, plan: Plan, tenant: str) -> dict[str, int]:
    """Resource name -> the tenant's nominal units on this platform; {} when it is no tenant."""
    found = next((t for t in model.tenants if t.name == tenant), None)
    if found is None:
        return {}
    shares = plan.tenant_quotas(tenant)
    units: dict[str, int] = {}
    for flavor in tenant_flavors(model, found, plan.flavors):
        for resource, per_gpu in flavor.units.items():
            units[resource] = units.get(resource, 0) + shares.get(flavor.key, 0) * per_gpu
    return units


def combined(per_member: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """The sum, per resource name, of a tenant's quotas on the workers it may use (sorted by name)."""
    total: dict[str, int] = {}
    for units in per_member:
        for resource, count in units.items():
            total[resource] = total.get(resource, 0) + count
    return dict(sorted(total.items()))
