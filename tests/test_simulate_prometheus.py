"""`gpuplat simulate` on a Prometheus / DCGM export: the project's own small exports in
tests/fixtures/traces/ (the same series as a range-query response and as `promtool tsdb dump`
lines), read back into jobs, replayed, and refused with the line of what is wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuplat.compile import load_for_stack
from gpuplat.simulate import Options, TraceError, load_trace, simulate

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "traces"
RANGE, DUMP = FIXTURES / "dcgm-range.json", FIXTURES / "dcgm-dump.txt"
T0 = 1700000000


@pytest.mark.parametrize("path", [RANGE, DUMP], ids=["range-query", "tsdb-dump"])
def test_an_export_becomes_the_jobs_that_held_the_gpus(path: Path) -> None:
    trace = load_trace(path)
    assert trace.origin == T0
    assert [(j.submit, j.duration, j.gpus, j.tenant) for j in trace.jobs] == [
        (0.0, 300.0, 2, "research"),  # two GPUs, five samples 60 s apart: 4 intervals + one step
        (60.0, 240.0, 1, "product"),  # the MIG device
        (3600.0, 180.0, 1, "research"),  # the same pod name an hour later: another run
    ]
    first, mig, again = trace.jobs
    # GPU_UTIL (percent) is read where a GPU reports it, not the engine metric beside it (0.1).
    assert first.utilization == pytest.approx((80 + 90 + 100 + 90 + 80 + 70 + 80 + 90 + 80 + 70) / 1000)
    assert (mig.fraction, mig.utilization) == (pytest.approx(1 / 7), 0.25)  # 1g.10gb of 7 slices
    assert (first.fraction, again.utilization) == (1.0, 0.5)


def test_both_forms_agree_and_the_idle_gpu_is_no_job() -> None:
    assert load_trace(RANGE).jobs == load_trace(DUMP).jobs
    doc = json.loads(RANGE.read_text())
    idle = [s for s in doc["data"]["result"] if "pod" not in s["metric"]]
    assert len(idle) == 1 and len(load_trace(RANGE).jobs) == 3


def test_an_export_replays_on_the_platform() -> None:
    model, plan = load_for_stack("prod")
    trace = load_trace(RANGE)
    # partners may use only `infer`, a MIG pool: the serving pod's 1g.10gb is one of its seven units.
    result = simulate(model, plan, trace, Options(tenant_map={"research": "research", "product": "partners"}))
    assert result.jobs == 3 and not result.unplaceable
    assert sum(w.jobs for w in result.waits) == 3
    # Busy GPU-hours are the export's own utilisation over the jobs' GPU-time.
    busy = sum(j.duration * j.gpus * j.fraction * (j.utilization or 0) for j in trace.jobs) / 3600
    assert result.total("busy_gpu_h") == pytest.approx(busy, rel=0.05)


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), start=1) if needle in line)


def test_bad_range_query_values_are_reported_at_their_lines(tmp_path: Path) -> None:
    text = RANGE.read_text()
    lines = text.replace('"100"', '"full"', 1).splitlines()
    stamp = next(i for i, line in enumerate(lines) if str(T0 + 3600 + 120) in line)
    lines[stamp] = lines[stamp].replace(str(T0 + 3600 + 120), '"noon"')
    path = tmp_path / "bad.json"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError) as err:
        load_trace(path)
    found = dict(err.value.problems)
    full = _line_of(path.read_text(), '"full"')
    assert "not a number" in found[full]
    assert "not unix seconds" in found[stamp + 1]  # lines are numbered from 1


def test_a_boolean_time_is_refused_though_python_adds_it_as_a_number(tmp_path: Path) -> None:
    text = RANGE.read_text()
    path = tmp_path / "bool.json"
    path.write_text(text.replace(str(T0 + 60), "true", 1))
    with pytest.raises(TraceError) as err:
        load_trace(path)
    assert err.value.problems == [(_line_of(path.read_text(), "true"), "time True is not unix seconds")]


def test_an_out_of_range_utilisation_and_a_syntax_error_have_lines(tmp_path: Path) -> None:
    path = tmp_path / "hot.json"
    text = RANGE.read_text().replace('"80"', '"180"', 1)
    path.write_text(text)
    with pytest.raises(TraceError) as err:
        load_trace(path)
    assert err.value.problems[0][0] == _line_of(text, '"180"') and "utilisation" in err.value.problems[0][1]
    broken = tmp_path / "broken.json"
    broken.write_text('{"status": "success",\n "data": {"resultType": "matrix",\n "result": [}\n}\n')
    with pytest.raises(TraceError) as err:
        load_trace(broken)
    assert err.value.problems[0][0] == 3 and "not JSON" in err.value.problems[0][1]
    vector = tmp_path / "instant.json"
    vector.write_text('{"status": "success",\n "data": {\n  "resultType": "vector", "result": []}}\n')
    with pytest.raises(TraceError) as err:
        load_trace(vector)
    assert err.value.problems == [(3, "resultType 'vector': a trace needs series over time, a range query's matrix")]


def test_exposition_lines_without_time_or_device_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "scrape.prom"
    path.write_text(
        "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",Hostname="n1",namespace="a",pod="p"} 45 1700000000000\n'
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",Hostname="n1",namespace="a",pod="p"} 45\n'
        'DCGM_FI_DEV_GPU_UTIL{namespace="a",pod="q"} 45 1700000030000\n'
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",pod="p" 45 1700000060000\n'
    )
    with pytest.raises(TraceError) as err:
        load_trace(path)
    assert [line for line, _ in err.value.problems] == [4, 5, 6]
    assert "timestamp" in err.value.problems[0][1] and "names no device" in err.value.problems[1][1]


def test_an_export_of_one_instant_or_of_no_pod_has_no_jobs(tmp_path: Path) -> None:
    one = tmp_path / "one.prom"
    one.write_text('DCGM_FI_DEV_GPU_UTIL{UUID="GPU-1",namespace="a",pod="p"} 45 1700000000000\n')
    with pytest.raises(TraceError, match="bad row") as err:
        load_trace(one)
    assert "step" in err.value.problems[0][1]
    idle = tmp_path / "idle.prom"
    idle.write_text('DCGM_FI_DEV_GPU_UTIL{UUID="GPU-1"} 0 1700000000000\nDCGM_FI_DEV_FB_USED{UUID="GPU-1"} 0 1\n')
    with pytest.raises(TraceError) as err:
        load_trace(idle)
    assert "no GPU job" in err.value.problems[0][1] or "series of a pod" in err.value.problems[0][1]


def test_cli_reads_an_export_and_refuses_a_bad_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gpuplat.cli import main

    assert main(["simulate", "--stack", "prod", "--trace", str(DUMP), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["jobs"] == 3 and doc["traceShape"] == "prometheus-text"
    bad = tmp_path / "bad.json"
    bad.write_text(RANGE.read_text().replace('"90"', '"x"', 1))
    assert main(["simulate", "--stack", "prod", "--trace", str(bad)]) == 1
    err, line = capsys.readouterr().err, _line_of(bad.read_text(), '"x"')
    assert err.startswith(f"{bad}:{line}:1: error GP032 ") and "Traceback" not in err
