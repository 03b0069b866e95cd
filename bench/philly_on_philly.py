"""Philly's trace replayed on a spec of Philly itself, against the published queueing delay.

    .venv/bin/python bench/philly_on_philly.py [--trace ../shared/traces/philly-jobs.csv] [--seeds 5]
        [--servers machine-list|gpu-log]

The spec is tests/support_philly.py's (SOURCES.md's machines, a tenant per virtual cluster with
its share of the trace's GPU-hours, at least its widest job); nothing is fitted to the delay it is
compared with (3,761 s mean, 189 s median). Rows: the trace on the whole cluster and on its share
of it (the subset's part of Philly's GPU time), with node-level packing and the published outcome
shares (a seeded draw: the trace has no status), then each of the two off; then the what-if racks
(support_philly.RACK_SWITCH_RADIX: Philly's rack size is not published) with the topology
constraint on and off (--no-topology), seeds as the headline; then strict VC quotas (every VC a
hard tenant: none lends its idle GPUs; support_philly.strict_spec). `--servers gpu-log` replays
on the servers the GPU utilisation log counts (support_philly.GPU_LOG), not the published
machine list. Prints the delay overall (and the share of jobs that waited at all), by job size
and by seed, the GPU-time shares of the drawn outcomes against the published ones, the
fragmentation and topology waits counted, and the wall and CPU time of each replay.
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
from gpuplat.simulate import Options, load_trace  # noqa: E402
from gpuplat.simulate.engine import Engine  # noqa: E402
from gpuplat.simulate.mapping import gpu_hours  # noqa: E402
from gpuplat.simulate.nodes import FRAGMENTATION, TOPOLOGY  # noqa: E402
from gpuplat.simulate.outcomes import KINDS, PHILLY_OUTCOMES  # noqa: E402
from gpuplat.simulate.result import percentile  # noqa: E402
from gpuplat.simulate.run import replay  # noqa: E402
from tests.support_philly import (  # noqa: E402
    GPU_LOG,
    MACHINE_LIST,
    PHILLY_JOBS,
    PUBLISHED_MEAN_WAIT,
    PUBLISHED_MEDIAN_WAIT,
    RACK_SWITCH_RADIX,
    philly_spec,
    strict_spec,
    subset_share,
    tenant_map,
)

SIZES = ("1", "2", "4", "8", ">8")


def _size(gpus: int) -> str:
    return str(gpus) if gpus in (1, 2, 4, 8) else ">8"


def waits(engine: Engine) -> list[tuple[float, int]]:
    return [(engine.started[i] - j.submit, j.gpus) for i, j in enumerate(engine.jobs) if engine.started[i] >= 0]


def outcome_shares(engine: Engine) -> str:
    hours: dict[str, float] = {}
    for i, job in enumerate(engine.jobs):
        hours[engine.outcome[i]] = hours.get(engine.outcome[i], 0.0) + gpu_hours(job)
    total = sum(hours.values())
    published = PHILLY_OUTCOMES.by_gpu_time or PHILLY_OUTCOMES.by_count
    return ", ".join(
        f"{k} {hours.get(k, 0.0) / total:.1%} (published {v:.1%})" for k, v in zip(KINDS, published, strict=True)
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trace", default=str(PHILLY_JOBS))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--switch-radix", type=int, default=RACK_SWITCH_RADIX, help="the what-if racks' leaf switch")
    parser.add_argument("--servers", choices=("machine-list", "gpu-log"), default="machine-list")
    args = parser.parse_args()
    servers = GPU_LOG if args.servers == "gpu-log" else MACHINE_LIST
    load = os.getloadavg()[0]
    trace = load_trace(args.trace)
    share = subset_share(trace)
    print(
        f"{len(trace.jobs):,} jobs, {share:.1%} of Philly's GPU time; published delay "
        f"{PUBLISHED_MEAN_WAIT:,} s mean, {PUBLISHED_MEDIAN_WAIT} s median"
    )
    head = f"{'cluster':<24} {'model':<32} {'seed':>4} {'mean s':>7} {'median s':>8} {'p95 s':>7} {'waited':>6}"
    print(f"{head} {'frag GPU-h':>10} {'topo GPU-h':>10} {'wall s':>6} {'cpu s':>5}  by size (mean / median s)")
    variants = (  # name, packing, outcomes, racks, topology, strict VC quotas
        ("packing + outcomes", True, True, False, True, False),
        ("perfect packing, outcomes", False, True, False, True, False),
        ("packing, no outcomes", True, False, False, True, False),
        (f"racks (radix {args.switch_radix}) + topology", True, True, True, True, False),
        (f"racks (radix {args.switch_radix}), --no-topology", True, True, True, False, False),
        ("strict VC quotas (no lending)", True, True, False, True, True),
    )
    with tempfile.TemporaryDirectory() as tmp:
        for part in (share, 1.0):
            for name, packing, outcomes, racks, topology, strict in variants:
                spec = Path(tmp) / f"philly-{part:.3f}-{racks}-{strict}.yaml"
                spec.write_text(
                    strict_spec(trace, part, servers)
                    if strict
                    else philly_spec(trace, part, args.switch_radix if racks else None, servers)
                )
                compiled = compile_sources(Sources(spec, None))
                assert compiled.ok and compiled.model is not None and compiled.plan is not None
                gpus = sum(p.gpus_per_node * p.nodes.max for p in compiled.plan.pools)
                cluster = f"{gpus:,} GPUs ({part:.1%})"
                for seed in range(args.seeds if packing and outcomes else 1):
                    options = Options(
                        seed=seed,
                        tenant_map=tenant_map(trace),
                        spot=False,
                        node_packing=packing,
                        topology=topology,
                        outcomes=PHILLY_OUTCOMES if outcomes else None,
                    )
                    wall, cpu = time.perf_counter(), time.process_time()
                    engine = replay(compiled.model, compiled.plan, trace, options).engine
                    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                    done = waits(engine)
                    ordered = sorted(w for w, _ in done)
                    by_size: dict[str, list[float]] = {}
                    for w, g in done:
                        by_size.setdefault(_size(g), []).append(w)
                    sizes = ", ".join(
                        f"{k}: {sum(v) / len(v):,.0f} / {percentile(sorted(v), 50):,.0f}"
                        for k in SIZES
                        if (v := by_size.get(k))
                    )
                    mean = sum(ordered) / len(ordered)
                    waited = sum(1 for w in ordered if w > 0) / len(ordered)
                    frag, topo = (engine.node_waits.gpu_s[k] / 3600 for k in (FRAGMENTATION, TOPOLOGY))
                    print(
                        f"{cluster:<24} {name:<32} {seed:>4} {mean:>7,.0f} {percentile(ordered, 50):>8,.0f} "
                        f"{percentile(ordered, 95):>7,.0f} {waited:>6.1%} {frag:>10,.0f} {topo:>10,.0f} "
                        f"{wall:>6.1f} {cpu:>5.1f}  {sizes}",
                        flush=True,
                    )
                    if packing and outcomes and seed == 0 and not racks and not strict:
                        print(f"{'':<24} drawn outcomes by GPU time: {outcome_shares(engine)}")
    print(f"machine: {os.cpu_count()} cores, load average {load:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
