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
rows are. Every value is checked for its type, finiteness and range: GPUs whole, times within
LATEST_UNIX_SECONDS, and the whole trace within MAX_HORIZON_DAYS of its first submission (job.py).
The file is read through gpuplat/input_files.py: a regular file within MAX_TRACE_BYTES, text
streamed a line at a time, binary refused at its first block.
"""

from __future__ import annotations

import csv
import itertools
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from gpuplat.diagnostics import Diagnostic, Level
from gpuplat.input_files import MAX_JSON_TRACE_BYTES, MAX_TRACE_BYTES, InputInvalid, read_text, text_lines
from gpuplat.simulate.job import (
    LATEST_UNIX_SECONDS,
    MAX_ERRORS,
    MAX_HORIZON_DAYS,
    MAX_HORIZON_SECONDS,
    MAX_JOB_GPUS,
    Job,
)
from gpuplat.simulate.prometheus import is_json_export, looks_like_prometheus, read_prometheus

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
    """Bad content, with lines. GP032 a value, GP033 the file's shape, GP030 / GP031 the file
    itself (gpuplat/input_codes.py)."""

    def __init__(self, path: str, problems: list[tuple[int, str]], code: str = "GP032", col: int = 1) -> None:
        super().__init__(f"{path}: {len(problems)} bad row(s)")
        self.path = path
        self.problems = problems  # (line, message)
        self.code = code
        self.col = col

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return [Diagnostic(self.code, Level.ERROR, m, "$", self.path, line, self.col) for line, m in self.problems]

    @classmethod
    def of(cls, err: InputInvalid) -> TraceError:
        d = err.diagnostic
        return cls(d.file, [(d.line, d.message)], d.code, d.col)


Row = dict[str, str]
Parse = Callable[[Row], tuple[float, float, int, float, str, str | None, float | None]]


def parse_time(text: str, key: str = "time") -> float:
    """Seconds, or an ISO date (UTC when naive); ValueError, naming `key`, for anything else or a
    time past LATEST_UNIX_SECONDS either way."""
    text = text.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"{key} {_shown(text)} is neither seconds nor an ISO date (2017-10-03 14:05)") from None
        # A naive time is UTC: the host's time zone (and its DST) must not move a replay.
        seconds = (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()
    if not math.isfinite(seconds) or abs(seconds) > LATEST_UNIX_SECONDS:
        raise ValueError(f"{key} {_shown(text)} is not a time within {LATEST_UNIX_SECONDS:g} seconds (the year 2286)")
    return seconds


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:30] + "...")


def _number(row: Row, key: str) -> float:
    value = (row.get(key) or "").strip()
    if not value:
        raise ValueError(f"{key} is empty")
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"{key} {_shown(value)} is not a number") from None
    if not math.isfinite(number):
        raise ValueError(f"{key} {_shown(value)} is not a finite number")
    return number


def _duration(row: Row, key: str = "duration") -> float:
    seconds = _number(row, key)
    if not 0 <= seconds <= MAX_HORIZON_SECONDS:
        raise ValueError(f"{key} {seconds:g} s is not within 0 and {MAX_HORIZON_DAYS} days (a replay's horizon)")
    return seconds


def _gpus(row: Row, key: str) -> int:
    count = _number(row, key)
    if count != int(count):
        raise ValueError(f"{key} {count:g} is not a whole number of GPUs (a share of one GPU is the fraction column)")
    if not 0 <= count <= MAX_JOB_GPUS:
        raise ValueError(f"{key} {count:g} is not within 0 and {MAX_JOB_GPUS:,}")
    return int(count)


def _optional(row: Row, key: str) -> str | None:
    value = (row.get(key) or "").strip()
    return value or None


def _canonical(row: Row) -> tuple[float, float, int, float, str, str | None, float | None]:
    fraction = _number(row, "fraction") if _optional(row, "fraction") else 1.0
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction {fraction} is not in (0, 1]")
    priority = _optional(row, "priority")
    if priority is not None and priority not in PRIORITIES:
        raise ValueError(f"priority {priority!r} is not one of {', '.join(PRIORITIES)}")
    utilization = _number(row, "utilization") if _optional(row, "utilization") else None
    if utilization is not None and not 0 <= utilization <= 1:
        raise ValueError(f"utilization {utilization} is not in [0, 1]")
    gpus = _gpus(row, "gpus")
    if fraction < 1 and gpus != 1:
        raise ValueError("a fraction of a GPU needs gpus 1")
    tenant = _optional(row, "tenant") or "default"
    return parse_time(row["submit"] or "", "submit"), _duration(row), gpus, fraction, tenant, priority, utilization


def _philly(row: Row) -> tuple[float, float, int, float, str, str | None, float | None]:
    tenant = _optional(row, "cluster") or "default"
    return (
        parse_time(row["timestamp"] or "", "timestamp"),
        _duration(row),
        _gpus(row, "num_gpus"),
        1.0,
        tenant,
        None,
        None,
    )


def _helios(row: Row) -> tuple[float, float, int, float, str, str | None, float | None]:
    tenant = _optional(row, "vc") or "default"
    return (
        parse_time(row["submit_time"] or "", "submit_time"),
        _duration(row),
        _gpus(row, "gpu_num"),
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


Parsed = Iterator[tuple[int, Job | None]]  # (line, job; None for a row of no GPU job)


def _rows(reader: csv.DictReader[str], parse: Parse, problems: list[tuple[int, str]]) -> Parsed:
    for row in reader:
        line = reader.line_num
        row.pop(None, None)  # type: ignore[call-overload]  # fields past the header's: ignored, as extra columns are
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
        job = None if gpus == 0 or duration == 0 else Job(submit, duration, gpus, fraction, tenant, priority, util)
        yield line, job


def _read_csv(name: str, lines: Iterable[str]) -> tuple[str, list[tuple[int, Job | None]]]:
    reader = csv.DictReader(lines)
    header = reader.fieldnames or []
    found = _shape(list(header))
    if found is None:
        wanted = "; ".join(f"{k}: {', '.join(sorted(v[0]))}" for k, v in SHAPES.items())
        given = ", ".join(repr(h[:40]) for h in header[:12]) or "none"
        raise TraceError(
            name,
            [
                (
                    1,
                    f"unknown trace shape: the header's columns are {given}; a trace needs the columns of one of "
                    f"{wanted}; or it is a Prometheus export",
                )
            ],
            "GP033",
        )
    shape, parse = found
    problems: list[tuple[int, str]] = []
    parsed = list(_rows(reader, parse, problems))
    if problems:
        raise TraceError(name, problems)
    return shape, parsed


def _read(name: str, path: str | Path) -> tuple[str, list[tuple[int, Job | None]]]:
    lines = text_lines(path, "trace", MAX_TRACE_BYTES, name)
    head: list[str] = []
    for line in lines:  # the first lines, enough to tell the forms apart (a JSON document's "{" is alone)
        head.append(line)
        if sum(map(len, head)) >= 4096:
            break
    if not looks_like_prometheus("".join(head)):
        return _read_csv(name, itertools.chain(head, lines))
    if is_json_export("".join(head)):
        lines.close()  # the file is read whole below; this handle closed now
        text = read_text(path, "Prometheus export", MAX_JSON_TRACE_BYTES, name)
        shape, exported, problems = read_prometheus(text, name)
    else:
        shape, exported, problems = read_prometheus(itertools.chain(head, lines), name)
    if problems:
        raise TraceError(name, problems)
    return shape, [(1, job) for job in exported]  # an export's jobs come from many lines


def _within_horizon(name: str, jobs: list[tuple[int, Job]]) -> None:
    """Every job submitted and finished within MAX_HORIZON_DAYS of the first submission."""
    first_line, first = min(jobs, key=lambda lj: lj[1].submit)
    line, last = max(jobs, key=lambda lj: lj[1].submit + lj[1].duration)
    span = last.submit + last.duration - first.submit
    if span > MAX_HORIZON_SECONDS:
        where = f"the job at line {first_line}" if first_line > 1 else "the first job"
        message = (
            f"this job ends {span / 86400:,.0f} days after {where} is submitted; a replay covers at most "
            f"{MAX_HORIZON_DAYS} days (docs/simulate.md): split the trace, or correct the job's time"
        )
        raise TraceError(name, [(line, message)])


def load_trace(path: str | Path) -> Trace:
    """The trace at `path`; InputUnreadable when it cannot be read, TraceError on bad content."""
    name = str(path)
    try:
        shape, parsed = _read(name, path)
    except InputInvalid as err:
        raise TraceError.of(err) from None
    except csv.Error as err:
        raise TraceError(name, [(1, f"not a CSV trace ({err})")], "GP033") from None
    jobs = [(line, j) for line, j in parsed if j is not None]
    if not jobs:
        raise TraceError(name, [(1, "the trace has no GPU job (every row has zero GPUs or zero duration)")], "GP033")
    _within_horizon(name, jobs)
    origin = min(j.submit for _, j in jobs)
    ordered = sorted((j for _, j in jobs), key=lambda j: j.submit)
    shifted = tuple(
        Job(j.submit - origin, j.duration, j.gpus, j.fraction, j.tenant, j.priority, j.utilization) for j in ordered
    )
    return Trace(name, shape, shifted, skipped=len(parsed) - len(jobs), origin=origin)
