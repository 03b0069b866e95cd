"""Time `gpuplat simulate` on a fleet (examples/fleet/): a seeded synthetic trace of research jobs
(Poisson arrivals, exponential durations, 1, 2, 4 or 8 GPUs) dispatched over the on-prem and
cloud workers; prints CPU and wall seconds and the per-worker report (docs/simulate.md, "A fleet").

    .venv/bin/python bench/simulate_fleet.py [--jobs 5000] [--every 420] [--mean 7200] [--seed 1]

Nothing asserts a time: the machine is shared, so CPU time is the steadier number.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gpuplat.compile import Sources, compile_sources  # noqa: E402
from gpuplat.simulate import Options, load_trace  # noqa: E402
from gpuplat.simulate.dispatch import simulate_fleet  # noqa: E402
from gpuplat.simulate.fleet_report import render_text  # noqa: E402


def synthetic(path: Path, jobs: int, every: float, mean: float, seed: int) -> None:
    draw, t = random.Random(seed), 0.0
    rows = ["submit,duration,gpus,tenant"]
    for _ in range(jobs):
        t += draw.expovariate(1 / every)
        rows.append(f"{t:.0f},{draw.expovariate(1 / mean):.0f},{draw.choice([1, 2, 4, 8])},research")
    path.write_text("\n".join(rows) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--every", type=float, default=420.0, help="mean seconds between submissions")
    parser.add_argument("--mean", type=float, default=7200.0, help="mean duration, seconds")
    parser.add_argument("--seed", type=int, default=1, help="the trace's draw (the replay's seed is 0)")
    args = parser.parse_args()
    os.chdir(ROOT)  # the members' `spec` paths are relative to the project
    compiled = compile_sources(Sources(Path("examples/fleet/hub.yaml"), None))
    assert compiled.model is not None and compiled.model.fleet is not None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "research.csv"
        synthetic(path, args.jobs, args.every, args.mean, args.seed)
        trace = load_trace(str(path))
    wall, cpu = time.perf_counter(), time.process_time()
    result = simulate_fleet(compiled.model.fleet, [t.name for t in compiled.model.tenants], trace, Options())
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(f"{args.jobs:,} jobs: cpu {cpu:.2f} s, wall {wall:.2f} s, load {os.getloadavg()[0]:.1f}")
    print(render_text(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
