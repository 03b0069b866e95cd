"""The seed's scheduler claim, replayed: fractional jobs placed GPU by GPU, three ways.

    .venv/bin/python bench/sharing.py [--trace ../shared/traces/philly-jobs.csv] [--every 2] [--seeds 3]
        [--spec bench/claims/sharing.yaml]

The spec is bench/claims/sharing.yaml: 4 nodes x 8 A100s shared by fractions (HAMi, 10 tasks per
GPU), a fixed fleet, one tenant; bench/claims/sharing-aws.yaml is the same pool on AWS, scaled by
the floor and Karpenter from 0 to 4 nodes. The load is a what-if derived from Philly's one-GPU jobs (every
N-th in submission order): Philly had no fractional jobs, so each job asks its busy share of a GPU
drawn from Philly's per-minute utilisation (the replay's default distribution, its own seeded
draw), rounded up to 10 %, at least 10 % and at most 90 % (memory in proportion: the trace has no
memory column), and is busy that share's worth of the time (its `utilization` = busy / share).
It says what each placement does with such a load, not what a cluster saw.

Placements (`gpuplat simulate --node-packing --gpu-placement`): spread (the seed's scheduler:
filter on free cores and memory, the least-used node first, score 1/(1+usage)), binpack (the
most-used first) and whole (each job on a GPU of its own: no sharing). Prints per placement the
waits, the fragmentation, how many of the GPUs' hours held a pod, how busy those were, how busy
all were, the nodes' empty hours, the node-hours and their cost, as means over the seeds (each its
own draw of the shares) with their range, and the wall time of one replay.
"""

from __future__ import annotations

import argparse
import csv
import math
import random
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gpuplat.compile import Sources, compile_sources  # noqa: E402
from gpuplat.simulate import Options, load_trace, simulate  # noqa: E402
from gpuplat.simulate.result import Result  # noqa: E402
from gpuplat.simulate.utilization import PHILLY  # noqa: E402
from gpuplat.vocabulary import GPU_PLACEMENTS  # noqa: E402

SPEC = ROOT / "bench" / "claims" / "sharing.yaml"
SMALLEST, LARGEST = 0.1, 0.9  # a share of one GPU: HAMi's cores in 10 % steps, a whole GPU is no share


def share_of(busy: float) -> float:
    return min(LARGEST, max(SMALLEST, math.ceil(busy * 10 - 1e-9) / 10))


def one_gpu_jobs(philly: Path, every: int) -> list[tuple[float, float]]:
    """(submission, duration) of every `every`-th of Philly's one-GPU jobs, in submission order."""
    rows: list[tuple[float, float]] = []
    with philly.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["num_gpus"] == "1" and float(row["duration"]) > 0:
                when = datetime.strptime(row["timestamp"], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
                rows.append((when.timestamp(), float(row["duration"])))
    return sorted(rows)[::every]


def derive(kept: list[tuple[float, float]], seed: int, out: Path) -> int:
    """Write the what-if trace (canonical CSV) of those jobs, their shares drawn by `seed`; returns its jobs."""
    rng = random.Random(f"sharing:{seed}")
    with out.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["submit", "duration", "gpus", "fraction", "tenant", "utilization"])
        for submit, duration in kept:
            busy = PHILLY.quantile(rng.random())
            share = share_of(busy)
            w.writerow(
                [f"{submit:.0f}", f"{duration:.0f}", 1, f"{share:.1f}", "inference", f"{min(1.0, busy / share):.4f}"]
            )
    return len(kept)


def _waits(r: Result) -> tuple[float, float]:
    w = r.waits[0] if r.waits else None
    return (w.mean_seconds, w.seconds[95]) if w else (0.0, 0.0)


def _cell(values: list[float], fmt: str) -> str:
    mean = sum(values) / len(values)
    if len(values) == 1 or max(values) == min(values):
        return format(mean, fmt)
    return f"{format(mean, fmt)} ({format(min(values), fmt)}-{format(max(values), fmt)})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace", type=Path, default=ROOT.parent / "shared" / "traces" / "philly-jobs.csv")
    parser.add_argument("--every", type=int, default=2, help="keep every N-th one-GPU job (default 2)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--spec", type=Path, default=SPEC)
    args = parser.parse_args()
    compiled = compile_sources(Sources(args.spec, None))
    assert compiled.model is not None and compiled.plan is not None, compiled.diagnostics
    print(f"what-if trace: one in {args.every} of Philly's one-GPU jobs, shares drawn per seed (0-{args.seeds - 1})")
    print(
        "| placement | mean wait | p95 wait | jobs fragmented | GPU-hours holding a pod | busy of those "
        "| busy of all | node-hours empty | node-hours | USD | wall s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        kept = one_gpu_jobs(args.trace, args.every)
        traces = []
        for seed in range(args.seeds):  # each seed its own draw of the shares, as the replay's seeds draw busy shares
            path = Path(tmp) / f"sharing-{seed}.csv"
            derive(kept, seed, path)
            traces.append(load_trace(str(path)))
        for placement in GPU_PLACEMENTS:
            start = time.perf_counter()
            runs = [
                simulate(
                    compiled.model, compiled.plan, trace, Options(seed=seed, node_packing=True, gpu_placement=placement)
                )
                for seed, trace in enumerate(traces)
            ]
            wall = (time.perf_counter() - start) / len(runs)
            g = [r.gpu_placements[0] for r in runs]
            waits = [_waits(r) for r in runs]
            cells = [
                _cell([m / 3600 for m, _ in waits], ".2f") + " h",
                _cell([p / 3600 for _, p in waits], ".1f") + " h",
                _cell([float(r.fragmented_jobs) for r in runs], ",.0f"),
                _cell([100 * x.occupied_gpu_h / x.gpu_h for x in g], ".1f") + " %",
                _cell([100 * x.busy_of_occupied for x in g], ".1f") + " %",
                _cell([100 * x.busy_gpu_h / x.gpu_h for x in g], ".1f") + " %",
                _cell([100 * x.empty_node_h / x.node_h for x in g], ".1f") + " %",
                _cell([x.node_h for x in g], ",.0f"),
                _cell([r.cost_usd for r in runs], ",.0f"),
                f"{wall:.1f}",
            ]
            print(f"| {placement} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
