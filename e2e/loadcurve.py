"""The load the stand-in GPUs carry in the autoscaling loop: a slice of Philly's job trace.

The slice (`shared/traces/philly-jobs.csv`, virtual cluster e13805, from 2017-11-25 02:45 in
trace time): 2 minutes with 4 of its GPUs busy, then 273 minutes with 8 busy, then 2 minutes with
4 and hours with none. It is the only stretch of the trace where a virtual cluster holds its peak
for a quarter of an hour, having been between a third and four fifths of it for the minutes
before, and then goes idle for most of an hour (found by a search of every cluster's occupancy,
minute by minute); it starts two minutes before the peak, one window of the loop's short timings.
The occupancy is given as a share of the slice's peak (8 GPUs = the pool fully busy), and every
GPU of a pool reports that share as its utilisation (the pool's work spread evenly).

One trace minute is replayed per `SAMPLE_SECONDS` (the scrape interval, so every sample is
scraped once). The loop may skip ahead to the idle stretch once the floors have grown: the rest
of the busy stretch would only keep them growing, a cooldown at a time, and the half-load minutes
after it would only hold them (between the thresholds).
"""

from __future__ import annotations

import csv
import os
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from e2e.upstream import ROOT

TRACES = Path(os.environ.get("GPUPLAT_TRACES") or ROOT.parent / "shared" / "traces")
TRACE = "philly-jobs.csv"
CLUSTER = "e13805"
START = datetime(2017, 11, 25, 2, 45, 41)  # trace time of the slice's first minute
MINUTES = 2 + 273 + 2 + 60
SAMPLE_SECONDS = 15.0


def occupancy(path: Path | None = None) -> list[int]:
    """GPUs in use by the cluster's jobs at each minute of the slice."""
    source = path or TRACES / TRACE
    jobs = []
    with source.open() as handle:
        for row in csv.DictReader(handle):
            if row["cluster"] == CLUSTER:
                started = datetime.fromisoformat(row["timestamp"])
                jobs.append((started, started + timedelta(seconds=float(row["duration"])), int(row["num_gpus"])))
    minutes = [START + timedelta(minutes=m) for m in range(MINUTES)]
    return [sum(g for begin, end, g in jobs if begin <= t < end) for t in minutes]


@dataclass(frozen=True)
class Curve:
    samples: tuple[float, ...]  # the pool's busy share, one a trace minute

    @property
    def busy(self) -> range:
        """The samples of the busy stretch (the slice's peak)."""
        first = self.samples.index(1.0)
        last = first
        while last + 1 < len(self.samples) and self.samples[last + 1] == 1.0:
            last += 1
        return range(first, last + 1)

    @property
    def idle(self) -> int:
        """The first sample of the idle stretch."""
        return next(i for i in range(self.busy.stop, len(self.samples)) if self.samples[i] == 0.0)


def curve(path: Path | None = None) -> Curve:
    used = occupancy(path)
    peak = max(used)
    if not peak:
        raise ValueError(f"no job of cluster {CLUSTER} runs in the slice of {path or TRACES / TRACE}")
    return Curve(tuple(g / peak for g in used))


class Replay:
    """The curve played in real time; `skip_to` jumps ahead. Thread-safe reads."""

    def __init__(self, load: Curve) -> None:
        self.curve = load
        self.started: float | None = None
        self._offset = 0.0  # samples skipped
        self._lock = threading.Lock()
        self.log: list[tuple[float, int, str]] = []  # (monotonic time, sample, what)

    def start(self) -> None:
        with self._lock:
            self.started = time.monotonic()
            self.log.append((self.started, 0, "replay started"))

    def index(self, now: float | None = None) -> int | None:
        """The sample served now (None before the start); the last one once the slice is over."""
        with self._lock:
            if self.started is None:
                return None
            at = ((now or time.monotonic()) - self.started) / SAMPLE_SECONDS + self._offset
            return min(int(at), len(self.curve.samples) - 1)

    def load(self, now: float | None = None) -> float | None:
        found = self.index(now)
        return None if found is None else self.curve.samples[found]

    def skip_to(self, sample: int, why: str) -> None:
        current = self.index()
        with self._lock:
            if current is not None and sample > current:
                self._offset += sample - current
                self.log.append((time.monotonic(), sample, why))
