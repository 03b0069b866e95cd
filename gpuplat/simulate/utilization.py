"""Each job's busy share (the part of its allocated GPU time DCGM would show busy): the trace's
own `utilization` column where it has one, else a draw from a distribution.

The distribution is Philly's per-minute GPU utilisation by default (gpuplat/catalog/utilization.py),
or `--utilization`: a CDF in AcmeTrace's CSV shape (`cumulative_percent,gpu_util_percent`), a
Prometheus / DCGM export of a team's own cluster (each pod's mean utilisation is one value), or a
number (every job at it: a what-if). Draws come from their own `Random` per seed, one per job in
trace order, so base and head of a comparison draw the same share for the same job (common random
numbers) whatever else differs.
"""

from __future__ import annotations

import bisect
import csv
import random
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from gpuplat.catalog.utilization import PHILLY_GPU_UTIL, PHILLY_GPU_UTIL_SOURCE, PHILLY_GPU_UTIL_STEP
from gpuplat.input_files import MAX_JSON_TRACE_BYTES, InputInvalid, read_text
from gpuplat.simulate.job import MAX_ERRORS, Job
from gpuplat.simulate.prometheus import looks_like_prometheus, read_prometheus
from gpuplat.simulate.trace import TraceError

CDF_COLUMNS = ("cumulative_percent", "gpu_util_percent")


@dataclass(frozen=True)
class Distribution:
    """A busy-share distribution as its quantile function: (cumulative share, value) points,
    both non-decreasing, interpolated linearly between them."""

    source: str
    points: tuple[tuple[float, float], ...]

    def quantile(self, p: float) -> float:
        shares = [c for c, _ in self.points]
        i = bisect.bisect_left(shares, p)
        if i == 0:
            return self.points[0][1]
        if i == len(self.points):
            return self.points[-1][1]
        (c0, v0), (c1, v1) = self.points[i - 1], self.points[i]
        return v0 if c1 == c0 else v0 + (v1 - v0) * (p - c0) / (c1 - c0)

    @property
    def mean(self) -> float:
        pts = self.points
        if len(pts) == 1:
            return pts[0][1]
        area = sum((c1 - c0) * (v0 + v1) / 2 for (c0, v0), (c1, v1) in pairwise(pts))
        span = pts[-1][0] - pts[0][0]
        return area / span if span > 0 else pts[0][1]

    def draws(self, seed: int, jobs: tuple[Job, ...] | list[Job]) -> list[float]:
        """Each job's busy share: its own where the trace gives one, else a draw (one per job, in order)."""
        rng = random.Random(f"utilization:{seed}")
        out: list[float] = []
        for job in jobs:
            u = rng.random()  # drawn for every job, so one job's column does not shift the others' draws
            out.append(job.utilization if job.utilization is not None else self.quantile(u))
        return out


PHILLY = Distribution(
    PHILLY_GPU_UTIL_SOURCE, tuple((i * PHILLY_GPU_UTIL_STEP, v) for i, v in enumerate(PHILLY_GPU_UTIL))
)


def constant(value: float) -> Distribution:
    return Distribution(f"every job at {value:g}", ((0.0, value), (1.0, value)))


def _cdf(name: str, reader: csv.DictReader[str]) -> Distribution:
    problems: list[tuple[int, str]] = []
    points: list[tuple[float, float]] = []
    for row in reader:
        try:
            share, value = (float((row.get(k) or "").strip()) / 100 for k in CDF_COLUMNS)
            if not (0 <= share <= 1 and 0 <= value <= 1):
                raise ValueError("percentages must be within 0..100")
            if points and (share < points[-1][0] or value < points[-1][1]):
                raise ValueError("a CDF's rows must not decrease in either column")
            points.append((share, value))
        except ValueError as err:
            problems.append((reader.line_num, str(err).replace("could not convert string to float", "not a number")))
            if len(problems) >= MAX_ERRORS:
                break
    if not points and not problems:
        problems.append((1, "the CDF has no rows"))
    if problems:
        raise TraceError(name, problems)
    return Distribution(f"the CDF in {name}", tuple(points))


def _export(name: str, text: str) -> Distribution:
    _, jobs, problems = read_prometheus(text, name)
    if problems:
        raise TraceError(name, problems)
    values = sorted(j.utilization for j in jobs if j.utilization is not None)
    if not values:
        raise TraceError(name, [(1, "the export has no GPU utilisation of a pod")])
    n = len(values)
    points = tuple((i / (n - 1) if n > 1 else 0.0, v) for i, v in enumerate(values))
    return Distribution(f"{n:,} pods' mean GPU utilisation in {name}", points)


def load_distribution(spec: str) -> Distribution:
    """`--utilization`: a number in [0, 1], a CDF CSV or a Prometheus / DCGM export;
    InputUnreadable when unreadable, TraceError (with lines) on bad content."""
    try:
        value = float(spec)
    except ValueError:
        pass
    else:
        if not 0 <= value <= 1:
            raise TraceError("--utilization", [(1, f"{value:g} is not a busy share in [0, 1]")])
        return constant(value)
    try:  # read as a trace is (gpuplat/input_files.py): InputUnreadable is a usage error
        text = read_text(Path(spec), "utilisation CDF or export", MAX_JSON_TRACE_BYTES, spec)
        if looks_like_prometheus(text[:4096]):
            return _export(spec, text)
        reader = csv.DictReader(text.splitlines())
        if not set(CDF_COLUMNS) <= {h.strip() for h in reader.fieldnames or []}:
            raise TraceError(
                spec,
                [(1, f"a utilisation CDF needs the columns {', '.join(CDF_COLUMNS)} (or give a DCGM export)")],
                "GP033",
            )
        return _cdf(spec, reader)
    except InputInvalid as err:
        raise TraceError.of(err) from None
    except csv.Error as err:
        raise TraceError(spec, [(1, f"not a text file of a CDF or an export ({err})")], "GP033") from None
