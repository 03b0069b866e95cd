"""A Prometheus / DCGM export of a real cluster as a job trace: GPU utilisation over time, read
back into the jobs that held the GPUs.

Two forms, told apart by their first character:
- a range-query response (`/api/v1/query_range`, JSON `{"status": "success", "data":
  {"resultType": "matrix", "result": [{"metric": {...}, "values": [[t, "v"], ...]}]}}`), for
  example of `DCGM_FI_DEV_GPU_UTIL{pod!=""}` over the days to replay;
- text, one sample a line with its timestamp: the exposition format (`name{labels} value ms`,
  successive DCGM exporter scrapes stamped with their time) or `promtool tsdb dump`'s lines
  (`{__name__="...", labels} value ms`).
  An integer timestamp is milliseconds (Prometheus), a decimal one seconds (OpenMetrics).

Series read: DCGM_FI_DEV_GPU_UTIL, and DCGM_FI_PROF_GR_ENGINE_ACTIVE where a device has no
GPU_UTIL (MIG devices report only that), scaled as gpuplat/scaling.py records them; every other
series is ignored. A series is one device: `UUID` (else `Hostname` + `gpu`), plus `GPU_I_ID` on
a MIG device. The exporter labels a device held by a pod with `pod` and `namespace`
(`exported_pod` / `exported_namespace` where the scrape renamed them); a device without is
idle and is no job.

A job is one pod's run: the pod's samples, split where none came for more than GAP_STEPS
steps (a later pod of the same name). The step is the smallest interval between two samples
of one series (the query's step or the scrape interval). Submission is the run's first sample:
a metric shows when work ran, never how long it waited before, so a replay of an export starts
every job without the queueing the real cluster had. Duration: last sample - first + one step.
GPUs: the distinct devices the run held; a pod on MIG devices is one job of a fraction of a GPU
(its slices out of MIG_SLICES). Tenant: the namespace. Utilisation: the mean of its samples.
Not recognised: pods sharing one GPU by time-slicing or MPS (each is read as holding it whole)
and the pods of one multi-pod job (each is a job).
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from contextlib import suppress
from operator import sub
from typing import Any, cast

from gpuplat.input_files import locate, parse_json
from gpuplat.scaling import DCGM_METRICS
from gpuplat.simulate.job import LATEST_UNIX_SECONDS, MAX_ERRORS, Job

GAP_STEPS = 2
MIG_SLICES = 7  # compute slices of an A100 / H100 / H200 / B200 (A30: 4, named in modelName)
_SCALE = {m.series: m.scale for m in DCGM_METRICS if m.key in ("gpu_util", "engine_active")}
_PREFERRED = "DCGM_FI_DEV_GPU_UTIL"
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_SAMPLE = re.compile(
    r"(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)?(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)(?:\s+(?P<ts>\S+))?\s*$"
)
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')

Problems = list[tuple[int, str]]


class _Series:
    """One device's samples of one metric: times and utilisations (0..1), in two lists because
    an export holds millions of samples and the reader's passes over them are list-wide."""

    __slots__ = ("times", "utils")

    def __init__(self) -> None:
        self.times: list[float] = []
        self.utils: list[float] = []


# (namespace, pod) -> device -> metric -> samples
Samples = dict[tuple[str, str], dict[str, dict[str, _Series]]]


class _Full(Exception):
    """MAX_ERRORS problems found: stop reading."""


def _is_json(head: str) -> bool:
    return re.match(r'\{\s*["}]', head.lstrip()) is not None  # promtool's lines start `{__name__=`


def looks_like_prometheus(head: str) -> bool:
    """A JSON document, or sample lines (a `#` comment, `name{`, `name value`, `{__name__=`), not a CSV header."""
    first = head.lstrip()
    if first.startswith(("{", "#")):
        return True
    line = first.split("\n", 1)[0]
    if "," in line and "{" not in line:
        return False  # a CSV header, perhaps with spaces in its column names
    match = _NAME.match(first)
    return match is not None and first[match.end() : match.end() + 1] in ("{", " ", "\t")


def _device(labels: dict[str, str]) -> str | None:
    base = labels.get("UUID") or (
        f"{labels['Hostname']}/{labels['gpu']}" if "Hostname" in labels and "gpu" in labels else None
    )
    if base is None:
        return None
    mig = labels.get("GPU_I_ID")
    return f"{base}/mig{mig}" if mig else base


def _mig_fraction(labels: dict[str, str]) -> float | None:
    profile = labels.get("GPU_I_PROFILE")
    if not profile or not labels.get("GPU_I_ID"):
        return None
    slices = re.match(r"(\d+)g\.", profile)
    total = 4 if "A30" in labels.get("modelName", "") else MIG_SLICES
    return int(slices.group(1)) / total if slices else None


class _Reader:
    def __init__(self) -> None:
        self.samples: Samples = {}
        self.fractions: dict[str, float] = {}  # MIG device -> its share of a GPU
        self.problems: Problems = []
        self.series = 0

    def problem(self, line: int, message: str) -> None:
        self.problems.append((line, message))
        if len(self.problems) >= MAX_ERRORS:
            raise _Full

    def add_series(self, labels: dict[str, str]) -> _Series | str | None:
        """Where the samples of one series go; None for a series that is no job's (ignored); a
        message for a bad one."""
        name = labels.get("__name__", "")
        if name not in _SCALE:
            return None
        pod = labels.get("pod") or labels.get("exported_pod")
        if not pod:
            return None  # an idle device
        device = _device(labels)
        if device is None:
            return f"{name} series of pod {pod} names no device (UUID, or Hostname and gpu)"
        fraction = _mig_fraction(labels)
        if fraction is not None:
            self.fractions[device] = fraction
        namespace = labels.get("namespace") or labels.get("exported_namespace") or "default"
        self.series += 1
        return self.samples.setdefault((namespace, pod), {}).setdefault(device, {}).setdefault(name, _Series())

    @staticmethod
    def sample(into: _Series, name: str, t: float, value: str) -> str | None:
        """Adds one sample; a message when it is no utilisation at a time."""
        try:
            number = float(value)
        except ValueError:
            return f"sample value {value!r} is not a number"
        util = number * _SCALE[name]
        if not math.isfinite(t) or not 0 < t <= LATEST_UNIX_SECONDS:
            return f"sample time {t:g} is not unix seconds up to {LATEST_UNIX_SECONDS:g} (the year 2286)"
        if not math.isfinite(util) or not -1e-9 <= util <= 1 + 1e-9:
            return f"{name} sample {value} at {t} is not a utilisation (0..{1 / _SCALE[name]:g})"
        into.times.append(t)
        into.utils.append(min(max(util, 0.0), 1.0))
        return None


# ---------------------------------------------------------------- the range-query JSON
def _whole_series(into: _Series, values: list[Any], scale: float) -> bool:
    """Adds a series' samples list-wide when every one is good (the common case, and several
    times faster than sample by sample); False, adding nothing, when the slow path must find and
    place the bad ones."""
    try:
        times = [t + 0.0 for t, _ in values]  # TypeError for a time that is no number
        utils = [float(v) * scale for _, v in values]
    except (TypeError, ValueError, OverflowError):
        return False
    if not times:
        return True
    # JSON true / false pass `+ 0.0` as 1.0 / 0.0: such times go the slow way, which refuses them.
    if min(times) <= 1.0 or max(times) > LATEST_UNIX_SECONDS:
        return False
    if not (math.isfinite(math.fsum(times)) and math.isfinite(math.fsum(utils))):
        return False
    low, high = min(utils), max(utils)
    if not -1e-9 <= low <= high <= 1 + 1e-9:
        return False
    into.times.extend(times)
    into.utils.extend(utils if low >= 0.0 and high <= 1.0 else [min(max(u, 0.0), 1.0) for u in utils])
    return True


def _read_json(text: str, reader: _Reader, file: str) -> None:
    doc: Any = parse_json(text, file, "Prometheus export")  # InputInvalid past the JSON limits

    def where(*path: str | int) -> int:  # positions only on the error path
        return locate(text, path)

    if not isinstance(doc, dict):
        reader.problem(1, "a Prometheus export is a JSON object (a query_range response)")
        return
    top = cast("dict[str, Any]", doc)
    if top.get("status") != "success":
        reader.problem(where("status"), f"the query did not succeed: {top.get('error') or top.get('status')!r}")
        return
    data: Any = top.get("data")
    kind: Any = cast("dict[str, Any]", data).get("resultType") if isinstance(data, dict) else None
    result: Any = cast("dict[str, Any]", data).get("result") if isinstance(data, dict) else None
    if kind != "matrix" or not isinstance(result, list):
        reader.problem(
            where("data", "resultType"),
            f"resultType {kind!r}: a trace needs series over time, a range query's matrix",
        )
        return
    for n, series in enumerate(cast("list[Any]", result)):
        entry = cast("dict[str, Any]", series) if isinstance(series, dict) else {}
        metric: Any = entry.get("metric")
        values: Any = entry.get("values")
        if not isinstance(metric, dict) or not isinstance(values, list):
            reader.problem(where("data", "result", n), "a series needs a metric object and a values list")
            continue
        labels = {str(k): str(v) for k, v in cast("dict[Any, Any]", metric).items()}
        into = reader.add_series(labels)
        if isinstance(into, str):
            reader.problem(where("data", "result", n, "metric"), into)
        if not isinstance(into, _Series):
            continue
        name = labels["__name__"]
        if _whole_series(into, cast("list[Any]", values), _SCALE[name]):
            continue
        for k, pair in enumerate(cast("list[Any]", values)):
            if not (isinstance(pair, list) and len(cast("list[Any]", pair)) == 2):
                reader.problem(where("data", "result", n, "values", k), 'a sample is [unix seconds, "value"]')
                continue
            t, value = cast("list[Any]", pair)
            if not isinstance(t, int | float) or isinstance(t, bool):
                reader.problem(where("data", "result", n, "values", k, 0), f"time {t!r} is not unix seconds")
            elif (bad := reader.sample(into, name, float(t), str(value))) is not None:
                reader.problem(where("data", "result", n, "values", k, 1), bad)


# ---------------------------------------------------------------- the exposition text
def _labels(text: str) -> dict[str, str] | None:
    out: dict[str, str] = {}
    at = 0
    while at < len(text.rstrip()):
        match = _LABEL.match(text, at)
        if match is None:
            return None
        out[match.group(1)] = match.group(2).replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
        at = match.end()
    return out


def _read_text(lines: Iterable[str], reader: _Reader) -> None:
    for line_no, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        labels = _labels(match.group("labels") or "") if match else None
        if match is not None and labels is not None and match.group("name"):
            labels["__name__"] = match.group("name")
        if match is None or labels is None or not labels.get("__name__"):
            reader.problem(line_no, 'not a sample line (name{label="value",...} value timestamp)')
            continue
        into = reader.add_series(labels)
        if isinstance(into, str):
            reader.problem(line_no, into)
        if not isinstance(into, _Series):
            continue
        stamp = match.group("ts")
        if stamp is None:
            reader.problem(line_no, "a sample without a timestamp is one instant, not a trace over time")
            continue
        try:
            if len(stamp) > 30:
                raise ValueError(stamp)  # no time has 30 digits; Python converts long ones slowly
            t = float(stamp) if "." in stamp else int(stamp) / 1000
        except (ValueError, OverflowError):
            reader.problem(line_no, f"timestamp {stamp[:40]!r} is not a time (milliseconds, or seconds with a dot)")
            continue
        bad = reader.sample(into, labels["__name__"], t, match.group("value"))
        if bad is not None:
            reader.problem(line_no, bad)


# ---------------------------------------------------------------- samples -> jobs
def _step(samples: Samples) -> float | None:
    step = math.inf
    for devices in samples.values():
        for metrics in devices.values():
            for series in metrics.values():
                times = series.times
                if times != sorted(times):  # scrapes concatenated out of order
                    pairs = sorted(zip(times, series.utils, strict=True))
                    series.times, series.utils = [t for t, _ in pairs], [u for _, u in pairs]
                    times = series.times
                gaps = set(map(sub, times[1:], times[:-1]))  # a handful of distinct values: the step, gaps
                step = min(step, min((g for g in gaps if g > 0), default=math.inf))
    return step if math.isfinite(step) else None


def _runs(times: list[float], gap: float) -> Iterator[tuple[float, float]]:
    start = prev = times[0]
    for t in times[1:]:
        if t - prev > gap:
            yield start, prev
            start = t
        prev = t
    yield start, prev


def _jobs(samples: Samples, fractions: dict[str, float], step: float) -> list[Job]:
    jobs: list[Job] = []
    for (namespace, _pod), devices in sorted(samples.items()):
        # Per device the utilisation metric it has: GPU_UTIL where reported, else the engine's.
        chosen = {d: m.get(_PREFERRED) or next(iter(m.values())) for d, m in devices.items()}
        every = set[float]().union(*(series.times for series in chosen.values()))
        times = sorted(every)
        if not times:
            continue
        runs = list(_runs(times, GAP_STEPS * step))
        starts = [a for a, _ in runs]
        held: list[set[str]] = [set() for _ in runs]
        total = [0.0] * len(runs)
        count = [0] * len(runs)
        for device, series in chosen.items():
            if not series.times:
                continue
            first, last = (bisect_right(starts, series.times[i]) - 1 for i in (0, -1))
            if first == last:  # the whole series in one run: summed at once
                held[first].add(device)
                total[first] += math.fsum(series.utils)
                count[first] += len(series.utils)
                continue
            for t, util in zip(series.times, series.utils, strict=True):
                k = bisect_right(starts, t) - 1
                held[k].add(device)
                total[k] += util
                count[k] += 1
        for k, (a, b) in enumerate(runs):
            mig = [fractions[d] for d in held[k] if d in fractions]
            gpus, fraction = (1, min(1.0, sum(mig))) if mig else (len(held[k]), 1.0)
            jobs.append(Job(a, b - a + step, gpus, fraction, namespace, None, total[k] / count[k]))
    return jobs


def is_json_export(head: str) -> bool:
    return _is_json(head)


def read_prometheus(text: str | Iterable[str], file: str = "<export>") -> tuple[str, list[Job], Problems]:
    """(shape, jobs, problems) of an export: the whole text, or its lines as they are read;
    problems are (line, message), jobs in no order. InputInvalid for JSON past the limits."""
    reader = _Reader()
    whole = text if isinstance(text, str) else None
    shape = "prometheus-json" if whole is not None and _is_json(whole) else "prometheus-text"
    with suppress(_Full):
        if whole is not None and shape == "prometheus-json":
            _read_json(whole, reader, file)
        else:
            _read_text(whole.splitlines() if whole is not None else text, reader)
    if reader.problems:
        return shape, [], reader.problems
    if not reader.series:
        names = " or ".join(sorted(_SCALE))
        return shape, [], [(1, f"no {names} series of a pod (labels pod / exported_pod): no GPU job to replay")]
    step = _step(reader.samples)
    if step is None:
        return shape, [], [(1, "every series has one sample: the export's step (and so any duration) is unknown")]
    return shape, _jobs(reader.samples, reader.fractions, step), []
