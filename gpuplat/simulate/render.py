"""One replay's numbers in words and JSON; report.py puts seeds and a base around them."""

from __future__ import annotations

from typing import Any

from gpuplat.scaling import DRIVING_SIGNALS
from gpuplat.simulate.result import PERCENTILES, Result
from gpuplat.vocabulary import WHOLE_GPU


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
            "busyShare": busy_share_json(r),
            "checkpointSeconds": o.checkpoint_seconds,
            "lookahead": o.lookahead,
            "spotInterruptions": o.spot,
            "drivingSignals": sorted(o.signals),
            "capacityBlockWindows": r.windows,
            "nodePacking": o.node_packing,
            "topologyDomains": {key: list(sizes) for key, sizes in r.domains},
            "speedup": {p.name: o.speed_of(p.name) for p in r.pools},
            "outcomes": o.outcomes.source if o.outcomes else None,
            "tenantsLendingNothing": list(r.lending_none),
        },
        "coverage": coverage_json(r),
        "signal": r.signal,
        "hours": r.hours,
        "gpuHours": {k: r.total(f"{k}_gpu_h") for k in ("provisioned", "allocated", "busy")},
        "waste": r.waste,
        "targetWait": targets_json(r),
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
        "fragmentation": {"gpuHours": r.fragmented_gpu_h, "jobs": r.fragmented_jobs},
        "topologyWait": {"gpuHours": r.topology_gpu_h, "jobs": r.topology_jobs},
        "gpuPlacement": gpu_placement_json(r),
        "retried": r.retried,
        "cost": cost_json(r),
    }


def gpu_placement_json(r: Result) -> list[dict[str, Any]]:
    return [
        {
            "flavor": g.flavor,
            "policy": g.policy,
            "gpuHours": {"ready": g.gpu_h, "occupied": g.occupied_gpu_h, "busy": g.busy_gpu_h},
            "nodeHours": {"ready": g.node_h, "empty": g.empty_node_h},
        }
        for g in r.gpu_placements
    ]


def targets_json(r: Result) -> list[dict[str, Any]]:
    return [
        {"tenant": t.tenant, "targetSeconds": t.target_seconds, "jobs": t.jobs, "within": t.within, "share": t.share}
        for t in r.targets
    ]


def target_lines(r: Result) -> list[str]:
    """Per tenant with a targetWait, the share of its jobs that started within it (beside waste)."""
    return [
        f"{t.tenant}: {100 * t.share:.1f} % of {t.jobs:,} jobs started within the target wait "
        f"{_spec_duration(t.target_seconds)} ({t.jobs - t.within:,} later or never)"
        if t.share is not None
        else f"{t.tenant}: no job of the trace replayed, so nothing to measure against its target wait "
        f"{_spec_duration(t.target_seconds)}"
        for t in r.targets
    ]


def coverage_json(r: Result) -> dict[str, Any]:
    c = r.coverage
    return {
        "traceGpuHours": c.trace_gpu_h,
        "replayedGpuHours": c.replayed_gpu_h,
        "replayedShare": c.share,
        "notReplayed": [{"why": why, "jobs": n, "gpuHours": h} for why, (n, h) in c.not_replayed.items()],
    }


def busy_share_json(r: Result) -> dict[str, Any]:
    b = r.busy_share
    return {
        "source": b.source,
        "mean": b.mean,
        "p25": b.p25,
        "p75": b.p75,
        "drawnJobs": b.drawn_jobs,
        "traceJobs": b.own_jobs,
        "wasteAtP25": b.waste_at_p25,
        "wasteAtP75": b.waste_at_p75,
    }


def coverage_lines(r: Result) -> list[str]:
    c = r.coverage
    lines = [
        f"replayed {_hours(c.replayed_gpu_h)} of the trace's {_hours(c.trace_gpu_h)} GPU-hours "
        f"({100 * c.share:.1f} %)" + ("" if c.not_replayed else ": the whole trace")
    ]
    lines += [f"  not replayed: {n:,} jobs, {_hours(h)} GPU-h: {why}" for why, (n, h) in c.not_replayed.items()]
    return lines


def speedup_line(r: Result) -> str:
    faster = {p.name: r.options.speed_of(p.name) for p in r.pools if r.options.speed_of(p.name) != 1.0}
    if not faster:
        return "durations as recorded: every pool's GPUs as fast as the trace's (--speedup)"
    # A factor below 1 is a slower pool: its runs last longer, so the line names the speed, not a cut.
    return "pools' GPUs against the trace's (a run lasts its recorded time / the factor): " + ", ".join(
        f"{name} {factor:g}x {'faster' if factor > 1 else 'slower'}" for name, factor in faster.items()
    )


FRAGMENTED = "while free GPUs were split over nodes that could not hold them (fragmentation)"


def packing_line(r: Result) -> str:
    """How pods were placed: perfect packing flatters waste and waits (docs/simulate.md, node by node)."""
    if not r.options.node_packing:
        return "placement: GPUs packed perfectly within each flavor (--node-packing: pods node by node)"
    return (
        f"placement: pods node by node; {r.fragmented_jobs:,} jobs waited {r.fragmented_gpu_h:,.0f} GPU-hours "
        + FRAGMENTED
    )


def busy_share_lines(r: Result) -> list[str]:
    b = r.busy_share
    drawn = f"drawn for {b.drawn_jobs:,} jobs from {b.source} (mean {100 * b.mean:.1f} %)"
    own = f", the trace's own for {b.own_jobs:,}" if b.own_jobs else ""
    return [
        f"busy share: {drawn}{own}",
        f"  waste with every drawn job at its p25 ({100 * b.p25:.0f} %) / p75 ({100 * b.p75:.0f} %): "
        f"{100 * b.waste_at_p25:.1f} % / {100 * b.waste_at_p75:.1f} %",
    ]


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


def detail_lines(r: Result) -> list[str]:
    """One replay in full: pools, waste, waiting per tenant, interruptions, cost."""
    c = cost_json(r)
    lines = [
        f"trace {r.trace} ({r.shape}): {r.jobs:,} jobs over {r.hours / 24:,.1f} days, seed {r.seed}, "
        f"autoscaling {'on' if r.options.autoscaling else 'off (every pool at nodes.max)'}",
        f"scaling signal: {r.signal}, from the pressure max({', '.join(sorted(r.options.signals)) or 'nothing'})"
        + ("" if r.options.signals == frozenset(DRIVING_SIGNALS) else " (a what-if: the emitted rule reads both)"),
        speedup_line(r),
        packing_line(r),
        *coverage_lines(r),
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
        *busy_share_lines(r),
        *target_lines(r),
        "",
        *wait_lines(r),
        "",
        f"preempted {r.preempted:,}, spot interruptions {r.interrupted:,}, GPU-hours lost {r.lost_gpu_h:,.0f}",
        f"cost {c['usd']:,.0f} USD ({c['monthlyUsd']:,.0f} a month): "
        + ", ".join(f"{m} {usd:,.0f}" for m, usd in sorted(c["byMarket"].items())),
        f"per busy GPU-hour {c['perBusyGpuHour'] or 0:,.2f} USD; saving {c['savingVsAllOnDemandPercent'] or 0:.1f} % "
        f"against all on-demand, {c['savingVsStaticPercent'] or 0:.1f} % against a static fleet at nodes.max",
    ]
    if r.options.node_packing:
        lines += [*topology_lines(r), *gpu_placement_lines(r)]
    if r.options.outcomes:
        lines.append(f"outcomes drawn from {r.options.outcomes.source}: {r.retried:,} failed jobs queued again")
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
    return lines


def wait_lines(r: Result) -> list[str]:
    """Waiting per tenant and priority, and the tenants whose idle quota no one else may use."""
    head = " ".join(f"{'p' + str(p) + ' wait':>11}" for p in PERCENTILES)
    lines = [f"{'tenant':<12} {'priority':<9} {'jobs':>8} {head}"]
    for q in r.waits:
        cells = " ".join(f"{_duration(q.seconds[p]):>11}" for p in PERCENTILES)
        lines.append(f"{q.tenant:<12} {q.priority:<9} {q.jobs:>8,} {cells}")
    if r.lending_none:
        lines.append(
            f"hard tenants, whose idle quota runs no other tenant's jobs (lendingLimit 0): {', '.join(r.lending_none)}"
        )
    return lines


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def _spec_duration(seconds: int) -> str:
    """As the spec writes it: 4h, 15m, 800s."""
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def gpu_placement_lines(r: Result) -> list[str]:
    """A fractional flavor's GPUs: how much of what held a pod was busy, and the nodes left empty."""
    out: list[str] = []
    for g in r.gpu_placements:
        how = "a GPU per job (no sharing)" if g.policy == WHOLE_GPU else f"shared, {g.policy}"
        out.append(
            f"GPU placement on {g.flavor} ({how}): GPUs held a pod {_share(g.occupied_gpu_h, g.gpu_h)} of their hours, "
            f"busy {_share(g.busy_gpu_h, g.occupied_gpu_h)} of those and {_share(g.busy_gpu_h, g.gpu_h)} of all; "
            f"nodes empty {_share(g.empty_node_h, g.node_h)} of their hours"
        )
    return out


def _share(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "-"


def topology_lines(r: Result) -> list[str]:
    """The topology assumption, stated whenever nodes are packed, and the waits it caused."""
    if not r.domains:
        why = "off (--no-topology)" if not r.options.topology else "no fabric flavor Kueue places by a Topology"
        return [f"topology domains: {why}; multi-node jobs run on any nodes of their flavor"]
    sizes = ", ".join(f"{key} {' / '.join(map(str, d))} nodes" for key, d in r.domains)
    return [
        f"topology domains (leaf, then pod, of the spec's fabric; nodes cabled in order): {sizes}; a multi-node "
        "job runs within one domain of the narrowest level that holds it, the fullest that fits",
        f"  {r.topology_jobs:,} jobs waited {r.topology_gpu_h:,.0f} GPU-hours while nodes would hold them but no "
        "one domain did (topology)",
    ]
