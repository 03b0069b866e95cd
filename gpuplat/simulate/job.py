"""One job of a trace, whatever its source (trace.py's CSV shapes, prometheus.py's exports)."""

from __future__ import annotations

from dataclasses import dataclass

MAX_ERRORS = 20  # bad rows reported per input before reading stops


@dataclass(frozen=True, slots=True)
class Job:
    submit: float
    duration: float
    gpus: int
    fraction: float  # of one GPU; 1.0 for whole-GPU jobs
    tenant: str  # as the trace names it
    priority: str | None  # None: the mapped tenant's
    utilization: float | None  # None: the run's default
