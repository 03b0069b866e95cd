"""The plan as a JSON document (documented in docs/cli.md, `gpuplat plan`) and as aligned text tables
(laid out by templates/plan.txt.j2).

JSON: the documented keys are always present (CI tools read them); the extra keys
(perGpu, overhead, leafDown, pricesAsOf ...) only add. Every pool lists all three markets,
zeros for those it does not use; on provider kubernetes (no procurement) all are zero and
`cost` is null. Money is rounded to cents, percentages and seconds to 2 decimals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpuplat.model import MARKET_ORDER, GpuNodePool, Market, Platform
from gpuplat.plan.types import FabricPlan, MarketShare, Plan, PoolPlan, StoragePlan

from ._templates import block, render
from .plan_capacity import capacity_json, capacity_table
from .plan_cost import capacity_blocks_json, capacity_blocks_text, cost_json, cost_text
from .plan_fleet import fleet_json, fleet_text
from .plan_health import health_json, health_text
from .plan_kubernetes import kubernetes_facts, kubernetes_json
from .plan_rails import rails_json, rails_text
from .plan_workloads import workload_details, workloads_json, workloads_table

Json = dict[str, Any]


def _num(value: float, digits: int = 2) -> int | float:
    rounded = round(value, digits)
    return int(rounded) if rounded == int(rounded) else rounded


def _opt(value: float | None, digits: int = 2) -> int | float | None:
    return None if value is None else _num(value, digits)


def _markets(pool: PoolPlan) -> Json:
    return {m.procurement_key: {"nodes": pool.share(m).nodes, "gpus": pool.share(m).gpus} for m in MARKET_ORDER}


def _own_mix(spec: GpuNodePool) -> Json | None:
    return None if spec.procurement is None else {m.procurement_key: _num(spec.procurement[m]) for m in MARKET_ORDER}


def _pool_json(pool: PoolPlan, spec: GpuNodePool) -> Json:
    units = pool.units
    unit_json: Json = {
        "resource": units.resource,
        "perNode": units.per_node,
        "perGpu": units.per_gpu,
        "resources": dict(units.resources),
        "overhead": units.overhead,
        "gpuEquivalentsPerNode": _num(units.gpu_equivalents_per_node),
    }
    if units.mig_devices is not None:
        unit_json["migDevices"] = dict(units.mig_devices)
    return {
        "name": pool.name,
        "instanceType": pool.instance_type,
        "gpuModel": pool.gpu_model,
        "gpusPerNode": pool.gpus_per_node,
        "nodes": {"min": pool.nodes.min, "max": pool.nodes.max},
        "markets": _markets(pool),
        "units": unit_json,
        # What decides its split (render/plan_delta.py tells knock-on moves from its own changes).
        "allowedMarkets": [m.procurement_key for m in MARKET_ORDER if m in pool.markets],
        "procurement": _own_mix(spec),
    }


def _fabric_json(fabric: FabricPlan | None, pools: Sequence[PoolPlan], zone: str | None) -> Json | None:
    if fabric is None:
        return None
    members = [p for p in pools if p.name in fabric.pools]
    return {
        "hosts": fabric.hosts,
        "leaves": fabric.leaves,
        "spines": fabric.spines,
        "cores": fabric.cores,
        "switches": fabric.switches,
        "links": fabric.links,
        "bisectionGbps": _num(fabric.bisection_gbps),
        "tiers": fabric.tiers,
        "radix": fabric.radix,
        "oversubscription": _num(fabric.oversubscription),
        "linkGbps": fabric.link_gbps,
        "leafDown": fabric.leaf_down,
        "leafUp": fabric.leaf_up,
        "pods": fabric.pods,
        "maxHosts": fabric.max_hosts,
        "zone": zone,
        "portsPerNode": {p.name: p.ports_per_node for p in members},
        "efaInterfacesPerNode": {p.name: p.efa_interfaces for p in members},
    }


def _storage_json(storage: StoragePlan, model: Platform, zone: str | None) -> Json:
    hot, warm = storage.hot, storage.warm
    return {
        "hot": None
        if hot is None
        else {
            "requestedTiB": _num(hot.requested_tib),
            "capacityGiB": hot.capacity_gib,
            "rounded": hot.rounded,
            "throughputPerTiB": hot.throughput_per_tib,
            "throughputMBps": _opt(hot.throughput_mbps),
            "checkpointWriteSeconds": _opt(hot.checkpoint_write_seconds),
            "modelLoadSeconds": _opt(hot.model_load_seconds),
            "standard": None
            if hot.standard is None
            else {
                "capacityGiB": hot.standard.capacity_gib,
                "throughputPerTiB": hot.standard.throughput_per_tib,
                "throughputMBps": _num(hot.standard.throughput_mbps),
                "tenants": list(hot.standard_tenants),
            },
            "criticalThroughputShare": _opt(hot.critical_throughput_share),
            "criticalShareAsked": _opt(hot.critical_share_asked),
            # What the hot tier provisions in all: the spec's file system plus the standard one.
            "totalCapacityGiB": hot.total_capacity_gib,
        },
        "warm": None if warm is None else {"capacityTiB": _num(warm.capacity_tib), "zone": zone},
        "cold": None
        if model.storage.cold is None
        else {
            "lifecycle": [{"afterDays": s.after_days, "storageClass": s.storage_class} for s in storage.cold_lifecycle]
        },
        "qos": {"criticalIopsShare": model.storage.critical_iops_share},
    }


def _by_market(values: Mapping[Market, float]) -> Json:
    return {m.procurement_key: _num(values.get(m, 0.0)) for m in MARKET_ORDER}


def _fleet_mix(model: Platform) -> dict[Market, float]:
    assert model.procurement is not None
    return {m: model.procurement.share(m) for m in MARKET_ORDER}


def _own_mix_line(model: Platform) -> str | None:
    own = [
        f"{p.name} " + ", ".join(f"{m.value} {p.procurement[m]:g} %" for m in MARKET_ORDER if p.procurement[m])
        for p in model.pools
        if p.procurement is not None
    ]
    return "own procurement, split apart from the fleet-wide mix: " + "; ".join(own) if own else None


def plan_json(model: Platform, plan: Plan) -> Json:
    fleet = plan.fleet_gpus
    cost = plan.cost
    return {
        "kubernetes": kubernetes_json(model, plan),
        "pools": [_pool_json(p, spec) for p, spec in zip(plan.pools, model.pools, strict=True)],
        "fleet": {
            "gpus": fleet,
            "markets": {m.procurement_key: plan.fleet_markets.get(m, 0) for m in MARKET_ORDER},
            "percent": _by_market({m: 100 * g / fleet for m, g in plan.fleet_markets.items()} if fleet else {}),
            "targetGpus": _by_market(plan.fleet_targets),
            "toleranceGpus": _by_market({m: float(t) for m, t in plan.fleet_tolerance.items()}),
            # The fleet-wide mix: it splits the pools without a procurement of their own.
            "procurement": None if model.procurement is None else _by_market(_fleet_mix(model)),
        },
        "fabric": _fabric_json(plan.fabric, plan.pools, plan.fabric_zone),
        "rails": rails_json(plan.rails),
        "storage": _storage_json(plan.storage, model, plan.fabric_zone),
        "cost": cost_json(cost),
        "reservations": [
            {
                "pool": r.pool,
                "zone": r.zone,
                "instanceType": r.instance_type,
                "nodes": r.count,
                "placementGroup": r.placement_group,
            }
            for r in plan.reservations
        ],
        "capacityBlocks": capacity_blocks_json(plan),
        "capacity": capacity_json(plan),
        "health": health_json(plan),
        **({"workloads": workloads_json(plan.workloads)} if plan.workloads else {}),
        **({"clusterFleet": fleet_json(plan.cluster_fleet)} if plan.cluster_fleet is not None else {}),
    }


# ---- text -----------------------------------------------------------------------------------


def table(header: Sequence[str], rows: Sequence[Sequence[str]], right: frozenset[int] = frozenset()) -> str:
    """Columns padded to their widest cell; `right` columns (numbers) right-aligned."""
    # Column by column (zip(*rows)), padders chosen once per column: the capacity table of a large
    # spec has a column per tenant and a row per flavor, 10^5 cells.
    widths = [max(map(len, column)) for column in zip(header, *rows, strict=True)]
    pads = [str.rjust if i in right else str.ljust for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join([pad(c, w) for pad, c, w in zip(pads, cells, widths, strict=True)]).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)]) + "\n"


def _share(s: MarketShare, allowed: bool) -> str:
    return f"{s.nodes} ({s.gpus})" if allowed else "-"


def _pools_table(model: Platform, plan: Plan) -> str:
    def base(p: PoolPlan) -> list[str]:
        return [
            p.name,
            p.instance_type or "-",
            p.gpu_model,
            str(p.gpus_per_node),
            f"{p.nodes.min}-{p.nodes.max}",
            str(p.nodes.max * p.gpus_per_node),
        ]

    header = ["pool", "instance", "GPU", "GPUs/node", "nodes", "GPUs"]
    fleet = plan.fleet_gpus
    if model.procurement is None:
        rows = [*(base(p) for p in plan.pools), ["fleet", "", "", "", "", str(fleet)]]
        return table(header, rows, frozenset({3, 4, 5}))
    rows = [[*base(p), *(_share(p.share(m), m in p.markets) for m in MARKET_ORDER)] for p in plan.pools]
    blank = ["", "", "", "", ""]
    rows.append(["fleet", *blank, *(str(plan.fleet_markets.get(m, 0)) for m in MARKET_ORDER)])
    rows[-1][5] = str(fleet)
    rows.append(["share", *blank, *(f"{100 * plan.fleet_markets.get(m, 0) / fleet:.1f} %" for m in MARKET_ORDER)])
    rows.append(
        [
            "target",
            *blank,
            *(f"{plan.fleet_targets.get(m, 0):g} ±{plan.fleet_tolerance.get(m, 0)}" for m in MARKET_ORDER),
        ]
    )
    return table([*header, *(m.value for m in MARKET_ORDER)], rows, frozenset(range(3, 9)))


def _sharing_table(model: Platform, plan: Plan) -> str:
    rows: list[list[str]] = []
    for spec, p in zip(model.pools, plan.pools, strict=True):
        u = p.units
        resources = ", ".join(f"{r} x{n}" for r, n in u.resources.items()) or "none"
        rows.append(
            [
                p.name,
                spec.sharing.mode.value,
                resources,
                str(u.per_gpu),
                str(u.per_node),
                f"{100 * u.overhead:.1f} %",
                f"{u.gpu_equivalents_per_node:.2f}",
            ]
        )
    return table(
        ["pool", "mode", "resources per node", "units/GPU", "units/node", "overhead", "GPU-equivalents"],
        rows,
        frozenset({3, 4, 5, 6}),
    )


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def _fabric_rows(plan: Plan) -> list[list[str]] | None:
    f = plan.fabric
    if f is None:
        return None
    ports = ", ".join(f"{p.name} {p.ports_per_node}" for p in plan.pools if p.name in f.pools)
    efa = ", ".join(f"{p.name} {p.efa_interfaces}" for p in plan.pools if p.name in f.pools and p.efa_interfaces)
    rows = [
        ["topology", f"{f.tiers}-tier fat-tree, radix {f.radix}, {f.link_gbps} Gbps links, {f.oversubscription:g}:1"],
        ["host ports per node", ports],
        ["host ports", f"{f.hosts} (max {f.max_hosts})"],
        ["leaf ports", f"{f.leaf_down} down, {f.leaf_up} up"],
        [
            "switches",
            f"{f.switches} = {_count(f.leaves, 'leaf', 'leaves')} + {_count(f.spines, 'spine')} + "
            f"{_count(f.cores, 'core')}" + (f" ({f.pods} pods)" if f.pods else ""),
        ],
        ["switch links", str(f.links)],
        ["bisection", f"{f.bisection_gbps:,.0f} Gbps"],
    ]
    if efa:
        rows.append(["EFA interfaces per node", efa])
    if plan.fabric_zone:
        rows.append(["zone", f"{plan.fabric_zone} (a cluster placement group per pool: {', '.join(f.pools)})"])
    width = max(len(k) for k, _ in rows)
    return [[k.ljust(width), v] for k, v in rows]


def _percent(value: float | None) -> str:
    # One decimal: a share just above the one asked (FSx sizes are steps) must not read as it.
    return "-" if value is None else f"{value:.1%}"


def _standard_hot_monthly(plan: Plan) -> float | None:
    """The standard file system's monthly list price (a line of the services cost)."""
    lines = plan.cost.services if plan.cost is not None else ()
    return next((c.monthly_usd for c in lines if c.item.startswith("FSx for Lustre hot (standard)")), None)


def _storage_table(plan: Plan) -> str | None:
    s = plan.storage
    rows: list[list[str]] = []
    if s.hot is not None:
        h = s.hot
        # aws sizes the file system FSx makes (GiB, rounded to its steps); on kubernetes the tier is
        # a StorageClass asked for in TiB like the warm tier beside it, so it is shown in TiB.
        owned = h.throughput_per_tib is None
        size = f"{h.requested_tib:g} TiB" if owned else f"{h.capacity_gib} GiB"
        size += f" (asked {h.requested_tib:g} TiB)" if h.rounded else ""
        speed = f"{h.throughput_mbps:,.0f} MB/s ({h.throughput_per_tib}/TiB)" if h.throughput_mbps else "-"
        times = [
            f"checkpoint write {h.checkpoint_write_seconds:.1f} s" if h.checkpoint_write_seconds else "",
            f"model load {h.model_load_seconds:.1f} s" if h.model_load_seconds else "",
        ]
        rows.append(["hot", size, speed, ", ".join(t for t in times if t) or "-"])
        if h.standard is not None and h.critical_throughput_share is not None and h.throughput_mbps:
            std = h.standard
            monthly = _standard_hot_monthly(plan)
            cost = f", ${monthly:,.0f}/month" if monthly is not None else ""
            total = h.throughput_mbps + std.throughput_mbps
            rows.append(
                [
                    "hot (standard)",
                    f"{std.capacity_gib} GiB",
                    f"{std.throughput_mbps:,.0f} MB/s ({std.throughput_per_tib}/TiB)",
                    f"tenants {', '.join(h.standard_tenants)}; beyond storage.hot: +{std.capacity_gib} GiB{cost}; "
                    f"critical tenants keep {_percent(h.critical_throughput_share)} of the hot throughput "
                    f"({h.throughput_mbps:,.0f} of {total:,.0f} MB/s; asked >= "
                    f"{_percent(h.critical_share_asked)})",
                ]
            )
    if s.warm is not None:
        zone = plan.fabric_zone
        rows.append(["warm", f"{s.warm.capacity_tib:g} TiB", "-", f"zone {zone}" if zone else "-"])
    if s.cold_lifecycle:
        # The first step is where objects land (day 0): its class alone, not "@0d".
        steps = " -> ".join(
            c.storage_class if c.after_days == 0 else f"{c.storage_class}@{c.after_days}d" for c in s.cold_lifecycle
        )
        rows.append(["cold", "-", "-", steps])
    return table(["tier", "capacity", "throughput", "notes"], rows) if rows else None


def _reservations_table(plan: Plan) -> str | None:
    if not plan.reservations:
        return None
    rows = [
        [r.pool, r.zone, r.instance_type, str(r.count), "yes" if r.placement_group else "no"] for r in plan.reservations
    ]
    return table(["pool", "zone", "instance", "nodes", "placement group"], rows, frozenset({3}))


def _optional(text: str | None) -> str | None:
    return None if text is None else block(text)


def plan_text(model: Platform, plan: Plan) -> str:
    """`gpuplat plan`'s text: the sections laid out by templates/plan.txt.j2."""
    target = model.target
    return render(
        "plan.txt.j2",
        name=model.metadata.name,
        where=f"{target.provider.value}" + (f", {target.region}" if target.region else ""),
        kubernetes=kubernetes_facts(model, plan),
        owned=model.procurement is None,
        pools=block(_pools_table(model, plan)),
        own_mix=_own_mix_line(model),
        sharing=block(_sharing_table(model, plan)),
        fabric=_fabric_rows(plan),
        rails=_optional(rails_text(plan.rails, table)),
        storage=_optional(_storage_table(plan)),
        capacity=_optional(capacity_table(plan, table)),
        workloads=_optional(workloads_table(plan.workloads, table)),
        workload_details=workload_details(plan.workloads),
        cost=block(cost_text(plan, table)),
        reservations=_optional(_reservations_table(plan)),
        capacity_blocks=_optional(capacity_blocks_text(plan, table) or None),
        cluster_fleet=fleet_text(plan.cluster_fleet, table) if plan.cluster_fleet is not None else None,
        health=_optional(health_text(plan, table)),
    )
