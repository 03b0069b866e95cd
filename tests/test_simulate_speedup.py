"""A pool's GPUs faster than the trace's (`--speedup`): runs shorten by the factor, what a stopped
or failed run has done counts at the pool's speed, and only the pools named are faster."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuplat.cli import main
from gpuplat.simulate import Options, simulate
from gpuplat.simulate.outcomes import PHILLY_OUTCOMES
from gpuplat.simulate.run import replay
from tests.support_simulate import existing_nodes, lab_trace


def _options(factor: float | None, **more: object) -> Options:
    speedup: dict[str, float] = {} if factor is None else {"": factor}
    return Options(spot=False, speedup=speedup, **more)  # type: ignore[arg-type]


def test_twice_as_fast_gpus_halve_the_runs_and_the_queue_behind_them(tmp_path: Path) -> None:
    model, plan = existing_nodes(tmp_path, 2)
    trace = lab_trace(tmp_path, [(0, 1000, 8), (0, 1000, 8), (0, 500, 8)])
    assert replay(model, plan, trace, _options(None)).engine.started == [0, 0, 1000]
    assert replay(model, plan, trace, _options(2.0)).engine.started == [0, 0, 500]
    recorded, faster = simulate(model, plan, trace, _options(None)), simulate(model, plan, trace, _options(2.0))
    assert faster.total("allocated_gpu_h") == pytest.approx(recorded.total("allocated_gpu_h") / 2)


def test_a_failed_run_counts_its_work_at_the_pools_speed(tmp_path: Path) -> None:
    """A failed job queues again for the rest of its run: at any speed the work done over all its
    attempts is the trace's, so the GPU-hours still halve at twice the speed."""
    model, plan = existing_nodes(tmp_path, 2)
    trace = lab_trace(tmp_path, [(i * 10.0, 3600.0 + 100 * i, 4) for i in range(40)])
    recorded = simulate(model, plan, trace, _options(None, outcomes=PHILLY_OUTCOMES))
    faster = simulate(model, plan, trace, _options(2.0, outcomes=PHILLY_OUTCOMES))
    assert recorded.retried > 0 and faster.retried == recorded.retried
    assert faster.total("allocated_gpu_h") == pytest.approx(recorded.total("allocated_gpu_h") / 2)


def test_only_the_named_pool_is_faster_and_the_output_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text("submit,duration,gpus,tenant\n0,7200,8,a\n")
    argv = ["simulate", "--stack", "prod", "--trace", str(trace), "--tenant-map", "a=research", "--seeds", "1"]
    assert main([*argv, "--speedup", "train=1.8", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["assumptions"]["speedup"]["train"] == 1.8
    assert {f for p, f in doc["assumptions"]["speedup"].items() if p != "train"} == {1.0}
    assert main([*argv, "--speedup", "train=1.8"]) == 0
    assert "(a run lasts its recorded time / the factor): train 1.8x faster" in capsys.readouterr().out
    assert main([*argv, "--speedup", "train=0.5"]) == 0
    assert "train 0.5x slower" in capsys.readouterr().out
    assert main(argv) == 0
    assert "durations as recorded" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("values", "said"),
    [
        (["0"], "a number above 0"),
        (["-2"], "a number above 0"),
        (["nan"], "a number above 0"),
        (["inf"], "a number above 0"),
        (["1e9"], "at most 100"),
        (["fast"], "a number above 0"),
        (["nosuch=2"], "the spec has no pool 'nosuch'"),
        (["=2"], "the spec has no pool ''"),
        (["train=2", "train=3"], "pool 'train' is given twice"),
        (["2", "3"], "every pool is given twice"),
    ],
)
def test_a_bad_speedup_is_a_usage_error_in_words(
    values: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text("submit,duration,gpus,tenant\n0,60,1,a\n")
    argv = ["simulate", "--stack", "prod", "--trace", str(trace), "--seeds", "1"]
    assert main([*argv, *(f"--speedup={v}" for v in values)]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err
