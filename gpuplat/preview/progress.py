"""A progress line on stderr while a recording runs: "recording dev: 412 resources registered".

Recording a large stack takes seconds (every provider SDK is imported, every resource registered
over gRPC); a terminal that stays silent that long looks hung. The line appears only after
`delay` seconds, only on a terminal, and is erased when the recording ends, so short runs, pipes,
CI logs and `--format json` see nothing of it.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Generator
from contextlib import contextmanager
from typing import TextIO

_lock = threading.Lock()
_registered = 0


def registered() -> None:
    """Count one registration (called by the recording monitor)."""
    global _registered
    with _lock:
        _registered += 1


def total() -> int:
    with _lock:
        return _registered


@contextmanager
def progress(
    label: str, *, enabled: bool = True, stream: TextIO | None = None, delay: float = 2.0, interval: float = 0.25
) -> Generator[None]:
    """While the block runs, after `delay` s, rewrite one line with the registrations so far."""
    out = stream if stream is not None else sys.stderr
    if not enabled or not out.isatty():
        yield
        return
    start, done, shown = total(), threading.Event(), [False]

    def tick() -> None:
        if done.wait(delay):
            return
        while True:
            out.write(f"\r\033[Krecording {label}: {total() - start} resources registered")
            out.flush()
            shown[0] = True
            if done.wait(interval):
                return

    ticker = threading.Thread(target=tick, name="gpuplat-progress", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        done.set()
        ticker.join()
        if shown[0]:
            out.write("\r\033[K")  # erase it: what follows starts on a clean line
            out.flush()
