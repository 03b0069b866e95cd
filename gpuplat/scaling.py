"""The scaling signal, defined once: what is collected, how it is recorded, how it decides.

Read by the emitted Prometheus rules (components/kubernetes/autoscaling.py), by the capacity
floor's KEDA ScaledObject (components/kubernetes/capacity_floor.py) and by the simulator
(gpuplat/simulate/), so the policy a replay exercises is the policy the cluster runs.

Collected, per pool (the DCGM exporter's series carry the pool label, see autoscaling.py), each
recorded as its average over `autoscaling.window` across the pool's GPUs: the gauges of
`DCGM_METRICS`, all in the exporter's default counter list. Beside them, cluster-wide, the GPU
requests of pods still Pending (kube-state-metrics, which kube-prometheus-stack scrapes).

The decision, per pool:
1. pressure = max(utilisation, framebuffer used / framebuffer total), both window averages.
   Utilisation alone calls a pool idle whose GPUs are held by work that waits on data or
   input, and whose memory no other job can use; memory alone misses compute-bound work that
   needs little memory. Utilisation is DCGM_FI_DEV_GPU_UTIL, except on MIG pools, where the
   exporter reports DCGM_FI_PROF_GR_ENGINE_ACTIVE per MIG device and no GPU_UTIL.
2. signal = `signal_value(pressure)`: the pressure above scaleUpAbove, pressure x up / down
   below scaleDownBelow, scaleUpAbove in between (hysteresis: the floor holds).
3. KEDA polls the signal every POLLING_SECONDS; the HPA sets
   desired = ceil(ready x signal / scaleUpAbove) outside its tolerance (`hpa_desired`), with
   stabilisation windows of `autoscaling.cooldown` (at most HPA_MAX_WINDOW_SECONDS), between
   the floor's bounds (`floor_bounds`).
4. Pending demand raises capacity at once, outside this loop: Karpenter launches nodes for
   pods that fit nowhere (the pending-requests series shows it), up to each NodePool's limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuplat.model import GpuNodePool, Market, Platform, Provider, SharingMode

if TYPE_CHECKING:
    from gpuplat.plan.types import PoolPlan

POLLING_SECONDS = 30  # KEDA's pollingInterval; also the rule evaluation interval it reads
HPA_TOLERANCE = 0.1  # the HPA controller's default --horizontal-pod-autoscaler-tolerance
HPA_MAX_WINDOW_SECONDS = 3600  # the HPA API's cap on a stabilisation window
# What the decision reads (step 1), in the emitted rule and the simulator alike; the rest of
# DCGM_METRICS is recorded for people (dashboards, alerts), and the pending requests act through
# Karpenter, outside the floor.
DRIVING_SIGNALS = ("utilization", "memory")


@dataclass(frozen=True)
class Metric:
    key: str  # the recorded series is pool:dcgm_<key>:avg_<window>
    series: str  # the exporter's metric name
    unit: str
    what: str
    scale: float = 1.0  # to the recorded unit (percent -> ratio)


DCGM_METRICS: tuple[Metric, ...] = (
    Metric("gpu_util", "DCGM_FI_DEV_GPU_UTIL", "ratio", "GPU busy time", 0.01),
    Metric("engine_active", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "ratio", "graphics engine active (MIG devices too)"),
    Metric("tensor_active", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "ratio", "tensor pipe active cycles"),
    Metric("dram_active", "DCGM_FI_PROF_DRAM_ACTIVE", "ratio", "device memory interface active"),
    Metric("memory_copy", "DCGM_FI_DEV_MEM_COPY_UTIL", "ratio", "memory copy utilisation", 0.01),
    Metric("fb_used", "DCGM_FI_DEV_FB_USED", "MiB", "framebuffer used"),
    Metric("fb_free", "DCGM_FI_DEV_FB_FREE", "MiB", "framebuffer free"),
    Metric("power", "DCGM_FI_DEV_POWER_USAGE", "W", "power draw"),
    Metric("temperature", "DCGM_FI_DEV_GPU_TEMP", "C", "GPU temperature"),
    Metric("memory_temperature", "DCGM_FI_DEV_MEMORY_TEMP", "C", "HBM temperature"),
    Metric("sm_clock", "DCGM_FI_DEV_SM_CLOCK", "MHz", "SM clock (throttling shows here)"),
    Metric("pcie_tx", "DCGM_FI_PROF_PCIE_TX_BYTES", "B/s", "PCIe transmit rate"),
    Metric("pcie_rx", "DCGM_FI_PROF_PCIE_RX_BYTES", "B/s", "PCIe receive rate"),
    Metric("encoder", "DCGM_FI_DEV_ENC_UTIL", "ratio", "video encoder utilisation", 0.01),
    Metric("decoder", "DCGM_FI_DEV_DEC_UTIL", "ratio", "video decoder utilisation", 0.01),
    Metric("xid", "DCGM_FI_DEV_XID_ERRORS", "code", "last XID error (non-zero: a faulting GPU)"),
)
PENDING_RECORD = "cluster:gpu_requests_pending:sum"
PENDING_EXPR = (
    'sum(kube_pod_container_resource_requests{resource="nvidia_com_gpu"} '
    '* on (namespace, pod) group_left () (kube_pod_status_phase{phase="Pending"} == 1))'
)


def metric_record(metric: Metric, window: str) -> str:
    return f"pool:dcgm_{metric.key}:avg_{window}"


def metric_expr(metric: Metric, pool: str, window: str) -> str:
    expr = f'avg by (pool) (avg_over_time({metric.series}{{pool="{pool}"}}[{window}]))'
    return f"{expr} * {metric.scale}" if metric.scale != 1.0 else expr


def utilization_expr(pool: GpuNodePool, window: str) -> str:
    if pool.sharing.mode is SharingMode.MIG:
        return f'avg by (pool) (avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE{{pool="{pool.name}"}}[{window}]))'
    return f'avg by (pool) (avg_over_time(DCGM_FI_DEV_GPU_UTIL{{pool="{pool.name}"}}[{window}])) / 100'


def memory_expr(pool: str, window: str) -> str:
    used = f'avg_over_time(DCGM_FI_DEV_FB_USED{{pool="{pool}"}}[{window}])'
    free = f'avg_over_time(DCGM_FI_DEV_FB_FREE{{pool="{pool}"}}[{window}])'
    return f"avg by (pool) ({used} / ({used} + {free}))"


def utilization_record(window: str) -> str:
    return f"pool:gpu_utilization:ratio_avg_{window}"


def memory_record(window: str) -> str:
    return f"pool:gpu_memory_used:ratio_avg_{window}"


def pressure_record(window: str) -> str:
    return f"pool:gpu_pressure:ratio_avg_{window}"


def signal_record(window: str) -> str:
    return f"pool:gpu_floor_signal:ratio_avg_{window}"


def pressure_expr(pool: str, window: str) -> str:
    """max(utilisation, memory): both series carry only the pool label, so `max by` joins them.
    The signals are DRIVING_SIGNALS, the ones `pressure` reads in the simulator."""
    records = {"utilization": utilization_record, "memory": memory_record}
    names = "|".join(records[signal](window) for signal in DRIVING_SIGNALS)
    return f'max by (pool) ({{__name__=~"{names}", pool="{pool}"}})'


def pressure(utilization: float, memory: float, driving: frozenset[str] = frozenset(DRIVING_SIGNALS)) -> float:
    """The emitted rule's max(utilisation, memory); `driving` leaves one out (the simulator's what-if)."""
    return max(utilization if "utilization" in driving else 0.0, memory if "memory" in driving else 0.0)


def signal_expr(series: str, up: float, down: float) -> str:
    """PromQL of the scaling signal from the window pressure `series` (one pool's selector).

    Each branch filters the pressure (a comparison without `bool` drops the series where it
    fails); `or` adds a right-hand series only where no left-hand one has the same labels
    (the metric name aside), so exactly one branch answers for a pool with data, and none for
    a pool without: no series, never a made-up value. scaleDownBelow 0 has no shrink branch.
    """
    branches = [f"({series} > {up})"]
    if down > 0:
        branches.append(f"({series} < {down}) * {up} / {down}")
    branches.append(f"({series} * 0 + {up})")
    return " or ".join(branches)


def signal_value(average: float, up: float, down: float) -> float:
    """What `signal_expr` yields for a pool whose window pressure is `average`."""
    if average > up:
        return average
    if down > 0 and average < down:
        return average * up / down
    return up


def hpa_desired(ready: int, signal: float, up: float, tolerance: float = HPA_TOLERANCE) -> int:
    """The HPA's replica count for an external metric of type Value (before min / max clamping)."""
    ratio = signal / up
    if abs(1.0 - ratio) <= tolerance:
        return ready
    return math.ceil(ready * ratio)


def stabilization_seconds(model: Platform) -> int:
    return min(model.autoscaling.cooldown_seconds, HPA_MAX_WINDOW_SECONDS)


def floor_bounds(model: Platform, pool: GpuNodePool, plan_pool: PoolPlan) -> tuple[int, int] | None:
    """(min, max) placeholders of the pool, or None when the floor has no capacity to stand on.

    On aws the floor stands only on the reserved and on-demand nodes the plan gives the pool
    (spot can be taken away), so both bounds are capped at that count.
    """
    low, high = pool.nodes.min, pool.nodes.max
    if model.target.provider is Provider.AWS:
        steady = sum(plan_pool.share(m).nodes for m in (Market.RESERVED, Market.ON_DEMAND))
        if steady == 0:
            return None
        low, high = min(low, steady), min(high, steady)
    return low, high
