"""Kueue's preemption in `gpuplat simulate`, as every ClusterQueue is emitted
(`withinClusterQueue: LowerPriority`, `borrowWithinCohort: Never`): a job preempts its own
tenant's lower-priority jobs to fit within its nominal quota, no more of them than it needs, and
never to borrow."""

from __future__ import annotations

from pathlib import Path

from components.kubernetes.scheduling import cluster_queue_spec
from gpuplat.model import Platform
from gpuplat.plan import Plan
from gpuplat.simulate import Options, load_trace
from gpuplat.simulate.engine import Engine
from gpuplat.simulate.run import replay
from tests.support_simulate import lab_cluster


def _cluster(tmp: Path, pools: int = 1) -> tuple[Platform, Plan]:
    """`pools` pools of one 8-GPU node; research holds 8 GPUs, split over them."""
    return lab_cluster(tmp, [f"p{n}" for n in range(pools)], ["{name: research, gpus: 8}"])


def _replay(tmp: Path, trace: str, pools: int = 1) -> Engine:
    model, plan = _cluster(tmp, pools)
    (tmp / "jobs.csv").write_text("submit,duration,gpus,tenant,priority\n" + trace)
    return replay(model, plan, load_trace(tmp / "jobs.csv"), Options(tenant_map={"lab": "research"})).engine


def test_the_replay_reads_the_emitted_preemption_policy(tmp_path: Path) -> None:
    model, plan = _cluster(tmp_path)
    (tenant,) = model.tenants
    assert cluster_queue_spec(model, tenant, plan)["preemption"] == {
        "reclaimWithinCohort": "Any",
        "withinClusterQueue": "LowerPriority",
        "borrowWithinCohort": {"policy": "Never"},
    }


def test_a_higher_priority_job_preempts_no_more_than_it_needs(tmp_path: Path) -> None:
    # B (2 GPUs), A (4) and C (2) fill research's 8 GPUs at low priority; H asks 4 at high.
    # In Kueue's order C (the newest) goes first, then A; A alone makes room, so C is given back.
    engine = _replay(
        tmp_path, "0,3600,2,lab,low\n10,3600,4,lab,low\n20,3600,2,lab,low\n100,600,4,lab,high\n"
    )
    b, a, c, h = range(4)
    assert engine.started[h] == 100.0 and engine.preempted == 1
    assert engine.runs[a] == 2 and engine.runs[b] == engine.runs[c] == 1  # A ran twice, the others once
    # A lost its 90 s since the last checkpoint and starts again when H's GPUs free.
    assert engine.run_start[a] == 700.0


def test_the_same_priority_waits(tmp_path: Path) -> None:
    engine = _replay(tmp_path, "0,3600,8,lab,normal\n100,600,8,lab,normal\n")
    assert engine.started[1] == 3600.0 and engine.preempted == 0


def test_no_job_preempts_to_borrow(tmp_path: Path) -> None:
    # Over two pools research's nominal quota is 4 on each. Three low-priority 4-GPU jobs fill one
    # pool and half the other: an 8-GPU job would have to borrow on either, so it waits for them
    # to end instead of preempting them.
    engine = _replay(tmp_path, "0,3600,4,lab,low\n0,3600,4,lab,low\n0,3600,4,lab,low\n100,600,8,lab,high\n", pools=2)
    assert engine.preempted == 0 and engine.started[3] == 3600.0
