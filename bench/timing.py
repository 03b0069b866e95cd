"""Best-of-N timing, wall clock and process CPU, shared by run.py and stages.py."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float

    def cell(self) -> str:
        return f"{self.wall:.4f} ({self.cpu:.4f})" if self.wall < 1 else f"{self.wall:.2f} ({self.cpu:.2f})"


def best_of(repeat: int, fn: Callable[[], T]) -> tuple[Timing, T]:
    """The run with the least wall time (and that run's CPU time), and its result."""
    best: Timing | None = None
    result: Any = None
    for _ in range(max(repeat, 1)):
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        value = fn()
        timing = Timing(time.perf_counter() - wall, time.process_time() - cpu)
        if best is None or timing.wall < best.wall:
            best, result = timing, value
    assert best is not None
    return best, result
