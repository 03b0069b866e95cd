"""Philly's trace replayed on a spec of Philly itself, against the published queueing delay.

    .venv/bin/python bench/philly_on_philly.py [--trace ../shared/traces/philly-jobs.csv]

The cluster as SOURCES.md gives it: 321 servers of 2 GPUs and 231 of 8 (2,490 GPUs), provider
kubernetes (the nodes exist), a tenant per virtual cluster whose `gpus` is its share of the
trace's GPU-hours of the 2,490 (at least 8), every trace tenant on its own. Nothing is fitted to
the delay it is compared with (3,761 s mean, 189 s median). Prints the replay's delay overall and
by job size, and the same with one tenant holding the whole cluster (no per-VC quotas).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gpuplat.compile import Sources, compile_sources  # noqa: E402
from gpuplat.simulate import Options, Trace, load_trace  # noqa: E402
from gpuplat.simulate.mapping import gpu_hours  # noqa: E402
from gpuplat.simulate.result import percentile  # noqa: E402
from gpuplat.simulate.run import replay  # noqa: E402

PUBLISHED_MEAN, PUBLISHED_MEDIAN = 3761, 189
TWO_GPU_SERVERS, EIGHT_GPU_SERVERS = 321, 231
GPUS = 2 * TWO_GPU_SERVERS + 8 * EIGHT_GPU_SERVERS


def philly_spec(trace: Trace, per_vc: bool, into: Path) -> Path:
    hours: dict[str, float] = {}
    for job in trace.jobs:
        hours[job.tenant] = hours.get(job.tenant, 0.0) + gpu_hours(job)
    total = sum(hours.values())
    tenants = (
        "".join(f"  - {{name: vc-{vc}, gpus: {max(8, round(GPUS * h / total))}}}\n" for vc, h in sorted(hours.items()))
        if per_vc
        else f"  - {{name: all, gpus: {GPUS}}}\n"
    )
    spec = into / f"philly-{'vc' if per_vc else 'one'}.yaml"
    spec.write_text(
        "apiVersion: gpuplat/v1\nkind: Platform\nmetadata: {name: philly}\n"
        'target: {provider: kubernetes, kubernetesVersion: "1.33"}\n'
        "gpuNodePools:\n"
        f"  - {{name: two, gpu: {{model: A10G-24GB, count: 2}}, nodeSelector: {{p: two}}, "
        f"nodes: {{min: {TWO_GPU_SERVERS}, max: {TWO_GPU_SERVERS}}}}}\n"
        f"  - {{name: eight, gpu: {{model: A10G-24GB, count: 8}}, nodeSelector: {{p: eight}}, "
        f"nodes: {{min: {EIGHT_GPU_SERVERS}, max: {EIGHT_GPU_SERVERS}}}}}\n"
        "tenants:\n" + tenants
    )
    return spec


def _size(gpus: int) -> str:
    return str(gpus) if gpus <= 8 else ">8"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trace", default=str(ROOT.parent / "shared" / "traces" / "philly-jobs.csv"))
    args = parser.parse_args()
    load = os.getloadavg()[0]
    trace = load_trace(args.trace)
    published = f"{PUBLISHED_MEAN:,} s mean, {PUBLISHED_MEDIAN} s median"
    print(f"{len(trace.jobs):,} jobs on {GPUS:,} GPUs; published delay {published}")
    print(f"{'queues':<22} {'jobs':>7} {'mean s':>9} {'median s':>9} {'p95 s':>9} {'cpu s':>6}  by size: mean s")
    with tempfile.TemporaryDirectory() as tmp:
        for per_vc in (True, False):
            compiled = compile_sources(Sources(philly_spec(trace, per_vc, Path(tmp)), None))
            assert compiled.ok and compiled.model is not None and compiled.plan is not None
            mapping = {j.tenant: (f"vc-{j.tenant}" if per_vc else "all") for j in trace.jobs}
            cpu = time.process_time()
            done = replay(compiled.model, compiled.plan, trace, Options(tenant_map=mapping, spot=False))
            cpu = time.process_time() - cpu
            engine = done.engine
            waits = [
                (engine.started[i] - j.submit, j.gpus) for i, j in enumerate(engine.jobs) if engine.started[i] >= 0
            ]
            ordered = sorted(w for w, _ in waits)
            by_size: dict[str, list[float]] = {}
            for w, g in waits:
                by_size.setdefault(_size(g), []).append(w)
            sizes = ", ".join(f"{k}: {sum(v) / len(v):,.0f}" for k, v in sorted(by_size.items(), key=lambda kv: kv[0]))
            name = "a queue per VC" if per_vc else "one queue"
            mean = sum(ordered) / len(ordered)
            print(
                f"{name:<22} {len(ordered):>7,} {mean:>9,.0f} {percentile(ordered, 50):>9,.0f} "
                f"{percentile(ordered, 95):>9,.0f} {cpu:>6.1f}  {sizes}"
            )
    print(f"machine: {os.cpu_count()} cores, load average {load:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
