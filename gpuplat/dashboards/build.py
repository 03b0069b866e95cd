"""The dashboards a platform's Grafana shows: the fleet, one per pool, one per tenant.

Every query reads the series the platform records (gpuplat/scaling.py, gpuplat/usage.py), the
DCGM exporter's own (with the labels the ServiceMonitor adds) or kube-state-metrics'; series.py
lists them and the tests hold every query to that list. Numbers the spec fixes (thresholds,
quotas) are drawn as threshold lines, not queried. GPU-hours and dollars over the dashboard's
time range are `sum_over_time` of the per-minute rates, divided by 60.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpuplat import scaling, usage
from gpuplat.model import GpuNodePool, Platform, Provider, SharingMode, Tenant
from gpuplat.plan.types import Plan

from .controllers import fleet_karpenter_panels, fleet_queue_panels, pool_karpenter_panels, tenant_queue_panels
from .grafana import Panel, Query, dashboard, or_zero, over_range, uid
from .series import runs_karpenter, runs_kueue

HELD = f'namespace!="{usage.EXPORTER_NAMESPACE}"'
FLOOR_APP = "capacity-floor"  # components/kubernetes/capacity_floor.py names each pool's Deployment so


@dataclass(frozen=True)
class Dashboard:
    key: str  # stable suffix of names: fleet, pool-<name>, tenant-<name>
    title: str
    model: dict[str, Any]


def _total(title: str, series: str, legend: str, unit: str = "short") -> Panel:
    """A stat: a per-hour rate summed over the dashboard's range (GPU-hours, USD)."""
    return Panel(title, [Query(over_range(series), legend)], unit=unit, kind="stat", width=6)


def _by(label: str, title: str, series: str, **options: Any) -> Panel:
    """`series` summed by one label, stacked, one line per value of it."""
    return Panel(title, [Query(f"sum by ({label}) ({series})", "{{" + label + "}}")], stacked=True, **options)


def fleet_panels(model: Platform) -> list[Panel]:
    window = model.autoscaling.window
    provisioned = or_zero(f"sum({usage.PROVISIONED})")
    allocated = or_zero(f"sum({usage.ALLOCATED})")
    busy = or_zero(f"sum({usage.BUSY}{{{HELD}}})")
    return [
        Panel(
            "GPUs by state",
            [
                Query(busy, "busy"),
                Query(f"{allocated} - {busy}", "allocated, idle"),
                Query(f"{provisioned} - {allocated}", "unallocated"),
            ],
            stacked=True,
            description="Busy: GPU-equivalents of work on GPUs held by pods; the rest is paid for and idle.",
        ),
        Panel("Waste: GPUs provisioned and not busy", [Query(f"{provisioned} - {busy}", "GPUs")], width=9),
        Panel(
            "Waste share", [Query(f"1 - {busy} / {provisioned}", "not busy")], unit="percentunit", kind="stat", width=3
        ),
        _by(
            "pool",
            "Cost rate by pool",
            usage.FLEET_COST,
            unit="currencyUSD",
            description="USD per hour of the GPU nodes provisioned, at the plan's list prices.",
        ),
        _total("Cost over the range", usage.FLEET_COST, "USD", "currencyUSD"),
        Panel(
            "Cost per busy GPU-hour",
            [Query(f"{over_range(usage.FLEET_COST)} / ({over_range(usage.BUSY + '{' + HELD + '}')})", "USD")],
            unit="currencyUSD",
            kind="stat",
            width=6,
        ),
        _by("namespace", "GPUs held by tenant", usage.TENANT_GPU_HOURS_RATE),
        Panel(
            "Pending GPU requests",
            [Query(scaling.PENDING_RECORD, "GPUs")],
            description="GPUs asked for by pods still Pending, cluster-wide.",
        ),
        Panel(
            "Pressure by pool",
            [Query(scaling.pressure_record(window), "{{pool}}")],
            unit="percentunit",
            lines=[(model.autoscaling.scale_down_below, "blue"), (model.autoscaling.scale_up_above, "red")],
        ),
        *(fleet_queue_panels(model) if runs_kueue(model) else []),
        *(fleet_karpenter_panels() if runs_karpenter(model) else []),
    ]


def _device(pool: GpuNodePool) -> str:
    return usage.device_series(pool) + f'{{pool="{pool.name}"}}'


def pool_panels(model: Platform, plan: Plan, pool: GpuNodePool) -> list[Panel]:
    window, auto, name = model.autoscaling.window, model.autoscaling, pool.name
    sel = f'{{pool="{name}"}}'
    util = _device(pool) + (" / 100" if pool.sharing.mode is not SharingMode.MIG else "")
    device_legend = "{{node}} GPU {{gpu}}" + (" MIG {{GPU_I_ID}}" if pool.sharing.mode is SharingMode.MIG else "")
    used, free = f"DCGM_FI_DEV_FB_USED{sel}", f"DCGM_FI_DEV_FB_FREE{sel}"
    panels = [
        Panel("Utilisation per GPU", [Query(util, device_legend)], unit="percentunit"),
        Panel("Memory used per GPU", [Query(f"{used} / ({used} + {free})", device_legend)], unit="percentunit"),
        Panel(
            "Scaling signal against its thresholds",
            [
                Query(f"{scaling.signal_record(window)}{sel}", "signal"),
                Query(f"{scaling.pressure_record(window)}{sel}", "pressure"),
                Query(f"{scaling.utilization_record(window)}{sel}", "utilisation"),
                Query(f"{scaling.memory_record(window)}{sel}", "memory"),
            ],
            unit="percentunit",
            lines=[(auto.scale_down_below, "blue"), (auto.scale_up_above, "red")],
            description=f"Window averages over {window}; the floor grows above scaleUpAbove and shrinks below "
            "scaleDownBelow.",
        ),
        _nodes_panel(model, pool),
        Panel(
            "GPUs provisioned, allocated, busy",
            [
                Query(f"sum({usage.PROVISIONED}{sel})", "provisioned"),
                Query(or_zero(f"sum({usage.ALLOCATED}{sel})"), "allocated"),
                Query(or_zero(f'sum({usage.BUSY}{{pool="{name}", {HELD}}})'), "busy"),
            ],
        ),
        Panel("Cost rate", [Query(f"{usage.FLEET_COST}{sel}", "USD/h")], unit="currencyUSD"),
        Panel(
            "XID errors (non-zero: a faulting GPU)",
            [Query(f"DCGM_FI_DEV_XID_ERRORS{sel} != 0", device_legend)],
            description="The last XID error per GPU; a GPU listed here needs draining and repair.",
        ),
        Panel(
            "Memory and NVLink errors in the last hour",
            [
                Query(f"increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{sel}[1h]) > 0", f"double-bit ECC {device_legend}"),
                Query(
                    f"increase(DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL{sel}[1h]) > 0",
                    f"NVLink recovery {device_legend}",
                ),
                Query(
                    f"increase(DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL{sel}[1h]) > 0",
                    f"NVLink replay {device_legend}",
                ),
            ],
            description="GPUs with uncorrectable memory errors or NVLink recoveries (critical alerts) and NVLink "
            "retries (a degrading link); empty on a healthy pool (docs/health.md).",
        ),
        Panel("Temperature", [Query(f"DCGM_FI_DEV_GPU_TEMP{sel}", device_legend)], unit="celsius"),
    ]
    floor = _floor_panel(model, plan, pool)
    if floor is not None:
        panels.insert(4, floor)
    return panels + (pool_karpenter_panels(plan, pool) if runs_karpenter(model) else [])


def _nodes_panel(model: Platform, pool: GpuNodePool) -> Panel:
    """By Karpenter's capacity type on aws; an existing cluster's nodes carry none."""
    per_node = f"count by (node, {usage.CAPACITY_TYPE}) ({_device(pool)})"
    if model.target.provider is Provider.KUBERNETES:
        return Panel("Nodes reporting GPUs", [Query(f"count({per_node})", "nodes")], lines=[(pool.nodes.max, "red")])
    return Panel(
        "Nodes by market",
        [Query(f"count by ({usage.CAPACITY_TYPE}) ({per_node})", "{{" + usage.CAPACITY_TYPE + "}}")],
        stacked=True,
        lines=[(pool.nodes.max, "red")],
        description="Nodes whose GPUs report metrics, by Karpenter's capacity type.",
    )


def _floor_panel(model: Platform, plan: Plan, pool: GpuNodePool) -> Panel | None:
    bounds = scaling.floor_bounds(model, pool, plan.pool(pool.name))
    if bounds is None:
        return None
    floor = f'namespace="{model.metadata.name}-system", deployment="{FLOOR_APP}-{pool.name}"'
    return Panel(
        "Capacity floor",
        [
            Query(f"kube_deployment_spec_replicas{{{floor}}}", "wanted"),
            Query(f"kube_deployment_status_replicas_available{{{floor}}}", "holding a node"),
        ],
        lines=[(bounds[0], "blue"), (bounds[1], "red")],
        description=f"Placeholder pods keeping between {bounds[0]} and {bounds[1]} nodes.",
    )


def tenant_panels(model: Platform, plan: Plan, tenant: Tenant) -> list[Panel]:
    ns = f'namespace="{tenant.name}"'
    nominal = sum(plan.tenant_quotas(tenant.name).values()) or tenant.gpus
    held = f"sum({usage.TENANT_GPU_HOURS_RATE}{{{ns}}})"
    pending = (
        f'sum(kube_pod_container_resource_requests{{{ns}, resource=~"nvidia_com_.*"}} '
        f'* on (namespace, pod) group_left () (kube_pod_status_phase{{{ns}, phase="Pending"}} == 1))'
    )
    return [
        _by(
            "pool",
            "GPUs held against the quota",
            f"{usage.TENANT_GPU_HOURS_RATE}{{{ns}}}",
            lines=[(nominal, "red")],
            description=f"Nominal quota {nominal} GPUs (the line); above it the tenant borrows from the cohort.",
        ),
        # With Kueue, its own accounting of what the tenant borrows, and who waits and why.
        *(
            tenant_queue_panels(model, tenant)
            if runs_kueue(model)
            else [Panel("Borrowing", [Query(f"clamp_min({or_zero(held)} - {nominal}, 0)", "GPUs above nominal")])]
        ),
        Panel("Busy and held", [Query(or_zero(held), "held"), Query(or_zero(f"sum({usage.BUSY}{{{ns}}})"), "busy")]),
        Panel(
            "Waiting",
            [
                Query(or_zero(pending), "GPUs requested by Pending pods"),
                Query(or_zero(f"count(kube_pod_status_unschedulable{{{ns}}} == 1)"), "pods no node fits"),
            ],
            description="Workloads Kueue has not admitted have no pods yet and are not counted here.",
        ),
        _total("GPU-hours over the range", f"{usage.TENANT_GPU_HOURS_RATE}{{{ns}}}", "GPU-h"),
        _total("Cost over the range", f"{usage.TENANT_COST}{{{ns}}}", "USD", "currencyUSD"),
        _by("pool", "Cost rate by pool", f"{usage.TENANT_COST}{{{ns}}}", unit="currencyUSD"),
    ]


def _recorded(panels: list[Panel], records: frozenset[str]) -> list[Panel]:
    """Without prices there are no cost series: their panels would only ever say "no data"."""
    missing = set(usage.COST_RECORDS) - records
    return [p for p in panels if not any(m in q.expr for q in p.queries for m in missing)]


def dashboards(model: Platform, plan: Plan) -> list[Dashboard]:
    name = model.metadata.name
    tags = ["gpuplat", name]
    records = usage.records(model, plan)

    def one(key: str, title: str, panels: list[Panel], *kind: str) -> Dashboard:
        board = dashboard(title, uid("gpuplat", name, *key.split("-", 1)), _recorded(panels, records), [*tags, *kind])
        return Dashboard(key, title, board)

    out = [one("fleet", f"{name}: GPU fleet", fleet_panels(model))]
    out += [
        one(f"pool-{p.name}", f"{name}: pool {p.name}", pool_panels(model, plan, p), "pool")
        for p in sorted(model.pools, key=lambda p: p.name)
    ]
    out += [
        one(f"tenant-{t.name}", f"{name}: tenant {t.name}", tenant_panels(model, plan, t), "tenant")
        for t in sorted(model.tenants, key=lambda t: t.name)
    ]
    return out
