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


def test_a_tenant_is_reclaimed_from_only_while_it_borrows(tmp_path: Path) -> None:
    """Kueue takes a candidate of another tenant only while that tenant still holds more than its
    nominal quota once the jobs chosen before it are gone."""
    model, plan = lab_cluster(tmp_path, ("a", "b"), ("{name: x, gpus: 8}", "{name: y, gpus: 4}", "{name: z, gpus: 4}"))
    # y and z each hold 2 GPUs of pool a's 8 nominally; Y1, Y2, Z1, Z2 (2 GPUs each) fill it, each
    # tenant borrowing 2. X0 fills pool b. X (4 GPUs) may reclaim its 4 on a: Z2 is the newest
    # candidate; once it goes, z no longer borrows, so Z1 is passed over for Y2.
    (tmp_path / "jobs.csv").write_text(
        "submit,duration,gpus,tenant\n0,3600,2,y\n1,3600,2,y\n2,3600,2,z\n3,3600,2,z\n4,3600,8,x\n100,600,4,x\n"
    )
    options = Options(tenant_map={"x": "x", "y": "y", "z": "z"})
    engine = replay(model, plan, load_trace(tmp_path / "jobs.csv"), options).engine
    y1, y2, z1, z2, x0, x = range(6)
    assert engine.started[x] == 100.0 and engine.preempted == 2
    assert [engine.runs[j] for j in (y1, y2, z1, z2, x0)] == [1, 2, 1, 2, 1]
