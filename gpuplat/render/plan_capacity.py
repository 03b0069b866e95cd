"""The capacity objects in the plan: the JSON `capacity` document and the text section's table.

JSON: `nodePools` [{name, pool, market, nodes, gpuLimit, limits, weight}] (aws), `nodeOverlays`
[{name, pool, nodePools, capacity}] (aws), `flavors` [{name, pool, market, gpus, resources,
topologyAware}] and `quotas` [{tenant, flavor, gpus}] (the tenant's nominal GPUs per flavor;
the flavor is the ResourceFlavor's name).

Text: per tenant its nominal GPUs per flavor and in total, against what each flavor has, so a
reader sees where the guarantees sit before anything is applied.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gpuplat.plan.types import Plan

Json = dict[str, Any]
Table = Callable[[Sequence[str], Sequence[Sequence[str]], frozenset[int]], str]


def capacity_json(plan: Plan) -> Json:
    flavor_names = {f.key: f.name for f in plan.flavors}
    return {
        "nodePools": [
            {
                "name": n.name,
                "pool": n.pool,
                "market": n.market.procurement_key,
                "nodes": n.nodes,
                "gpuLimit": n.gpus,
                "limits": dict(n.limits),
                "weight": n.weight,
            }
            for n in plan.node_pools
        ],
        "nodeOverlays": [
            {"name": o.name, "pool": o.pool, "nodePools": list(o.node_pools), "capacity": dict(o.capacity)}
            for o in plan.node_overlays
        ],
        "flavors": [
            {
                "name": f.name,
                "pool": f.pool,
                "market": f.market.procurement_key if f.market is not None else None,
                "gpus": f.gpus,
                "resources": dict(f.units),
                "topologyAware": f.topology_aware,
            }
            for f in plan.flavors
        ],
        "quotas": [{"tenant": q.tenant, "flavor": flavor_names[q.flavor], "gpus": q.gpus} for q in plan.quotas],
    }


def capacity_table(plan: Plan, table: Table) -> str | None:
    if not plan.flavors:
        return None
    tenants = list(dict.fromkeys(q.tenant for q in plan.quotas))
    header = ["flavor", "GPUs", *tenants, "promised"]
    # One pass over the quotas, then look-ups: a scan per cell is flavors x tenants x quotas.
    gpus: dict[tuple[str, str], int] = {}
    totals_by_tenant: dict[str, int] = dict.fromkeys(tenants, 0)
    for q in plan.quotas:
        gpus.setdefault((q.tenant, q.flavor), q.gpus)  # the first, as the scan found it
        totals_by_tenant[q.tenant] += q.gpus
    rows: list[list[str]] = []
    for flavor in plan.flavors:
        shares = [gpus.get((t, flavor.key), 0) for t in tenants]
        mark = " (topology-aware)" if flavor.topology_aware else ""
        rows.append([flavor.name + mark, str(flavor.gpus), *[str(s) if s else "-" for s in shares], str(sum(shares))])
    totals = [str(totals_by_tenant[t]) for t in tenants]
    rows.append(["total", str(sum(f.gpus for f in plan.flavors)), *totals, str(sum(q.gpus for q in plan.quotas))])
    right = frozenset(range(1, len(header)))
    return table(header, rows, right)
