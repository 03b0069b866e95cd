"""Each CLI command end to end, as a user runs it: one process from start to rendered output.

    .venv/bin/python bench/commands.py SPEC.yaml [REPEAT] [COMMAND ...]   # prints one JSON line

The stage times of run.py leave out what a user waits for besides the work: the interpreter
starting, the imports, rendering the text. Here each command runs as `gpuplat <command> --spec
SPEC --overlay ''` in a process of its own, from the project directory (preview records the
real `__main__.py`), its output thrown away. Wall clock around the process and its CPU time
(user + system of the child, from wait4), best of REPEAT after one untimed run.

Python's bytecode cache is on for the child even when the parent runs with
PYTHONDONTWRITEBYTECODE (as some shells here do): an installed package has its .pyc files, and
compiling every module on each start would add a cost no user pays. The untimed run writes them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
for entry in (str(BENCH), str(ROOT)):
    if entry not in sys.path:
        sys.path.insert(0, entry)

from timing import Timing  # noqa: E402

COMMANDS = ("check", "plan", "graph", "preview")  # text output, as a user reads it


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.setdefault("PYTHONHASHSEED", "0")
    return env


def argv(command: str, spec: Path) -> list[str]:
    if command == "start":  # the floor of every command: the interpreter and the CLI's imports
        return [sys.executable, "-m", "gpuplat.cli", "--version"]
    return [sys.executable, "-m", "gpuplat.cli", command, "--stack", "dev", "--spec", str(spec), "--overlay", ""]


def run_once(args: Sequence[str]) -> Timing:
    # stderr to a file, not a pipe: the warnings of a large spec would fill a pipe nobody reads
    # until the process ends, and it would never end.
    with tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(args, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = code = os.waitstatus_to_exitcode(status)
        if code != 0:  # the generated specs are valid: anything else is a failed run, not a time
            err.seek(0)
            raise RuntimeError(f"{' '.join(args)} exited {code}: {err.read().decode(errors='replace')[-2000:]}")
    return Timing(wall, usage.ru_utime + usage.ru_stime)


def command_times(spec: Path, repeat: int, commands: Sequence[str] = COMMANDS) -> dict[str, Timing]:
    times: dict[str, Timing] = {}
    for command in ("start", *commands):
        args = argv(command, spec)
        run_once(args)  # untimed: bytecode written, page cache warm
        runs = [run_once(args) for _ in range(max(repeat, 1))]
        times[command] = min(runs, key=lambda t: t.wall)
    return times


if __name__ == "__main__":
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    chosen = sys.argv[3:] or COMMANDS
    found = command_times(Path(sys.argv[1]).resolve(), repeat, chosen)
    print(json.dumps({name: [t.wall, t.cpu] for name, t in found.items()}))
