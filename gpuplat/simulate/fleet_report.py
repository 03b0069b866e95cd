"""The report of a fleet replay (dispatch.py): per worker, in dispatch order, the jobs and
GPU-hours it ran, how many came to it from an earlier worker, their waiting and its cost; as
text, one JSON document, and the pull-request comment's markdown."""

from __future__ import annotations

import json
from typing import Any

from gpuplat.simulate.dispatch import ROUND_SECONDS, FleetResult, MemberResult
from gpuplat.simulate.render import FRAGMENTED, result_json


def _share(part: float, whole: float) -> float:
    return 100 * part / whole if whole else 0.0


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:,.1f} min"


def _cost(m: MemberResult) -> str:
    return "not priced" if m.cost_usd is None else f"{m.cost_usd:,.0f}"


def _intro(r: FleetResult) -> str:
    return (
        f"fleet {r.fleet} (manager {r.manager}): {r.jobs:,} jobs of {r.trace} submitted to the fleet queue, "
        f"seed {r.seed}; a worker that does not admit a job within {ROUND_SECONDS / 60:.0f} minutes "
        "(Kueue's dispatch round) passes it to the tenant's next worker"
    )


def _notes(r: FleetResult, note: str) -> list[str]:
    notes = [f"{k} -> {v}" for k, v in r.mapping.items()]
    lines = [note] if note else []
    lines += [f"tenants: {', '.join(notes)}"] if notes else []
    if r.unrouted:
        lines.append(
            "jobs of a tenant no worker has (not dispatched): " + ", ".join(f"{t} {n:,}" for t, n in r.unrouted.items())
        )
    if r.unplaceable:
        lines.append(
            "jobs no worker of their tenant can hold: " + ", ".join(f"{t} {n:,}" for t, n in r.unplaceable.items())
        )
    packed = [(m.name, m.result) for m in r.members if m.result.options.node_packing]
    if packed:
        waits = [f"{name} {p.fragmented_jobs:,} ({p.fragmented_gpu_h:,.1f} GPU-h)" for name, p in packed]
        lines.append(f"node by node, jobs that waited {FRAGMENTED}: " + ", ".join(waits))
    late = [m for m in r.members if m.never_started]
    if late:
        lines.append(
            "jobs admitted but never started within the replay: "
            + ", ".join(f"{m.name} {m.never_started:,}" for m in late)
        )
    return lines


def render_text(r: FleetResult, note: str = "") -> str:
    lines = [
        _intro(r),
        "",
        f"{'#':>2} {'worker':<12} {'provider':<11} {'jobs':>8} {'GPU-h':>10} {'share':>7} {'spilled in':>11} "
        f"{'p50 wait':>11} {'p95 wait':>11} {'cost USD':>12}",
    ]
    for m in r.members:
        lines.append(
            f"{m.position:>2} {m.name:<12} {m.provider:<11} {m.jobs:>8,} {m.gpu_h:>10,.1f} "
            f"{_share(m.gpu_h, r.gpu_h):>6.1f}% {m.spilled_in:>11,} {_minutes(m.wait_seconds[50]):>11} "
            f"{_minutes(m.wait_seconds[95]):>11} {_cost(m):>12}"
        )
    lines += ["", f"priced cost {r.cost_usd:,.0f} USD (waits from the submission to the fleet to the first start)"]
    lines += _notes(r, note)
    return "\n".join(lines) + "\n"


def _member_json(m: MemberResult, total_gpu_h: float) -> dict[str, Any]:
    return {
        "name": m.name,
        "dispatchPosition": m.position,
        "provider": m.provider,
        "jobs": m.jobs,
        "gpuHours": round(m.gpu_h, 3),
        "gpuHoursPercent": round(_share(m.gpu_h, total_gpu_h), 2),
        "spilledIn": m.spilled_in,
        "neverStarted": m.never_started,
        "waitSeconds": {f"p{p}": round(s, 1) for p, s in m.wait_seconds.items()},
        "meanWaitSeconds": round(m.mean_wait_seconds, 1),
        "costUsd": None if m.cost_usd is None else round(m.cost_usd, 2),
        "replay": result_json(m.result),
    }


def render_json(r: FleetResult, note: str = "") -> str:
    doc = {
        "fleet": r.fleet,
        "manager": r.manager,
        "trace": r.trace,
        "jobs": r.jobs,
        "seed": r.seed,
        "dispatchRoundSeconds": ROUND_SECONDS,
        "mapping": r.mapping,
        "members": [_member_json(m, r.gpu_h) for m in r.members],
        "gpuHours": round(r.gpu_h, 3),
        "costUsd": round(r.cost_usd, 2),
        "unrouted": r.unrouted,
        "unplaceable": r.unplaceable,
        "note": note or None,
    }
    return json.dumps(doc, indent=2, sort_keys=False) + "\n"


def render_markdown(r: FleetResult, note: str = "") -> str:
    """The pull-request comment's section: where the fleet's work goes, and what each worker costs."""
    rows = "".join(
        f"| {m.position} | {m.name} | {m.jobs:,} | {m.gpu_h:,.1f} ({_share(m.gpu_h, r.gpu_h):.1f} %) | "
        f"{m.spilled_in:,} | {_minutes(m.wait_seconds[95])} | {_cost(m)} |\n"
        for m in r.members
    )
    return (
        "### Where the fleet's work goes\n\n"
        + _intro(r)
        + ".\n\n| # | worker | jobs | GPU-h | spilled in | p95 wait | cost USD |\n|---:|---|---:|---:|---:|---:|---:|\n"
        + rows
        + "\n"
        + "".join(f"- {line}\n" for line in _notes(r, note))
    )
