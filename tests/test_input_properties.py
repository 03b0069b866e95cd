"""Property tests of the inputs beside the spec: traces (CSV, Prometheus text and JSON), account
facts and recordings, through the readers and the commands that read them.

The only acceptable outcomes are the input read (every value finite and in its range) or errors
positioned at a line of the file with a GP03x code; never another exception, an internal error,
or "the program failed". Derandomized like tests/test_properties.py; GPUPLAT_FUZZ_EXAMPLES
raises the count and draws fresh inputs; bench/fuzz.py --surface runs them by the 10^5.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuplat.cli import main
from gpuplat.compile import load_for_stack
from gpuplat.preflight.checks import preflight_problems
from gpuplat.preflight.facts import FactsError, load_facts
from gpuplat.simulate import TraceError, load_trace
from gpuplat.simulate.job import LATEST_UNIX_SECONDS, MAX_HORIZON_SECONDS
from gpuplat.verify.recording import RecordingInvalid, load_recording

EXAMPLES = int(os.environ.get("GPUPLAT_FUZZ_EXAMPLES", "150"))
PROPERTY_SETTINGS = settings(
    derandomize="GPUPLAT_FUZZ_EXAMPLES" not in os.environ,
    deadline=None,
    max_examples=EXAMPLES,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
# Through the CLI (a compile per example): fewer.
COMMAND_SETTINGS = settings(PROPERTY_SETTINGS, max_examples=max(EXAMPLES // 6, 1))
POSITIONED = re.compile(r"^(?P<file>.+?):(?P<line>[1-9]\d*):(?P<col>[1-9]\d*): error (?P<code>GP\d{3}) ")

# Values a careful user or a hostile pull request puts in a cell.
_NUMBERS = st.sampled_from(
    ["0", "1", "-1", "0.5", "8", "1e308", "-1e308", "1e12", "1e18", "-1e18", "inf", "-inf", "nan", "NaN",
     "1" + "0" * 400, "9" * 5000, "0x10", "1_000", "", " ", "1e-320", "3600", "86400", "31622400", "31622401"]
)  # fmt: skip
_DATES = st.sampled_from(
    ["2017-10-03 14:05", "2017-10-03T14:05:00+08:00", "9999-12-31", "0001-01-01", "2017-13-40", "yesterday"]
)
_CELL = st.one_of(_NUMBERS, _DATES, st.text(max_size=8), st.integers(-(10**20), 10**20).map(str))
_HEADERS = st.sampled_from(
    ["submit,duration,gpus", "submit,duration,gpus,fraction,tenant,priority,utilization",
     "timestamp,duration,num_gpus,cluster", "submit_time,duration,gpu_num,vc", "\ufeffsubmit,duration,gpus",
     "submit time,duration,gpus", "a,b", ""]
)  # fmt: skip


def _write(suffix: str, data: str | bytes) -> Path:
    handle, name = tempfile.mkstemp(suffix=suffix)
    with os.fdopen(handle, "wb") as out:
        out.write(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
    return Path(name)


def _assert_read_or_positioned(path: Path) -> None:
    try:
        trace = load_trace(path)
    except TraceError as err:
        assert err.problems and err.code in {"GP030", "GP031", "GP032", "GP033"}
        assert all(line >= 1 and message for line, message in err.problems)
        return
    for job in trace.jobs:
        assert math.isfinite(job.submit) and 0 <= job.submit <= MAX_HORIZON_SECONDS
        assert 0 < job.duration <= MAX_HORIZON_SECONDS and job.submit + job.duration <= MAX_HORIZON_SECONDS
        assert isinstance(job.gpus, int) and job.gpus >= 1 and 0 < job.fraction <= 1
    assert math.isfinite(trace.origin) and abs(trace.origin) <= LATEST_UNIX_SECONDS


@PROPERTY_SETTINGS
@given(header=_HEADERS, rows=st.lists(st.lists(_CELL, min_size=0, max_size=8), max_size=6))
def test_a_csv_trace_is_read_with_finite_values_or_refused_at_a_line(header: str, rows: list[list[str]]) -> None:
    path = _write(".csv", header + "\n" + "".join(",".join(row) + "\n" for row in rows))
    try:
        _assert_read_or_positioned(path)
    finally:
        path.unlink()


_UTIL = st.sampled_from(["50", "0", "100", "101", "-1", "nan", "inf", "1e400", "x"])
_STAMP = st.one_of(
    st.integers(0, 2 * 10**12).map(str),
    st.sampled_from(["1506816000000", "1506816060000", "1e18", "1" + "0" * 400, "1e400.0", "nan", "1.5", "-5"]),
)


@PROPERTY_SETTINGS
@given(samples=st.lists(st.tuples(st.sampled_from(["p", "q", ""]), _UTIL, st.one_of(st.none(), _STAMP)), max_size=8))
def test_a_prometheus_text_export_is_read_or_refused_at_a_line(samples: list[tuple[str, str, str | None]]) -> None:
    lines = [
        f'DCGM_FI_DEV_GPU_UTIL{{UUID="GPU-{i % 2}",pod="{pod}",namespace="ns"}} {value}'
        + (f" {stamp}" if stamp is not None else "")
        for i, (pod, value, stamp) in enumerate(samples)
    ]
    path = _write(".txt", "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization.\n" + "\n".join(lines) + "\n")
    try:
        _assert_read_or_positioned(path)
    finally:
        path.unlink()


_JSON_NUMBER = st.sampled_from(
    ["1506816000", "1506816000.5", "1e18", "1" + "0" * 400, "1e400", "NaN", "Infinity", "-1", "true", '"1"', "null"]
)


@PROPERTY_SETTINGS
@given(
    times=st.lists(_JSON_NUMBER, max_size=5),
    values=st.lists(st.sampled_from(['"50"', '"x"', "50", '"1e400"', "[]"]), max_size=5),
    wrap=st.integers(0, 3),
)
def test_a_prometheus_json_export_is_read_or_refused_at_a_line(times: list[str], values: list[str], wrap: int) -> None:
    pairs = ",".join(f"[{t}, {v}]" for t, v in zip(times, values, strict=False))
    series = f'{{"metric": {{"__name__": "DCGM_FI_DEV_GPU_UTIL", "UUID": "g", "pod": "p"}}, "values": [{pairs}]}}'
    text = f'{{"status": "success", "data": {{"resultType": "matrix", "result": [{series}]}}}}'
    text = "[" * wrap * 40 + text + "]" * wrap * 40 if wrap > 1 else text
    path = _write(".json", text)
    try:
        _assert_read_or_positioned(path)
    finally:
        path.unlink()


@PROPERTY_SETTINGS
@given(data=st.binary(max_size=300), cut=st.integers(0, 300))
def test_bytes_of_any_kind_are_a_trace_or_a_positioned_refusal(data: bytes, cut: int) -> None:
    path = _write(".csv", b"submit,duration,gpus\n0,60,1\n"[:cut] + data)
    try:
        _assert_read_or_positioned(path)
    finally:
        path.unlink()


# ---------------------------------------------------------------- account facts
_FACT_VALUES = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(-(10**25), 10**25), st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=6), st.sampled_from(["p5.48xlarge", "us-east-1a", "active", "1.33"]),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=10,
)  # fmt: skip
_FACT_KEYS = st.sampled_from(["region", "readAt", "zones", "offerings", "eksVersions", "capacityBlocks", "quotas"])


def _good_facts() -> dict[str, Any]:
    return {
        "region": "us-east-1", "readAt": "2026-12-03T12:00:00Z", "zones": {"us-east-1a": "use1-az4"},
        "offerings": {"p5.48xlarge": ["us-east-1a"]}, "eksVersions": ["1.33", "1.34"],
        "capacityBlocks": [{"id": "cr-1", "instanceType": "p5e.48xlarge", "zone": "us-east-1a", "instances": 4,
                            "state": "active", "tags": {}}],
        "quotas": {"ec2/L-417A185B": 2304},
    }  # fmt: skip


def _bad_number_text(text: str, choice: int) -> str:
    """Numbers JSON does not have, or past a double, put where the facts hold numbers."""
    token = ["NaN", "Infinity", "-Infinity", "1e400", "1" + "0" * 30, "2.5"][choice]
    return text.replace("2304", token) if choice % 2 else text.replace('"instances": 4', f'"instances": {token}')


@pytest.fixture(scope="module")
def prod() -> Any:
    return load_for_stack("prod")


@PROPERTY_SETTINGS
@given(
    changes=st.dictionaries(_FACT_KEYS, _FACT_VALUES, max_size=3),
    dropped=st.sets(_FACT_KEYS, max_size=2),
    bad_number=st.integers(-1, 5),
)
def test_account_facts_load_and_judge_or_are_positioned(
    prod: Any, changes: dict[str, Any], dropped: set[str], bad_number: int
) -> None:
    document = {k: v for k, v in {**_good_facts(), **changes}.items() if k not in dropped}
    text = json.dumps(document, indent=1)
    path = _write(".json", _bad_number_text(text, bad_number) if bad_number >= 0 else text)
    try:
        facts = load_facts(path)
    except FactsError as err:
        match = POSITIONED.match(str(err))
        assert match and match["file"] == str(path) and match["code"] in {"GP030", "GP031", "GP034"}, str(err)
        return
    finally:
        path.unlink()
    model, plan = prod
    problems = preflight_problems(model, plan, facts)  # what preflight does with them: sentences
    assert all(isinstance(p, str) and p for p in problems)


@COMMAND_SETTINGS
@given(changes=st.dictionaries(_FACT_KEYS, _FACT_VALUES, max_size=2), bad_number=st.integers(-1, 5))
def test_preflight_with_any_facts_exits_with_a_verdict_or_a_usage_sentence(
    capsys: pytest.CaptureFixture[str], changes: dict[str, Any], bad_number: int
) -> None:
    text = json.dumps({**_good_facts(), **changes}, indent=1)
    path = _write(".json", _bad_number_text(text, bad_number) if bad_number >= 0 else text)
    try:
        code = main(["preflight", "--stack", "prod", "--account-facts", str(path)])
    finally:
        path.unlink()
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err
    assert code in (0, 1) or (code == 2 and POSITIONED.match(err.removeprefix("gpuplat preflight: error: "))), err


# ---------------------------------------------------------------- recordings
@pytest.fixture(scope="module")
def dev_recording() -> dict[str, Any]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["preview", "--stack", "dev", "--format", "json"]) == 0
    recording: dict[str, Any] = json.loads(out.getvalue())
    return recording


def _mutate(document: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
    resources: list[dict[str, Any]] = document["resources"]
    for _ in range(data.draw(st.integers(1, 3))):
        index = data.draw(st.integers(0, len(resources) - 1))
        kind = data.draw(st.sampled_from(["urn", "copy", "type", "inputs", "key", "stack", "drop"]))
        resource = resources[index]
        if kind == "urn":
            resource["urn"] = data.draw(st.one_of(st.just(None), _FACT_VALUES, st.text(max_size=20)))
        elif kind == "copy":
            resources.append(json.loads(json.dumps(resource)))
        elif kind == "type":
            resource["type"] = data.draw(_FACT_VALUES)
        elif kind == "inputs":
            resource["inputs"] = data.draw(st.one_of(_FACT_VALUES, st.dictionaries(st.text(max_size=5), _FACT_VALUES)))
        elif kind == "key" and isinstance(resource.get("inputs"), dict) and resource["inputs"]:
            key = data.draw(st.sampled_from(sorted(resource["inputs"])))
            resource["inputs"][key] = data.draw(_FACT_VALUES)
        elif kind == "stack" and isinstance(resource.get("urn"), str):
            resource["urn"] = resource["urn"].replace("urn:pulumi:dev::", "urn:pulumi:prod::")
        elif kind == "drop":
            resources.pop(index)
            if not resources:
                break
    return document


@COMMAND_SETTINGS
@given(data=st.data())
def test_verify_of_any_edited_recording_is_a_verdict_or_positioned(
    dev_recording: dict[str, Any], capsys: pytest.CaptureFixture[str], data: st.DataObject
) -> None:
    document = _mutate(json.loads(json.dumps(dev_recording)), data)
    path = _write(".json", json.dumps(document, indent=1))
    try:
        try:
            load_recording(str(path), "dev")
        except RecordingInvalid as err:
            assert err.diagnostic.line >= 1 and err.diagnostic.code in {"GP031", "GP035", "GP036"}
        code = main(["verify", "--stack", "dev", "--recording", str(path)])
    finally:
        path.unlink()
    err = capsys.readouterr().err
    assert code in (0, 1) and "internal error" not in err and "the program failed" not in err, err
