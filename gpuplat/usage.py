"""GPU usage and its price, per tenant and pool, as Prometheus recording rules.

Read by the emitted PrometheusRule (components/kubernetes/dashboards.py) and by the dashboards
(gpuplat/dashboards/), so a panel names only series these rules record.

Where the numbers come from: the DCGM exporter's per-device series (collected and labelled as
gpuplat/scaling.py says: `pool` from the node's pool label, `capacity_type` from Karpenter's
node label, and the `namespace` / `pod` of the workload holding the device, which the exporter
adds itself). A device held by no pod carries the exporter's own target labels instead, so its
`namespace` is the GPU Operator's: that is how an allocated device is told from a free one.
A device is one GPU, or one MIG instance on a MIG pool; there the counts are divided by the
instances one GPU holds, so every figure is in GPUs. Time-sliced and MPS GPUs are not
attributed to a pod by the exporter: they count as provisioned, not allocated.

Prices: USD per GPU-hour, per pool and market, from the plan's cost (list price by market:
on-demand, spot after its discount, reserved at its rate), one constant series per price. On
provider kubernetes nodes carry no capacity type, so a pool has one price without that label
(the spec's on-demand price; none when the plan has no cost), and the join matches it.
GPU-hours and dollars over a period are the dashboards' `sum_over_time` of these rates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpuplat.catalog import CHARTS
from gpuplat.model import GpuNodePool, Market, Platform, Provider, SharingMode
from gpuplat.plan.types import Plan

EXPORTER_NAMESPACE = CHARTS["gpu-operator"].namespace
CAPACITY_TYPE = "capacity_type"  # the series label the ServiceMonitor copies Karpenter's node label to

PROVISIONED = "pool_capacity_type:gpus_provisioned:count"
ALLOCATED = "namespace_pool_capacity_type:gpus_allocated:count"
BUSY = "namespace_pool:gpus_busy:sum"
PRICE = "pool_capacity_type:gpu_price_usd_per_hour:value"
FLEET_COST = "pool:gpu_cost_usd_per_hour:sum"
TENANT_COST = "namespace_pool:gpu_cost_usd_per_hour:sum"
TENANT_GPU_HOURS_RATE = "namespace_pool:gpus_allocated:sum"
COST_RECORDS = (PRICE, FLEET_COST, TENANT_COST)


@dataclass(frozen=True)
class Rule:
    record: str
    expr: str
    labels: Mapping[str, str]

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"record": self.record, "expr": self.expr}
        if self.labels:
            out["labels"] = dict(self.labels)
        return out


def device_series(pool: GpuNodePool) -> str:
    """The per-device gauge every device of the pool reports (GPU_UTIL is absent on MIG devices)."""
    return "DCGM_FI_PROF_GR_ENGINE_ACTIVE" if pool.sharing.mode is SharingMode.MIG else "DCGM_FI_DEV_GPU_UTIL"


def devices_per_gpu(plan: Plan, pool: GpuNodePool) -> int:
    units = plan.pool(pool.name).units
    if pool.sharing.mode is SharingMode.MIG and units.mig_devices:
        return sum(units.mig_devices.values())
    return 1


def gpu_hour_prices(model: Platform, plan: Plan) -> dict[tuple[str, Market | None], float]:
    """(pool, market) -> USD per GPU-hour; market None on provider kubernetes (no capacity type)."""
    if plan.cost is None:
        return {}
    out: dict[tuple[str, Market | None], float] = {}
    for cost in plan.cost.pools:
        gpus = plan.pool(cost.pool).gpus_per_node
        if not gpus or not cost.on_demand_hourly_usd:
            continue
        if model.target.provider is Provider.KUBERNETES:
            out[cost.pool, None] = cost.on_demand_hourly_usd / gpus
            continue
        node_hourly = {
            Market.ON_DEMAND: cost.on_demand_hourly_usd,
            Market.SPOT: cost.on_demand_hourly_usd * (1 - plan.cost.spot_discount),
            Market.RESERVED: cost.reserved_hourly_usd,
        }
        for market in plan.pool(cost.pool).bought:
            out[cost.pool, market] = node_hourly[market] / gpus
    return out


def _per_gpu(expr: str, divisor: int) -> str:
    return f"{expr} / {divisor}" if divisor != 1 else expr


def usage_rules(model: Platform, plan: Plan) -> list[Rule]:
    """In evaluation order: devices, prices, then what is derived from both. Pools by name."""
    pools = sorted(model.pools, key=lambda p: p.name)
    rules: list[Rule] = []
    for pool in pools:
        series, per_gpu = device_series(pool), devices_per_gpu(plan, pool)
        own = f'{series}{{pool="{pool.name}"}}'
        held = f'{series}{{pool="{pool.name}", namespace!="{EXPORTER_NAMESPACE}"}}'
        busy = f'{series}{{pool="{pool.name}"}}' + (" / 100" if series == "DCGM_FI_DEV_GPU_UTIL" else "")
        rules += [
            Rule(PROVISIONED, _per_gpu(f"count by (pool, {CAPACITY_TYPE}) ({own})", per_gpu), {}),
            Rule(ALLOCATED, _per_gpu(f"count by (namespace, pool, {CAPACITY_TYPE}) ({held})", per_gpu), {}),
            Rule(BUSY, _per_gpu(f"sum by (namespace, pool) ({busy})", per_gpu), {}),
        ]
    rules.append(Rule(TENANT_GPU_HOURS_RATE, f"sum by (namespace, pool) ({ALLOCATED})", {}))
    prices = sorted(gpu_hour_prices(model, plan).items(), key=lambda kv: (kv[0][0], str(kv[0][1])))
    if not prices:  # no price, no cost series: a panel of cost then says "no data", not $0
        return rules
    for (pool_name, market), price in prices:
        labels = {"pool": pool_name} | ({CAPACITY_TYPE: market.value} if market is not None else {})
        rules.append(Rule(PRICE, f"vector({price:.6g})", labels))
    on = f"on (pool, {CAPACITY_TYPE}) group_left ()"
    rules += [
        Rule(FLEET_COST, f"sum by (pool) ({PROVISIONED} * {on} {PRICE})", {}),
        Rule(TENANT_COST, f"sum by (namespace, pool) ({ALLOCATED} * {on} {PRICE})", {}),
    ]
    return rules


def records(model: Platform, plan: Plan) -> frozenset[str]:
    """The series the usage rules record for this platform (no cost series without prices)."""
    return frozenset(r.record for r in usage_rules(model, plan))


def prometheus_rule_spec(model: Platform, plan: Plan) -> dict[str, object]:
    return {"groups": [{"name": "gpuplat-gpu-usage", "rules": [r.as_dict() for r in usage_rules(model, plan)]}]}
