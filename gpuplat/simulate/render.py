"""The replay's report: text, one JSON document, and the pull-request comment's markdown."""

from __future__ import annotations

import json
from typing import Any

from gpuplat.render.charts import replay_charts
from gpuplat.simulate.result import PERCENTILES, Result


def _hours(x: float) -> str:
    return f"{x:,.0f}"


def result_json(r: Result) -> dict[str, Any]:
    o = r.options
    return {
        "trace": r.trace,
        "traceShape": r.shape,
        "jobs": r.jobs,
        "seed": r.seed,
        "assumptions": {
            "autoscaling": o.autoscaling,
            "bootSeconds": o.boot_seconds,
            "utilizationDefault": o.utilization,
            "checkpointSeconds": o.checkpoint_seconds,
            "lookahead": o.lookahead,
            "spotInterruptions": o.spot,
            "capacityBlockWindows": r.windows,
        },
        "signal": r.signal,
        "hours": r.hours,
        "gpuHours": {k: r.total(f"{k}_gpu_h") for k in ("provisioned", "allocated", "busy")},
        "waste": r.waste,
        "pools": [
            {
                "name": p.name,
                "gpuHours": {"provisioned": p.provisioned_gpu_h, "allocated": p.allocated_gpu_h, "busy": p.busy_gpu_h},
                "costUsd": p.cost_usd,
            }
            for p in r.pools
        ],
        "waiting": [
            {"tenant": w.tenant, "priority": w.priority, "jobs": w.jobs, "meanSeconds": w.mean_seconds}
            | {f"p{p}Seconds": w.seconds[p] for p in PERCENTILES}
            for w in r.waits
        ],
        "unplaceable": r.unplaceable,
        "tenantMap": r.mapping,
        "preempted": r.preempted,
        "interrupted": r.interrupted,
        "lostGpuHours": r.lost_gpu_h,
        "stoppedAtBlockEnd": r.block_stops,
        "stranded": r.stranded,
        "cost": cost_json(r),
    }


def cost_json(r: Result) -> dict[str, Any]:
    busy = r.total("busy_gpu_h")
    on_demand = r.total("all_on_demand_usd")
    markets: dict[str, float] = {}
    for p in r.pools:
        for m, usd in p.cost_usd.items():
            markets[m] = markets.get(m, 0.0) + usd
    return {
        "usd": r.cost_usd,
        "monthlyUsd": r.monthly_usd,
        "byMarket": markets,
        "perBusyGpuHour": r.cost_usd / busy if busy else None,
        "allOnDemandUsd": on_demand,
        "savingVsAllOnDemandPercent": 100 * (1 - r.cost_usd / on_demand) if on_demand else None,
        "staticAtMaxUsd": r.static_usd,
        "savingVsStaticPercent": 100 * (1 - r.cost_usd / r.static_usd) if r.static_usd else None,
    }


def render_json(r: Result, base: Result | None = None, *, timeline: bool = False) -> str:
    """`timeline`: also the series `--plot` draws, sampled over the replay."""
    doc = result_json(r)
    if timeline and r.timeline is not None:
        doc["timeline"] = r.timeline.as_json()
    if base is not None:
        doc = {"head": doc, "base": result_json(base), "delta": deltas(base, r)}
    return json.dumps(doc, indent=2, sort_keys=False) + "\n"


def headline(r: Result) -> dict[str, float]:
    """The numbers a change moves: waste, waiting, cost."""
    c = cost_json(r)
    waits = [w for w in r.waits]
    jobs = sum(w.jobs for w in waits) or 1
    return {
        "waste %": 100 * r.waste["total"],
        "unallocated %": 100 * r.waste["unallocated"],
        "mean wait s": sum(w.mean_seconds * w.jobs for w in waits) / jobs,
        "worst p95 wait s": max((w.seconds[95] for w in waits), default=0.0),
        "cost USD / month": r.monthly_usd,
        "USD per busy GPU-h": c["perBusyGpuHour"] or 0.0,
    }


def deltas(base: Result, head: Result) -> dict[str, dict[str, float]]:
    b, h = headline(base), headline(head)
    return {k: {"base": b[k], "head": h[k], "delta": h[k] - b[k]} for k in b}


def render_text(r: Result, base: Result | None = None) -> str:
    c = cost_json(r)
    lines = [
        f"trace {r.trace} ({r.shape}): {r.jobs:,} jobs over {r.hours / 24:,.1f} days, seed {r.seed}, "
        f"autoscaling {'on' if r.options.autoscaling else 'off (every pool at nodes.max)'}",
        f"scaling signal: {r.signal}",
        "",
        f"{'pool':<12} {'provisioned GPU-h':>18} {'allocated':>12} {'busy':>12} {'cost USD':>14}",
    ]
    for p in r.pools:
        lines.append(
            f"{p.name:<12} {_hours(p.provisioned_gpu_h):>18} {_hours(p.allocated_gpu_h):>12} "
            f"{_hours(p.busy_gpu_h):>12} {sum(p.cost_usd.values()):>14,.0f}"
        )
    w = r.waste
    lines += [
        "",
        f"waste {100 * w['total']:.1f} % of provisioned GPU-hours: unallocated {100 * w['unallocated']:.1f} %, "
        f"allocated but idle {100 * w['idle']:.1f} %",
        "",
        f"{'tenant':<12} {'priority':<9} {'jobs':>8} " + " ".join(f"{'p' + str(p) + ' wait':>11}" for p in PERCENTILES),
    ]
    for q in r.waits:
        cells = " ".join(f"{_duration(q.seconds[p]):>11}" for p in PERCENTILES)
        lines.append(f"{q.tenant:<12} {q.priority:<9} {q.jobs:>8,} {cells}")
    lines += [
        "",
        f"preempted {r.preempted:,}, spot interruptions {r.interrupted:,}, GPU-hours lost {r.lost_gpu_h:,.0f}",
        f"cost {c['usd']:,.0f} USD ({c['monthlyUsd']:,.0f} a month): "
        + ", ".join(f"{m} {usd:,.0f}" for m, usd in sorted(c["byMarket"].items())),
        f"per busy GPU-hour {c['perBusyGpuHour'] or 0:,.2f} USD; saving {c['savingVsAllOnDemandPercent'] or 0:.1f} % "
        f"against all on-demand, {c['savingVsStaticPercent'] or 0:.1f} % against a static fleet at nodes.max",
    ]
    if r.windows:
        lines.append(
            "Capacity Block windows: "
            + ", ".join(f"{pool} {n}" for pool, n in sorted(r.windows.items()))
            + f"; pods stopped at a block's end {r.block_stops:,}"
        )
    if r.stranded:
        lines.append(
            f"jobs that never ran to the end: {r.stranded:,} (admitted onto a Capacity Block flavor after its last "
            "window, or queued behind its quota)"
        )
    if r.unplaceable:
        lines.append(
            "jobs no pool of their tenant can hold (not replayed): "
            + ", ".join(f"{t} {n:,}" for t, n in r.unplaceable.items())
        )
    if base is not None:
        lines += ["", "against the base:", *(_delta_line(k, v) for k, v in deltas(base, r).items())]
    return "\n".join(lines) + "\n"


def _delta_line(name: str, v: dict[str, float]) -> str:
    return f"  {name:<20} {v['base']:>14,.2f} -> {v['head']:>14,.2f} ({v['delta']:+,.2f})"


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def render_markdown(r: Result, base: Result | None = None) -> str:
    """The pull-request table: what this change does to waste, waiting and cost."""
    title = (
        "### What this change does to waste, waiting and cost\n\n"
        f"Replay of `{r.trace}` ({r.jobs:,} jobs, seed {r.seed}).\n\n"
    )
    if base is None:
        rows = "".join(f"| {k} | {v:,.2f} |\n" for k, v in headline(r).items())
        return title + "| metric | value |\n|---|---:|\n" + rows
    rows = "".join(
        f"| {k} | {v['base']:,.2f} | {v['head']:,.2f} | {v['delta']:+,.2f} |\n" for k, v in deltas(base, r).items()
    )
    table = title + "| metric | base | this change | delta |\n|---|---:|---:|---:|\n" + rows
    if base.timeline is None or r.timeline is None:
        return table
    charts = replay_charts(base.timeline.as_json(), r.timeline.as_json())
    return table + "".join(f"\n{chart}\n" for chart in charts)
