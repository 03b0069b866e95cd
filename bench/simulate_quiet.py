"""Time replays with long quiet stretches: the input fuzz run's hang (two jobs 365.7 days apart) and
one autoscaled seed of the whole Philly trace on prod; CPU seconds and polls (TICK events handled).

    PYTHONPATH=TREE .venv/bin/python bench/simulate_quiet.py [--trace ../shared/traces/philly-jobs.csv]

Polls are counted by wrapping the autoscaler's tick, so the same script times a tree from before the
skip. Nothing asserts a time; bench/results.md keeps the runs.
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

from gpuplat.compile import load_for_stack  # noqa: E402
from gpuplat.simulate import Options, load_trace, simulate  # noqa: E402
from gpuplat.simulate import run as replay_module  # noqa: E402
from gpuplat.simulate.report import headline  # noqa: E402

YEAR_APART = int(365.7 * 86400)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trace", default=str(ROOT.parent / "shared" / "traces" / "philly-jobs.csv"))
    args = parser.parse_args()
    os.chdir(ROOT)
    model, plan = load_for_stack("prod")
    polls = [0]
    tick = replay_module.autoscale.tick

    def counting(*given, **named):  # type: ignore[no-untyped-def]
        polls[0] += 1
        return tick(*given, **named)

    replay_module.autoscale.tick = counting
    with tempfile.TemporaryDirectory() as tmp:
        year = Path(tmp) / "year.csv"
        year.write_text(f"submit,duration,gpus,tenant\n0,600,1,a\n{YEAR_APART},600,1,a\n")
        cases = [("two jobs 365.7 d apart", load_trace(year), Options(tenant_map={"a": "research"}))]
    cases.append(("Philly, autoscaled, 1 seed", load_trace(args.trace), Options()))
    for name, trace, options in cases:
        polls[0] = 0
        wall, cpu = time.perf_counter(), time.process_time()
        result = simulate(model, plan, trace, options)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        head = headline(result)
        print(f"{name}: cpu {cpu:.2f} s, wall {wall:.2f} s, polls {polls[0]:,}, load {os.getloadavg()[0]:.1f}")
        print("  " + ", ".join(f"{k} {head[k]!r}" for k in ("waste %", "mean wait s", "cost USD / month")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
