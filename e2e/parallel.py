"""Targets run side by side, each in a worker process of its own, and a run that is stopped tears
down what it started.

The suite's process (inside its network namespace) starts one worker per target, at most `jobs`
at a time, in the suite's order (e2e/suite.py `jobs`): a worker is `python -m e2e` with the
run's own arguments and `--worker LABEL`, in a mount namespace of its own (its private /etc:
Kueue's metrics certificate has a fixed path there). A worker writes its part of the report to
a file; the suite merges the parts in target order. Each worker's lines are printed as they come.

SIGTERM or SIGINT (a CI timeout, Ctrl-C) to the suite is passed to every worker. A worker turns
it into `Stopped`, an exception no scenario catches, so the `finally` blocks that stop its
controllers and delete its control plane run; it then writes what it has, with a `stopped` row.
What is still running in the network namespace after the workers are gone (a controller a
killed worker could not stop) is ended by process id: everything in that namespace is the
suite's own.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from e2e.ports import SLOT_ENV

GRACE = 120.0  # seconds a stopped worker gets to tear its control plane down


class Stopped(BaseException):
    """SIGTERM or SIGINT: unwinds through every `except Exception`, runs every `finally`."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Inside: SIGTERM / SIGINT raise `Stopped` once; later ones are ignored, so a teardown in
    progress is not cut short by a second signal."""
    def handler(signum: int, _frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise Stopped(signum)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


@dataclass
class Worker:
    label: str
    argv: list[str]
    part: Path
    process: subprocess.Popen[str] | None = None
    started: float = 0.0
    seconds: float = 0.0
    reader: threading.Thread | None = None


@dataclass
class Pool:
    """Run workers, at most `jobs` at once, in the given order; pass a stop signal on to them."""

    workers: Sequence[Worker]
    jobs: int
    echo: Callable[[str], None] = field(default=lambda line: print(line, end="", flush=True))
    stopped: int = 0  # the signal that stopped the run, 0 if none
    _slots: int = 0  # workers started so far: each gets the next slot

    def run(self) -> None:
        previous = {s: signal.signal(s, self._stop) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            waiting = list(self.workers)
            running: list[Worker] = []
            while waiting or running:
                while waiting and len(running) < self.jobs and not self.stopped:
                    running.append(self._start(waiting.pop(0)))
                for worker in list(running):
                    assert worker.process is not None
                    if worker.process.poll() is not None:
                        self._finish(worker)
                        running.remove(worker)
                if self.stopped:
                    waiting.clear()
                    self._drain(running)
                    running.clear()
                time.sleep(0.2)
        finally:
            for signum, old in previous.items():
                signal.signal(signum, old)

    def _start(self, worker: Worker) -> Worker:
        worker.started = time.monotonic()
        self._slots += 1
        # Each worker's servers get loopback addresses of their own (e2e/ports.py): targets running
        # at once would otherwise both listen on the first address.
        env = {**os.environ, SLOT_ENV: str(self._slots)}
        # A session of its own: a terminal's Ctrl-C reaches the suite, which passes it on once.
        worker.process = subprocess.Popen(worker.argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                          text=True, start_new_session=True, env=env)
        worker.reader = threading.Thread(target=self._echo, args=(worker.process,), daemon=True)
        worker.reader.start()
        return worker

    def _echo(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self.echo(line)

    def _finish(self, worker: Worker) -> None:
        worker.seconds = time.monotonic() - worker.started
        if worker.reader is not None:
            worker.reader.join(timeout=5)

    def _stop(self, signum: int, _frame: FrameType | None) -> None:
        if self.stopped:
            return
        self.stopped = signum
        self.echo(f"e2e: {signal.Signals(signum).name}: stopping every target and tearing down\n")

    def _drain(self, running: list[Worker]) -> None:
        for worker in running:
            assert worker.process is not None
            if worker.process.poll() is None:
                worker.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + GRACE
        for worker in running:
            assert worker.process is not None
            try:
                worker.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.process.wait()
            self._finish(worker)


def netns_id(pid: int | str = "self") -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def stragglers(namespace: str | None = None, keep: Sequence[int] = ()) -> list[tuple[int, str]]:
    """(pid, command) of every process in this network namespace but this one and `keep`."""
    namespace = namespace or netns_id()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in (os.getpid(), *keep):
            continue
        if netns_id(entry.name) != namespace:
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if command:  # a zombie or kernel thread has none
            found.append((int(entry.name), command))
    return found


def end_stragglers(found: Sequence[tuple[int, str]], grace: float = 10.0) -> None:
    """SIGTERM each by its id, then SIGKILL what is left after `grace` seconds."""
    for pid, _ in found:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    alive = [pid for pid, _ in found]
    while alive and time.monotonic() < deadline:
        alive = [pid for pid in alive if _alive(pid)]
        time.sleep(0.2)
    for pid in alive:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:  # a zombie is dead, merely not reaped by its parent
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def worker_argv(argv: Sequence[str], label: str, part: Path, private_mounts: bool = True) -> list[str]:
    """The run's own arguments for one target, in a mount namespace of its own."""
    command = [sys.executable, "-m", "e2e", *argv, "--worker", label, "--part", str(part)]
    return ["unshare", "--mount", "--", *command] if private_mounts else command
