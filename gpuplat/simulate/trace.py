"""Job traces: the canonical CSV, Philly's and Helios' shapes, read into one list of jobs.

Canonical CSV (header required, extra columns ignored):
`submit` (seconds from any origin), `duration` (s), `gpus` (whole GPUs, >= 1), and optional
`fraction` (of one GPU, 0 < f <= 1, for a one-GPU job on a shared pool), `tenant`,
`priority` (low | normal | high | critical), `utilization` (0..1, the job's GPU busy share).
Philly (`timestamp,duration,num_gpus,...,cluster`): timestamp as submission, cluster = tenant.
Helios (`...,vc,...,gpu_num,...,submit_time,...,duration`): vc = tenant.
A Prometheus / DCGM export (range-query JSON, or exposition text with timestamps) is read by
prometheus.py into the same jobs. Times become seconds after the earliest submission (`origin`,
in the trace's own clock, places other inputs such as Capacity Block windows on the replay's).
Every bad row is reported with its line (TraceError), never skipped; a job of zero GPUs or
zero duration is no GPU job and is counted as such (`skipped`), as the traces' own CPU-only
rows are.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from gpuplat.simulate.job import MAX_ERRORS, Job
from gpuplat.simulate.prometheus import looks_like_prometheus, read_prometheus

__all__ = ["MAX_ERRORS", "Job", "Trace", "TraceError", "load_trace", "parse_time"]

PRIORITIES = ("low", "normal", "high", "critical")


@dataclass(frozen=True)
class Trace:
    path: str
    shape: str
    jobs: tuple[Job, ...]  # ordered by submission (stable: ties keep the file's order)
    skipped: int  # rows without GPUs or duration
    origin: float = 0.0  # the first submission in the trace's clock (unix seconds for dates)


class TraceError(Exception):
    def __init__(self, path: str, problems: list[tuple[int, str]]) -> None:
        super().__init__(f"{path}: {len(problems)} bad row(s)")
        self.path = path
        self.problems = problems  # (line, message)


Row = dict[str, str]
Parse = Callable[[Row], tuple[float, float, int, float, str, str | None, float | None]]


def parse_time(text: str) -> float:
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        when = datetime.fromisoformat(text)
    # A naive time is UTC: the host's time zone (and its DST) must not move a replay.
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def _number(row: Row, key: str) -> float:
    value = (row.get(key) or "").strip()
    if not value:
        raise ValueError(f"{key} is empty")
    return float(value)


def _optional(row: Row, key: str) -> str | None:
    value = (row.get(key) or "").strip()
    return value or None


def _canonical(row: Row) -> tuple[float, float, int, float, str, str | None, float | None]:
    fraction = float(_optional(row, "fraction") or 1.0)
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction {fraction} is not in (0, 1]")
    priority = _optional(row, "priority")
    if priority is not None and priority not in PRIORITIES:
        raise ValueError(f"priority {priority!r} is not one of {', '.join(PRIORITIES)}")
    util = _optional(row, "utilization")
    utilization = float(util) if util is not None else None
    if utilization is not None and not 0 <= utilization <= 1:
        raise ValueError(f"utilization {utilization} is not in [0, 1]")
    gpus = int(_number(row, "gpus"))
    if fraction < 1 and gpus != 1:
        raise ValueError("a fraction of a GPU needs gpus 1")
    tenant = _optional(row, "tenant") or "default"
    return parse_time(row["submit"]), _number(row, "duration"), gpus, fraction, tenant, priority, utilization


def _philly(row: Row) -> tuple[float, float, int, float, str, str | None, float | None]:
    tenant = _optional(row, "cluster") or "default"
    return (
        parse_time(row["timestamp"]),
        _number(row, "duration"),
        int(_number(row, "num_gpus")),
        1.0,
        tenant,
        None,
        None,
    )


def _helios(row: Row) -> tuple[float, float, int, float, str, str | None, float | None]:
    tenant = _optional(row, "vc") or "default"
    return (
        parse_time(row["submit_time"]),
        _number(row, "duration"),
        int(_number(row, "gpu_num")),
        1.0,
        tenant,
        None,
        None,
    )


SHAPES: dict[str, tuple[frozenset[str], Parse]] = {
    "canonical": (frozenset({"submit", "duration", "gpus"}), _canonical),
    "philly": (frozenset({"timestamp", "duration", "num_gpus", "cluster"}), _philly),
    "helios": (frozenset({"submit_time", "duration", "gpu_num", "vc"}), _helios),
}


def _shape(header: list[str]) -> tuple[str, Parse] | None:
    columns = {h.strip() for h in header}
    for name, (needed, parse) in SHAPES.items():
        if needed <= columns:
            return name, parse
    return None


def _rows(reader: csv.DictReader[str], parse: Parse, problems: list[tuple[int, str]]) -> Iterator[Job | None]:
    for row in reader:
        line = reader.line_num
        if not any((v or "").strip() for v in row.values()):
            continue  # a blank line
        try:
            submit, duration, gpus, fraction, tenant, priority, util = parse(row)
            if duration < 0 or gpus < 0:
                raise ValueError("duration and gpus must not be negative")
        except (ValueError, KeyError, TypeError) as err:
            problems.append((line, str(err)))
            if len(problems) >= MAX_ERRORS:
                return
            continue
        yield None if gpus == 0 or duration == 0 else Job(submit, duration, gpus, fraction, tenant, priority, util)


def _read_csv(name: str, handle: TextIO) -> tuple[str, list[Job | None]]:
    reader = csv.DictReader(handle)
    header = reader.fieldnames or []
    found = _shape(list(header))
    if found is None:
        wanted = "; ".join(f"{k}: {', '.join(sorted(v[0]))}" for k, v in SHAPES.items())
        raise TraceError(
            name,
            [(1, f"unknown trace shape (header needs the columns of one of {wanted}; or a Prometheus export)")],
        )
    shape, parse = found
    problems: list[tuple[int, str]] = []
    parsed = list(_rows(reader, parse, problems))
    if problems:
        raise TraceError(name, problems)
    return shape, parsed


def load_trace(path: str | Path) -> Trace:
    """The trace at `path`; OSError when unreadable, TraceError on bad content."""
    name = str(path)
    with open(path, newline="", encoding="utf-8", errors="strict") as handle:
        try:
            if looks_like_prometheus(handle.read(4096)):
                handle.seek(0)
                shape, exported, problems = read_prometheus(handle.read())
                if problems:
                    raise TraceError(name, problems)
                parsed: list[Job | None] = list(exported)
            else:
                handle.seek(0)
                shape, parsed = _read_csv(name, handle)
        except (UnicodeDecodeError, csv.Error) as err:
            raise TraceError(name, [(1, f"not a text file of a trace ({err})")]) from None
    jobs = [j for j in parsed if j is not None]
    if not jobs:
        raise TraceError(name, [(1, "the trace has no GPU job")])
    origin = min(j.submit for j in jobs)
    ordered = sorted(jobs, key=lambda j: j.submit)
    shifted = tuple(
        Job(j.submit - origin, j.duration, j.gpus, j.fraction, j.tenant, j.priority, j.utilization) for j in ordered
    )
    return Trace(name, shape, shifted, skipped=len(parsed) - len(jobs), origin=origin)
