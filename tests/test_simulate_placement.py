"""Placement fidelity and job outcomes in the replay: node-level packing (a job waits while free
GPUs are scattered over nodes that cannot hold it, and that wait is counted as fragmentation),
gang start of multi-node jobs, and failed jobs that free their GPUs and queue again."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from gpuplat.cli import main
from gpuplat.model import Platform
from gpuplat.plan import Plan
from gpuplat.simulate import Options, Trace, load_trace
from gpuplat.simulate.nodes import FRAGMENTATION
from gpuplat.simulate.outcomes import KINDS, PHILLY_OUTCOMES, Outcomes
from gpuplat.simulate.run import replay
from tests.support_simulate import existing_nodes, lab_trace

TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"
PHILLY = TRACES / "philly-jobs.csv"


def _starts(model: Platform, plan: Plan, trace: Trace, **options: bool) -> tuple[list[float], float]:
    engine = replay(model, plan, trace, Options(spot=False, **options)).engine  # type: ignore[arg-type]
    return engine.started, engine.node_waits.gpu_s[FRAGMENTATION]


def test_a_job_waits_for_one_node_that_holds_it_and_the_wait_counts_as_fragmentation(tmp_path: Path) -> None:
    model, plan = existing_nodes(tmp_path, 2)
    # 4 GPUs on node 0, 6 on node 1, then 4 more fill node 0; when the first 4 end at 100, 4 + 2
    # GPUs are free on two nodes: the 6-GPU job submitted at 50 fits in neither until 1000.
    trace = lab_trace(tmp_path, [(0, 100, 4), (0, 1000, 6), (1, 1001, 4), (50, 10, 6)])
    packed, fragmented = _starts(model, plan, trace, node_packing=True)
    assert packed == [0, 0, 1, 1000]
    assert fragmented == pytest.approx((1000 - 100) * 6)
    perfect, none = _starts(model, plan, trace)
    assert perfect[3] == 100 and none == 0  # units packed perfectly: no such wait


def test_a_multi_node_job_starts_all_its_pods_at_once_on_whole_nodes(tmp_path: Path) -> None:
    model, plan = existing_nodes(tmp_path, 3)
    # 5 + 5 GPUs leave 3 + 3 + 8 free: 14 GPUs, but the 12-GPU job needs a whole node and one
    # with 4 free; none of its pods starts until the first 5-GPU job ends and frees node 0.
    trace = lab_trace(tmp_path, [(0, 1000, 5), (0, 2000, 5), (1, 10, 12)])
    packed, fragmented = _starts(model, plan, trace, node_packing=True)
    assert packed == [0, 0, 1000]
    assert fragmented == pytest.approx((1000 - 1) * 12)
    assert _starts(model, plan, trace)[0][2] == 1


def test_a_failed_job_frees_its_gpus_queues_again_and_runs_only_the_rest(tmp_path: Path) -> None:
    model, plan = existing_nodes(tmp_path, 1)
    trace = lab_trace(tmp_path, [(0, 1000, 8), (1, 100, 8)])
    every_one_fails = Outcomes("test: every job fails once", (0.0, 1.0, 0.0))
    done = replay(model, plan, trace, Options(spot=False, outcomes=every_one_fails))
    engine = done.engine
    failed_at = 1000 * engine.fail_at[0]
    assert 0 < failed_at < 1000
    # The waiting job runs in the gap; the failed one, queued behind it, then runs what was left.
    assert engine.started[1] == pytest.approx(failed_at)
    assert done.horizon == pytest.approx(1100)
    (flavor,) = engine.flavors
    assert flavor.alloc_gpu_s == pytest.approx(8 * 1100)  # the trace's GPU time, nothing added
    plain = replay(model, plan, trace, Options(spot=False)).engine
    assert plain.started[1] == 1000


@pytest.mark.skipif(not PHILLY.exists(), reason=f"no public traces at {TRACES}")
def test_outcomes_are_drawn_in_the_published_shares_by_count_and_by_gpu_time() -> None:
    jobs = load_trace(PHILLY).jobs
    outcome, fail_at = PHILLY_OUTCOMES.draws(0, jobs)
    counts = Counter(outcome)
    hours: dict[str, float] = dict.fromkeys(KINDS, 0.0)
    for job, kind in zip(jobs, outcome, strict=True):
        hours[kind] += job.duration * job.gpus
    assert PHILLY_OUTCOMES.by_gpu_time is not None
    for k, kind in enumerate(KINDS):
        assert counts[kind] / len(jobs) == pytest.approx(PHILLY_OUTCOMES.by_count[k], abs=0.01)
        # By GPU time the 405 long jobs decide, so one seed lands within a few points.
        assert hours[kind] / sum(hours.values()) == pytest.approx(PHILLY_OUTCOMES.by_gpu_time[k], abs=0.06)
    assert all((f < 1.0) == (o == "failed") for o, f in zip(outcome, fail_at, strict=True))
    assert PHILLY_OUTCOMES.draws(1, jobs)[0] != outcome
    # Drawn by count alone, the GPU time would be mostly completed work, not Philly's 32 %.
    by_count = Outcomes("count only", PHILLY_OUTCOMES.by_count).draws(0, jobs)[0]
    completed = sum(j.duration * j.gpus for j, o in zip(jobs, by_count, strict=True) if o == "completed")
    assert completed / sum(hours.values()) > 0.5


def test_cli_node_packing_and_outcomes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--node-packing --outcomes philly` on an existing cluster: the JSON says so and counts the
    fragmentation; the autoscaled prod stack replays node by node too, and the text and the
    comment say how pods were placed."""
    existing_nodes(tmp_path, 2)
    trace = tmp_path / "jobs.csv"
    trace.write_text("submit,duration,gpus,tenant\n0,100,4,lab\n0,1000,6,lab\n1,1001,4,lab\n50,10,6,lab\n")
    spec = str(tmp_path / "nodes-2.yaml")
    argv = ["simulate", "--stack", "dev", "--spec", spec, "--trace", str(trace), "--format", "json", "--seeds", "1"]
    assert main([*argv, "--node-packing", "--outcomes", "philly", "--tenant-map", "lab=lab"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["assumptions"]["nodePacking"] is True
    assert doc["assumptions"]["outcomes"] == PHILLY_OUTCOMES.source
    assert doc["fragmentation"]["jobs"] in (0, 1)  # a drawn failure may free node 0 first
    assert doc["retried"] == sum(1 for o in PHILLY_OUTCOMES.draws(0, load_trace(trace).jobs)[0] if o == "failed")
    assert main(["simulate", "--stack", "prod", "--trace", str(trace), "--node-packing", "--seeds", "1"]) == 0
    assert "placement: pods node by node;" in capsys.readouterr().out
    # The comment says how pods were placed, as perfect packing flatters waste and waits.
    comment = ["simulate", "--stack", "prod", "--trace", str(trace), "--seeds", "1", "--format", "markdown"]
    assert main([*comment, "--node-packing"]) == 0
    assert "- placement: pods node by node; " in capsys.readouterr().out
    assert main(comment) == 0
    assert "- placement: GPUs packed perfectly within each flavor (--node-packing" in capsys.readouterr().out
