"""The e2e suite's process handling: targets side by side in workers, and a stopped run (SIGTERM,
a CI timeout) tearing down every controller its workers started. Dummy children stand in for the
control planes: the handling is the suite's own (`e2e.parallel`, `e2e.cluster.Processes`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from e2e.parallel import end_stragglers
from e2e.report import Journey, Report

ROOT = Path(__file__).resolve().parent.parent

# A target's worker as the suite runs one: controllers started through `Processes`, the work
# inside `stop_on_signals`, the part of the report written whatever happens, the teardown in
# `finally`.
WORKER = """
import json, sys, time
from pathlib import Path
from e2e.cluster import Processes
from e2e.parallel import Stopped, stop_on_signals
work = Path(sys.argv[1])
work.mkdir()
processes = Processes(work)
outcome = "finished"
try:
    with stop_on_signals():
        for name in ("etcd", "kube-apiserver", "kueue"):
            processes.start(name, ["sleep", "600"])
        (work / "pids").write_text(" ".join(str(p.pid) for p in processes.running.values()))
        time.sleep(600)
except Stopped as stop:
    outcome = str(stop)
finally:
    processes.stop()
    work.with_suffix(".json").write_text(json.dumps({"outcome": outcome}))
"""

POOL = """
import sys
from pathlib import Path
from e2e.parallel import Pool, Worker
root = Path(sys.argv[1])
workers = [Worker(f"t{i}", [sys.executable, "-c", sys.argv[2], str(root / f"t{i}")], root / f"t{i}.json")
           for i in range(3)]
pool = Pool(workers, jobs=2)
pool.run()
print("stopped", pool.stopped, flush=True)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ", 1)[1][0] != "Z"


def _wait_for(paths: list[Path], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not all(p.exists() for p in paths):
        assert time.monotonic() < deadline, f"workers did not start: {paths}"
        time.sleep(0.1)


def test_sigterm_to_the_suite_tears_down_every_running_target_and_starts_no_other(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    suite = subprocess.Popen([sys.executable, "-c", POOL, str(tmp_path), WORKER], env=env, cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    pid_files = [tmp_path / "t0" / "pids", tmp_path / "t1" / "pids"]
    controllers: list[int] = []
    try:
        _wait_for(pid_files, 60)  # two targets at once: the third waits
        controllers = [int(p) for f in pid_files for p in f.read_text().split()]
        assert len(controllers) == 6 and all(_alive(p) for p in controllers)
        suite.send_signal(signal.SIGTERM)
        out, _ = suite.communicate(timeout=60)
        left = [p for p in controllers if _alive(p)]
    finally:
        suite.kill()
        end_stragglers([(p, "sleep") for p in controllers if _alive(p)], grace=1.0)  # whatever the outcome
    assert "stopped 15" in out, out
    assert not left  # every controller of both targets ended
    for label in ("t0", "t1"):
        assert json.loads((tmp_path / f"{label}.json").read_text()) == {"outcome": "SIGTERM"}
    assert not (tmp_path / "t2").exists()  # a target not yet started is not started after the stop


def test_targets_run_side_by_side_up_to_the_job_count(tmp_path: Path) -> None:
    quick = "import sys, time; from pathlib import Path; Path(sys.argv[1]).write_text(str(time.monotonic())); " \
            "time.sleep(1.5)"
    script = f"""
import sys
from pathlib import Path
from e2e.parallel import Pool, Worker
root = Path(sys.argv[1])
workers = [Worker(f"t{{i}}", [sys.executable, "-c", {quick!r}, str(root / f"t{{i}}")], root / f"t{{i}}.json")
           for i in range(4)]
Pool(workers, jobs=2).run()
print(" ".join(f"{{w.label}}={{w.seconds:.1f}}" for w in workers))
"""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    starts = sorted(float((tmp_path / f"t{i}").read_text()) for i in range(4))
    # Two at once: the first two start together, the other two once a place is free.
    assert starts[1] - starts[0] < 1.0 and starts[2] - starts[0] >= 1.0
    assert elapsed < 4 * 1.5  # less than one after another
    assert all(float(part.split("=")[1]) >= 1.5 for part in done.stdout.split())


def test_a_controller_that_ignores_sigterm_is_killed(tmp_path: Path) -> None:
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1, flush=True); time.sleep(600)"
    stubborn = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert stubborn.stdout is not None and stubborn.stdout.readline().strip() == "1"
    end_stragglers([(stubborn.pid, "stubborn")], grace=1.0)
    assert stubborn.wait(timeout=10) == -signal.SIGKILL


def test_rows_carry_the_seconds_their_work_took_and_parts_merge_in_order() -> None:
    part = Report()
    part.mark()
    time.sleep(0.2)
    part.scenario("prod", "crds", True, "x")
    part.journey(Journey("prod", "t", "p", "r", "runs", "runs", "ok"))
    part.phase("prod", "compile", 12.34)
    part.target("prod", kubernetes="v1.36.5", minor="1.36")
    assert part.scenarios[0].seconds >= 0.2 and part.journeys[0].seconds < 0.2
    whole = Report(jobs=2)
    whole.merge(json.loads(json.dumps(part.document())))
    whole.target("prod", seconds=80.0)
    document = whole.document()
    assert document["targets"] == [{"stack": "prod", "phases": {"compile": 12.3}, "kubernetes": "v1.36.5",
                                    "minor": "1.36", "seconds": 80.0}]
    assert document["scenarios"][0]["seconds"] >= 0.2 and document["jobs"] == 2


def test_each_worker_takes_loopback_addresses_of_its_own(tmp_path: Path) -> None:
    """Targets run at once each start Prometheus and KEDA on the port a Service names: their
    workers must not be handed the same loopback address (e2e/ports.py, slot per worker)."""
    import subprocess
    import sys

    def first(slot: str) -> str:
        code = "from e2e.ports import loopback_address; print(loopback_address())"
        env = {**os.environ, "GPUPLAT_E2E_SLOT": slot}
        return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                              check=True, cwd=Path(__file__).resolve().parents[1]).stdout.strip()

    assert len({first("1"), first("2"), first("3")}) == 3
