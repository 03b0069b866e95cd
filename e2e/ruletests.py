"""`promtool test rules` cases for the GPU rules a stack emits, generated from the spec's numbers.

Input: per pool, two devices (two GPUs, or two MIG instances on a MIG pool) reporting every gauge
of dcgm-exporter's default list (e2e/dcgm.py) through phases chosen from the spec's thresholds:
idle (below scaleDownBelow for over an hour), between the thresholds, busy (above scaleUpAbove
for longer than the window), memory-bound (little compute, most of the framebuffer), then no
data. Each pool's values are offset a little, so a rule mixing pools up is caught.

Expected values are computed here, by hand from those input series, with no look at the rules'
PromQL: the window average of a series at T is the mean of its samples in (T - window, T]
(Prometheus 3's left-open range); a pool's average is the mean over its devices; percent
gauges are recorded as ratios; utilisation is GPU_UTIL, or the DCP engine-active ratio on MIG
pools; memory is used / (used + free) per device; pressure the larger of the two; the signal
the policy docs/architecture.md states (pressure above scaleUpAbove, pressure x up / down below
scaleDownBelow, scaleUpAbove between); alerts fire `for` after their condition first holds.
Every recording and alerting rule of the emitted file must be covered by a case, or the
generation fails: a new rule needs a case here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from e2e import dcgm
from gpuplat.model import Platform, SharingMode
from gpuplat.scaling import DCGM_METRICS

STEP = 15  # seconds between input samples (the ServiceMonitor's scrape interval)
EVAL = 30  # the rule evaluation interval (the operator's default, which the chart keeps)
WASTE_FOR = 3600  # GpuPoolUnderutilized's `for`, as docs/architecture.md states it
FB_MIB = 81920
UTILIZATION_SOURCES = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
PENDING = (("research", "wait-a", 4, True), ("product", "wait-b", 2, True), ("research", "running", 8, False))


@dataclass(frozen=True)
class Phase:
    name: str
    seconds: int
    load: float  # busy share of the pool's devices
    memory: float  # framebuffer share used


@dataclass(frozen=True)
class Series:
    pool: str
    device: dcgm.Device
    counter: dcgm.Counter
    values: tuple[float, ...]  # at 0, STEP, 2 STEP, ...

    def text(self) -> str:
        labels = {**self.device.labels(), "pool": self.pool}
        inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        return f"{self.counter.name}{{{inner}}}"


def _round_up(seconds: float, step: int) -> int:
    return int(math.ceil(seconds / step) * step)


def phases(model: Platform) -> list[Phase]:
    auto = model.autoscaling
    up, down, window = auto.scale_up_above, auto.scale_down_below, auto.window_seconds
    span = _round_up(2 * window + 120, EVAL)
    return [
        Phase("idle", _round_up(WASTE_FOR + 2 * window + 300, EVAL), down / 2, down / 4),
        Phase("between", span, (up + down) / 2, (up + down) / 4),
        Phase("busy", _round_up(3 * window + 240, EVAL), (up + 1) / 2, (up + 1) / 4),
        Phase("memory-bound", span, down / 2, (up + 1) / 2),
    ]


def devices(model: Platform, pool_index: int) -> list[dcgm.Device]:
    pool = sorted(model.pools, key=lambda p: p.name)[pool_index]
    host = f"{pool.name}-node-0"
    if pool.sharing.mode is SharingMode.MIG:
        return [dcgm.Device(0, pool.gpu_model, FB_MIB // 8, host, "e2e-profile", i + 1) for i in range(2)]
    return [dcgm.Device(i, pool.gpu_model, FB_MIB, host) for i in range(2)]


def input_series(model: Platform) -> list[Series]:
    plan = phases(model)
    up, down = model.autoscaling.scale_up_above, model.autoscaling.scale_down_below
    found = []
    for index, pool in enumerate(sorted(model.pools, key=lambda p: p.name)):
        for d, device in enumerate(devices(model, index)):
            # Devices 0.02 apart around the phase's load, pools 0.005 apart.
            skew = ((2 * d - 1) * 0.02 + 0.005 * index) * min(1.0, 10 * (up - down))
            for counter in dcgm.default_counters():
                if counter.kind != "gauge":
                    continue
                values: list[float] = []
                for phase in plan:
                    load, memory = max(0.0, phase.load + skew), max(0.0, phase.memory + skew)
                    sample = dcgm.value(counter, device, min(load, 1.0), min(memory, 1.0), 0)
                    values += [] if sample is None else [sample] * (phase.seconds // STEP)
                if values:
                    found.append(Series(pool.name, device, counter, tuple(values)))
    return found


def window_mean(values: tuple[float, ...], t: int, window: int) -> float | None:
    inside = [v for i, v in enumerate(values) if t - window < i * STEP <= t]
    return sum(inside) / len(inside) if inside else None


def pool_mean(series: Iterable[Series], name: str, t: int, window: int,
              per_device: Callable[[list[Series]], float | None] | None = None) -> float | None:
    """Mean over the pool's devices of a per-device value (default: the window mean of `name`)."""
    by_device: dict[dcgm.Device, list[Series]] = {}
    for s in series:
        by_device.setdefault(s.device, []).append(s)
    found = []
    for own in by_device.values():
        if per_device is not None:
            got = per_device(own)
        else:
            match = [s for s in own if s.counter.name == name]
            got = window_mean(match[0].values, t, window) if match else None
        if got is not None:
            found.append(got)
    return sum(found) / len(found) if found else None


@dataclass(frozen=True)
class Expected:
    """What each record of one pool holds at time t (None: no series)."""

    metrics: dict[str, float | None]
    utilization: float | None
    memory: float | None
    pressure: float | None
    signal: float | None


def utilization(model: Platform, own: list[Series], pool: str, t: int) -> float | None:
    window = model.autoscaling.window_seconds
    mig = next(p for p in model.pools if p.name == pool).sharing.mode is SharingMode.MIG
    if mig:
        return pool_mean(own, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", t, window)
    return _div(pool_mean(own, "DCGM_FI_DEV_GPU_UTIL", t, window), 100)


def expected(model: Platform, series: list[Series], pool: str, t: int) -> Expected:
    auto = model.autoscaling
    window = auto.window_seconds
    own = [s for s in series if s.pool == pool]
    metrics = {}
    for metric in DCGM_METRICS:
        got = pool_mean(own, metric.series, t, window)
        percent = next((c.percent for c in dcgm.default_counters() if c.name == metric.series), False)
        metrics[metric.key] = None if got is None else got / 100 if percent else got
    utilization_ = utilization(model, own, pool, t)

    def memory_share(device_series: list[Series]) -> float | None:
        used = [window_mean(s.values, t, window) for s in device_series if s.counter.name == "DCGM_FI_DEV_FB_USED"]
        free = [window_mean(s.values, t, window) for s in device_series if s.counter.name == "DCGM_FI_DEV_FB_FREE"]
        if not used or not free or used[0] is None or free[0] is None:
            return None
        return used[0] / (used[0] + free[0])

    memory = pool_mean(own, "", t, window, memory_share)
    known = [v for v in (utilization_, memory) if v is not None]
    pressure = max(known) if known else None
    up, down = auto.scale_up_above, auto.scale_down_below
    signal = None
    if pressure is not None:
        signal = pressure if pressure > up else pressure * up / down if down > 0 and pressure < down else up
    return Expected(metrics, utilization_, memory, pressure, signal)


def _div(value: float | None, by: float) -> float | None:
    return None if value is None else value / by


# ---- the test file ------------------------------------------------------------------------------


def record_names(model: Platform) -> dict[str, str]:
    """The recorded series the docs name, by what they hold (autoscaling docs, KEDA's query)."""
    w = model.autoscaling.window
    return {"utilization": f"pool:gpu_utilization:ratio_avg_{w}", "memory": f"pool:gpu_memory_used:ratio_avg_{w}",
            "pressure": f"pool:gpu_pressure:ratio_avg_{w}", "signal": f"pool:gpu_floor_signal:ratio_avg_{w}",
            **{f"metric:{m.key}": f"pool:dcgm_{m.key}:avg_{w}" for m in DCGM_METRICS}}


PENDING_RECORD = "cluster:gpu_requests_pending:sum"


def _close(expr: str, value: float) -> str:
    """`expr` within a relative 1e-9 of value (1 when it is; no sample when expr has none)."""
    tolerance = max(abs(value) * 1e-9, 1e-12)
    return f"abs({expr} - ({value!r})) <= bool {tolerance!r}"


def _segments(values: tuple[float, ...]) -> str:
    runs: list[list[float]] = []
    for v in values:
        if runs and runs[-1][0] == v:
            runs[-1][1] += 1
        else:
            runs.append([v, 1])
    # Fixed-point: promtool's expanding notation would read an exponent's sign as `a-bxn`.
    return " ".join(f"{v:.6f}x{int(n) - 1}" for v, n in runs)


def _pending_series(samples: int) -> list[dict[str, str]]:
    found = []
    for namespace, pod, gpus, pending in PENDING:
        labels = f'namespace="{namespace}",pod="{pod}",container="main"'
        found.append({"series": f'kube_pod_container_resource_requests{{{labels},resource="nvidia_com_gpu",'
                                f'unit="integer"}}', "values": f"{gpus}x{samples}"})
        for phase in ("Pending", "Running"):
            up = 1 if (phase == "Pending") == pending else 0
            found.append({"series": f'kube_pod_status_phase{{namespace="{namespace}",pod="{pod}",phase="{phase}"}}',
                          "values": f"{up}x{samples}"})
    return found


def eval_times(model: Platform) -> list[int]:
    """The end of each phase (a window wholly inside it), the start of each later one (a window
    across the change), and one window after the last sample (no data)."""
    times, start = [], 0
    for i, phase in enumerate(phases(model)):
        end = start + phase.seconds
        if i:
            times.append(start)
        times.append((end - STEP) // EVAL * EVAL)
        start = end
    return [*times, _round_up(start + model.autoscaling.window_seconds + EVAL, EVAL)]


def expression_tests(model: Platform, series: list[Series]) -> list[dict[str, Any]]:
    names = record_names(model)
    tests: list[dict[str, Any]] = []
    for t in eval_times(model):
        for pool in sorted(p.name for p in model.pools):
            want = expected(model, series, pool, t)
            values = {"utilization": want.utilization, "memory": want.memory, "pressure": want.pressure,
                      "signal": want.signal, **{f"metric:{k}": v for k, v in want.metrics.items()}}
            for what, value in values.items():
                selector = f'{names[what]}{{pool="{pool}"}}'
                if value is None:
                    tests.append({"expr": selector, "eval_time": f"{t}s", "exp_samples": []})
                else:
                    tests.append({"expr": _close(selector, value), "eval_time": f"{t}s",
                                  "exp_samples": [{"labels": f'{{pool="{pool}"}}', "value": 1}]})
        pending = float(sum(g for _, _, g, waiting in PENDING if waiting))
        tests.append({"expr": _close(PENDING_RECORD, pending), "eval_time": f"{t}s",
                      "exp_samples": [{"labels": "{}", "value": 1}]})
    return tests


def firing(model: Platform, series: list[Series], alert: str, pool: str, times: range) -> dict[int, bool]:
    """Whether the pool's alert fires at each evaluation: pending from the first evaluation its
    condition holds, firing once it has held `for`, resolved when it stops holding."""
    auto = model.autoscaling
    conditions = {"GpuPoolUnderutilized": (lambda u: u < auto.scale_down_below, WASTE_FOR),
                  "GpuPoolSaturated": (lambda u: u > auto.scale_up_above, auto.window_seconds)}
    holds, hold_for = conditions[alert]
    own = [s for s in series if s.pool == pool and s.counter.name in UTILIZATION_SOURCES]
    since, state = None, {}
    for t in times:
        used = utilization(model, own, pool, t)
        since = (since if since is not None else t) if used is not None and holds(used) else None
        state[t] = since is not None and t - since >= hold_for
    return state


def alert_tests(model: Platform, series: list[Series], alerts: dict[tuple[str, str], dict[str, Any]]) -> list[Any]:
    """Each alert a minute before and after each pool's alert starts and stops firing, listing
    every pool that fires then."""
    times = range(0, eval_times(model)[-1] + EVAL, EVAL)
    tests = []
    for alert in sorted({a for a, _ in alerts}):
        states = {pool: firing(model, series, alert, pool, times) for a, pool in alerts if a == alert}
        changes = {t for state in states.values() for t in times if t and state[t] != state[t - EVAL]}
        if not any(any(state.values()) for state in states.values()):
            raise ValueError(f"the inputs never make {alert} fire")
        for t in sorted({c + d for c in changes for d in (-60, 60) if c + d >= 0}):
            fired = [{"exp_labels": {**alerts[(alert, pool)].get("labels", {}), "pool": pool},
                      "exp_annotations": dict(alerts[(alert, pool)].get("annotations", {}))}
                     for pool, state in sorted(states.items()) if state[t - t % EVAL]]
            tests.append({"eval_time": f"{t}s", "alertname": alert, "exp_alerts": fired})
    return tests


def covered(groups: list[dict[str, Any]], model: Platform) -> list[str]:
    """Rules of the emitted file that no generated case checks (each is a failure)."""
    names = {*record_names(model).values(), PENDING_RECORD}
    alerts = {"GpuPoolUnderutilized", "GpuPoolSaturated"}
    return [rule.get("record") or rule.get("alert") for group in groups for rule in group["rules"]
            if rule.get("record", "") not in names and rule.get("alert", "") not in alerts]


def test_document(model: Platform, rule_file: str, groups: list[dict[str, Any]]) -> dict[str, Any]:
    uncovered = covered(groups, model)
    if uncovered:
        raise ValueError(f"emitted rules without a promtool case: {', '.join(sorted(set(uncovered)))}")
    alerts = {(r["alert"], r["labels"]["pool"]): r for g in groups for r in g["rules"] if "alert" in r}
    series = input_series(model)
    inputs = [{"series": s.text(), "values": _segments(s.values)} for s in series]
    inputs += _pending_series(eval_times(model)[-1] // STEP)
    return {"rule_files": [rule_file], "evaluation_interval": f"{EVAL}s",
            "tests": [{"name": "gpu rules from the spec's numbers", "interval": f"{STEP}s",
                       "input_series": inputs, "promql_expr_test": expression_tests(model, series),
                       "alert_rule_test": alert_tests(model, series, alerts)}]}
