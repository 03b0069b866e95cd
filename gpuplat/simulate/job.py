"""One job of a trace, whatever its source (trace.py's CSV shapes, prometheus.py's exports)."""

from __future__ import annotations

from dataclasses import dataclass

from gpuplat.vocabulary import REPLAY_HORIZON_DAYS

MAX_ERRORS = 20  # bad rows reported per input before reading stops
# What a replay covers: every job submitted and run within a year of the first submission. The
# event loop polls the autoscaler every 30 s of trace time while any pool is busy (quiet stretches
# are skipped), so centuries of busy trace would stall a replay for hours; the public traces span
# 2 to 6 months (Philly, Helios, Alibaba PAI).
MAX_HORIZON_DAYS = REPLAY_HORIZON_DAYS
MAX_HORIZON_SECONDS = MAX_HORIZON_DAYS * 86400.0
# A time in seconds: a canonical trace's own origin, or unix seconds (10^10 s is the year 2286).
LATEST_UNIX_SECONDS = 1e10
MAX_JOB_GPUS = 100_000  # more than any cluster a trace comes from


@dataclass(frozen=True, slots=True)
class Job:
    submit: float
    duration: float
    gpus: int
    fraction: float  # of one GPU; 1.0 for whole-GPU jobs
    tenant: str  # as the trace names it
    priority: str | None  # None: the mapped tenant's
    utilization: float | None  # None: the run's default
