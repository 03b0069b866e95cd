"""Time `gpuplat simulate` on the whole Philly trace: loading, the static fleet, the autoscaled one
(one seed, then the default report's seeds, printing each seed's headline numbers);
and reading a Prometheus / DCGM export (a range-query response the bench writes from Philly's
jobs over `--export-days` days from day `--export-from`: one DCGM_FI_DEV_GPU_UTIL series per GPU
of each job, 60 s step).

    .venv/bin/python bench/simulate.py [--trace ../shared/traces/philly-jobs.csv] [--stack prod] [--repeat 1]
        [--node-packing]

Prints wall and process CPU seconds per stage and the load average of the machine before the
run (the 2-core machines are shared, so CPU time is the steadier number). Nothing asserts a
time; bench/simulate.md keeps the last committed run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gpuplat.compile import load_for_stack  # noqa: E402
from gpuplat.simulate import Options, Trace, load_trace, simulate, simulate_seeds  # noqa: E402
from gpuplat.simulate.bands import DEFAULT_SEEDS  # noqa: E402
from gpuplat.simulate.report import headline  # noqa: E402

EXPORT_STEP = 60


def write_export(trace: Trace, first_day: float, days: float, path: Path) -> int:
    """A query_range response of the GPUs Philly's jobs held over `days` from `first_day`; its sample count."""
    begin, end = first_day * 86400, (first_day + days) * 86400
    samples, result = 0, []
    for n, job in enumerate(trace.jobs):
        if job.submit >= end or job.submit + job.duration <= begin:
            continue
        times = range(int(max(job.submit, begin)), int(min(job.submit + job.duration, end)), EXPORT_STEP)
        util = str(round(100 * (0.2 + 0.6 * (n % 7) / 6)))  # a spread of busy shares, no randomness
        for gpu in range(job.gpus):
            labels = {"__name__": "DCGM_FI_DEV_GPU_UTIL", "UUID": f"GPU-{n}-{gpu}", "gpu": str(gpu)}
            labels |= {"namespace": job.tenant, "pod": f"job-{n}"}
            result.append({"metric": labels, "values": [[1.5e9 + t, util] for t in times]})
            samples += len(times)
    path.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}))
    return samples


def _timed(run):  # type: ignore[no-untyped-def]
    wall, cpu = time.perf_counter(), time.process_time()
    value = run()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def _timed_children(run):  # type: ignore[no-untyped-def]
    """Wall seconds, and CPU seconds of this process and its finished children (the workers)."""
    wall, before = time.perf_counter(), os.times()
    run()
    after = os.times()
    cpu = sum(getattr(after, k) - getattr(before, k) for k in ("user", "system", "children_user", "children_system"))
    return time.perf_counter() - wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trace", default=str(ROOT.parent / "shared" / "traces" / "philly-jobs.csv"))
    parser.add_argument("--stack", default="prod")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--seeds", type=int, default=DEFAULT_SEEDS, help="seeds of the default report")
    parser.add_argument("--export-from", type=float, default=40.0, help="first day of the export (a busy stretch)")
    parser.add_argument("--export-days", type=float, default=3.0)
    parser.add_argument("--node-packing", action="store_true", help="every replay node by node")
    args = parser.parse_args()
    os.chdir(ROOT)
    load = os.getloadavg()[0]
    model, plan = load_for_stack(args.stack)
    rows = []
    trace, wall, cpu = _timed(lambda: load_trace(args.trace))
    rows.append(("load trace", wall, cpu))
    scaled = Options(node_packing=args.node_packing)
    for name, options in (("static fleet", dataclasses.replace(scaled, autoscaling=False)), ("autoscaled", scaled)):
        best = min(
            (_timed(lambda o=options: simulate(model, plan, trace, o)) for _ in range(args.repeat)), key=lambda r: r[2]
        )
        rows.append((name, best[1], best[2]))
    runs, wall, cpu = _timed(lambda: simulate_seeds(model, plan, trace, scaled, args.seeds))
    rows.append((f"autoscaled x{args.seeds}", wall, cpu))
    workers = os.cpu_count() or 1
    forked = _timed_children(lambda: simulate_seeds(model, plan, trace, scaled, args.seeds, workers))
    rows.append((f"x{args.seeds}, {workers} workers", forked[0], forked[1]))
    with tempfile.TemporaryDirectory() as tmp:
        export = Path(tmp) / "dcgm-range.json"
        samples = write_export(trace, args.export_from, args.export_days, export)
        exported, wall, cpu = _timed(lambda: load_trace(export))
        rows.append(("load export", wall, cpu))
    days = trace.jobs[-1].submit / 86400
    packing = ", node by node" if args.node_packing else ""
    print(f"{len(trace.jobs):,} jobs, {days:.0f} days of submissions; stack {args.stack}{packing}")
    span = f"{args.export_days:g} days from day {args.export_from:g}"
    print(f"export: {samples:,} samples, {span} ({export.name}) -> {len(exported.jobs):,} jobs")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, load average {load:.1f}")
    first = runs[0]
    print(f"replayed {100 * first.coverage.share:.2f} % of {first.coverage.trace_gpu_h:,.0f} GPU-hours")
    for key in ("waste %", "mean wait s", "cost USD / month"):
        values = [headline(r)[key] for r in runs]
        print(f"{key}: " + ", ".join(f"{v:,.2f}" for v in values))
    print(f"{'stage':<14} {'wall s':>8} {'cpu s':>8}")
    for name, wall, cpu in rows:
        print(f"{name:<14} {wall:>8.2f} {cpu:>8.2f}")
    print(json.dumps({name: {"wall": round(w, 2), "cpu": round(c, 2)} for name, w, c in rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
