"""Time parse, check and plan of one spec file, in a process of their own (run.py starts it).

    .venv/bin/python bench/stages.py SPEC.yaml [REPEAT]     # prints one JSON line

`gpuplat check` and `gpuplat plan` never import Pulumi. Timed inside run.py, after the
previews of the smaller sizes, they paid for the garbage collector walking the 300,000 objects
the Pulumi SDKs leave in the process (0.5 s instead of 0.2 s for `check` of the large spec).
Here they run as the CLI runs them: gpuplat imported, no Pulumi module, one untimed warm-up
call first (run.py warms the in-process stages the same way). Times are best of REPEAT (at
least 5 for the parse), wall clock and process CPU, as in run.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
for entry in (str(BENCH), str(ROOT)):
    if entry not in sys.path:
        sys.path.insert(0, entry)

import yaml  # noqa: E402
from timing import best_of  # noqa: E402

from gpuplat.compile import Sources, compile_sources  # noqa: E402
from gpuplat.diagnostics import Level  # noqa: E402
from gpuplat.plan import build_plan  # noqa: E402


def stage_times(path: Path, repeat: int) -> dict[str, list[float]]:
    text = path.read_text("utf-8")
    sources = Sources(path, None)
    compiled = compile_sources(sources, with_plan=False)  # warm-up: caches, lazily built tables
    if compiled.model is None or any(d.level is Level.ERROR for d in compiled.diagnostics):
        raise SystemExit(f"{path} does not validate")
    model = compiled.model
    build_plan(model)
    parse, _ = best_of(max(repeat, 5), lambda: yaml.load(text, Loader=yaml.CSafeLoader))
    check, _ = best_of(repeat, lambda: compile_sources(sources, with_plan=False))
    plan, _ = best_of(repeat, lambda: build_plan(model))
    return {name: [t.wall, t.cpu] for name, t in (("parse", parse), ("check", check), ("plan", plan))}


if __name__ == "__main__":
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    print(json.dumps(stage_times(Path(sys.argv[1]), repeat)))
