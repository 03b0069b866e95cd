"""`gpuplat simulate`: the replay's honesty checks, on the public traces in ../shared/traces/.

Slices of Philly keep the run short; bench/simulate.py replays the whole trace. Tests that need
the traces skip, saying why, where ../shared/traces/ is missing; the others use traces they write.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from gpuplat import scaling
from gpuplat.compile import load_for_stack
from gpuplat.model import Platform
from gpuplat.plan import Plan, build_plan
from gpuplat.simulate import Options, Trace, TraceError, load_trace, simulate
from gpuplat.simulate.report import render_json
from tests.support_simulate import existing_nodes

TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"
PHILLY = TRACES / "philly-jobs.csv"
needs_traces = pytest.mark.skipif(not PHILLY.exists(), reason=f"no public traces at {TRACES} (see docs/simulate.md)")

# Philly's published queueing delay of GPU jobs (traces' SOURCES.md): average and median, seconds.
PHILLY_MEAN_WAIT, PHILLY_MEDIAN_WAIT = 3761, 189


@pytest.fixture(scope="module")
def philly() -> Trace:
    return load_trace(PHILLY)


def _slice(trace: Trace, n: int) -> Trace:
    return dataclasses.replace(trace, jobs=trace.jobs[:n])


@pytest.fixture(scope="module")
def prod() -> tuple[Platform, Plan]:
    return load_for_stack("prod")


@needs_traces
def test_static_fleet_costs_what_the_plan_says(philly: Trace, prod: tuple[Platform, Plan]) -> None:
    model, plan = prod
    assert plan.cost is not None
    result = simulate(model, plan, _slice(philly, 3000), Options(autoscaling=False))
    # The simulator replays the markets' nodes; the spare nodes held for repairs
    # (health.spareNodes, idle by design) are not in its fleet yet.
    spares = sum(p.spare_monthly_usd for p in plan.cost.pools)
    assert result.monthly_usd == pytest.approx(plan.cost.monthly_usd - spares, rel=1e-9)
    assert result.cost_usd == pytest.approx(result.static_usd, rel=1e-9)  # it saves nothing against itself
    for pool in result.pools:
        planned = next(p for p in plan.cost.pools if p.pool == pool.name)
        for market, usd in planned.monthly_usd.items():
            simulated = pool.cost_usd.get(market.value, 0.0) * plan.cost.hours_per_month / result.hours
            assert simulated == pytest.approx(usd, rel=1e-9), (pool.name, market)


@needs_traces
def test_provisioned_allocated_busy_hold_at_every_instant(philly: Trace, prod: tuple[Platform, Plan]) -> None:
    model, plan = prod
    # audit=True checks provisioned >= allocated >= busy after every change of every flavor.
    result = simulate(model, plan, _slice(philly, 500), Options(audit=True, seed=3))
    assert result.total("provisioned_gpu_h") >= result.total("allocated_gpu_h") >= result.total("busy_gpu_h") > 0


@needs_traces
def test_same_seed_same_result_and_the_seed_matters(philly: Trace, prod: tuple[Platform, Plan]) -> None:
    model, plan = prod
    trace = _slice(philly, 1500)
    runs = [render_json(simulate(model, plan, trace, Options(autoscaling=False, seed=s))) for s in (7, 7, 8)]
    assert runs[0] == runs[1]
    assert json.loads(runs[0])["interrupted"] != json.loads(runs[2])["interrupted"] or runs[0] != runs[2]


@needs_traces
def test_more_capacity_never_lengthens_the_queue(philly: Trace, tmp_path: Path) -> None:
    trace = _slice(philly, 6000)
    options = Options(lookahead=1, spot=False)
    means: list[float] = []
    for nodes in (8, 10, 16, 32):
        model, plan = existing_nodes(tmp_path, nodes, tenant="all")
        (wait,) = simulate(model, plan, trace, options).waits
        means.append(wait.mean_seconds)
        assert wait.jobs == len(trace.jobs)
    assert means == sorted(means, reverse=True) and means[0] > means[-1]


@needs_traces
def test_more_nodes_max_in_a_spec_never_lengthens_the_queue(philly: Trace, prod: tuple[Platform, Plan]) -> None:
    model, _ = prod
    trace = _slice(philly, 3000)
    bigger = dataclasses.replace(
        model,
        pools=tuple(
            dataclasses.replace(p, nodes=dataclasses.replace(p.nodes, max=p.nodes.max * 2)) if p.name == "train" else p
            for p in model.pools
        ),
    )
    waits = []
    for m in (model, bigger):
        plan = build_plan(m).plan
        assert plan is not None
        result = simulate(m, plan, trace, Options(autoscaling=False, spot=False, lookahead=1))
        waits.append(sum(w.mean_seconds * w.jobs for w in result.waits))
    assert waits[1] <= waits[0]


@needs_traces
def test_philly_fifo_against_the_published_queueing(philly: Trace, tmp_path: Path) -> None:
    """FIFO reaches Philly's published average delay on a fleet of 720 GPUs, and shows none on
    2,000: docs/simulate.md says why (perfect packing, no per-VC quotas, no locality)."""
    model, plan = existing_nodes(tmp_path, 90, tenant="all")
    (wait,) = simulate(model, plan, philly, Options(lookahead=1, spot=False)).waits
    assert 0.5 * PHILLY_MEAN_WAIT <= wait.mean_seconds <= 2 * PHILLY_MEAN_WAIT
    assert wait.seconds[50] <= PHILLY_MEDIAN_WAIT
    model, plan = existing_nodes(tmp_path, 250, tenant="all")
    (wait,) = simulate(model, plan, philly, Options(lookahead=1, spot=False)).waits
    assert wait.mean_seconds < 0.1 * PHILLY_MEAN_WAIT


@needs_traces
def test_scale_down_threshold_moves_the_provisioned_hours(philly: Trace, prod: tuple[Platform, Plan]) -> None:
    """The replay decides with the emitted policy: never shrinking (scaleDownBelow 0) keeps more
    GPU-hours than the default, and autoscaling provisions less than the static fleet."""
    model, plan = prod
    trace = _slice(philly, 1500)
    keep = dataclasses.replace(model, autoscaling=dataclasses.replace(model.autoscaling, scale_down_below=0.0))
    default = simulate(model, plan, trace)
    never = simulate(keep, plan, trace)
    static = simulate(model, plan, trace, Options(autoscaling=False))
    assert default.total("provisioned_gpu_h") < never.total("provisioned_gpu_h") <= static.total("provisioned_gpu_h")
    assert default.signal == scaling.signal_record(model.autoscaling.window)


def test_jobs_no_pool_can_hold_are_reported(tmp_path: Path, prod: tuple[Platform, Plan]) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("submit,duration,gpus,tenant\n0,600,1,a\n10,600,4096,a\n20,60,2,b\n")
    model, plan = prod
    result = simulate(model, plan, load_trace(trace), Options(tenant_map={"a": "research", "b": "product"}))
    assert result.unplaceable == {"a": 1}
    assert sum(w.jobs for w in result.waits) == 2


def test_bad_rows_are_reported_with_their_lines(tmp_path: Path) -> None:
    trace = tmp_path / "bad.csv"
    trace.write_text("submit,duration,gpus,fraction\n0,60,1,\nx,60,1,\n5,60,2,0.5\n9,-1,1,\n")
    with pytest.raises(TraceError) as err:
        load_trace(trace)
    assert [line for line, _ in err.value.problems] == [3, 4, 5]
    unknown = tmp_path / "unknown.csv"
    unknown.write_text("a,b\n1,2\n")
    with pytest.raises(TraceError) as err:
        load_trace(unknown)
    assert "unknown trace shape" in err.value.problems[0][1]


def test_cli_reports_and_refuses_bad_traces(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gpuplat.cli import main

    good = tmp_path / "good.csv"
    good.write_text("submit,duration,gpus,tenant,priority\n0,600,1,a,normal\n30,1200,8,a,high\n")
    assert main(["simulate", "--stack", "prod", "--trace", str(good), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["jobs"] == 2 and doc["gpuHours"]["provisioned"] >= doc["gpuHours"]["allocated"]
    bad = tmp_path / "bad.csv"
    bad.write_text("submit,duration,gpus\n0,60,one\n")
    assert main(["simulate", "--stack", "prod", "--trace", str(bad)]) == 1
    assert f"{bad}:2:1: error GP032 " in capsys.readouterr().err
    assert main(["simulate", "--stack", "prod", "--trace", str(tmp_path / "missing.csv")]) == 2
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    assert main(["simulate", "--stack", "prod", "--trace", str(binary)]) == 1


def test_a_spec_without_tenants_is_refused_in_words(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Found by the generated-spec property test: the trace's tenants were mapped round-robin
    # onto no tenant at all (ZeroDivisionError, an internal error).
    from gpuplat.cli import main

    spec = tmp_path / "platform.yaml"
    spec.write_text(
        "apiVersion: gpuplat/v1\nkind: Platform\nmetadata: {name: a}\n"
        'target: {provider: kubernetes, kubernetesVersion: "1.33"}\n'
        "gpuNodePools:\n  - {name: gpu, gpu: {model: L4-24GB, count: 1}, nodeSelector: {a: b},\n"
        "     nodes: {min: 1, max: 1}}\n"
    )
    trace = tmp_path / "t.csv"
    trace.write_text("submit,duration,gpus,tenant\n0,600,1,a\n")
    assert main(["simulate", "--stack", "dev", "--spec", str(spec), "--trace", str(trace)]) == 1
    err = capsys.readouterr().err
    assert "the spec has no tenants" in err and "internal error" not in err


@needs_traces
def test_skipping_quiet_polls_changes_no_decision(philly: Trace, prod: tuple[Platform, Plan]) -> None:
    """Polls of pools where nothing changed are skipped for speed; every decision stays the same."""
    model, plan = prod
    trace = _slice(philly, 1500)
    fast, slow = (simulate(model, plan, trace, Options(skip_quiet=q)) for q in (True, False))
    assert fast.total("provisioned_gpu_h") == slow.total("provisioned_gpu_h")
    assert [w.seconds for w in fast.waits] == [w.seconds for w in slow.waits]
    assert fast.waste == pytest.approx(slow.waste, rel=1e-9)


def test_the_pull_request_table_for_a_stack_that_names_a_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from gpuplat.cli import main
    from gpuplat.commands.simulate import TRACE_CONFIG_KEY, configured_trace

    root = Path(__file__).resolve().parents[1]
    project = tmp_path / "project"
    (project / "stacks").mkdir(parents=True)
    (project / "platform").mkdir()
    (project / "Pulumi.yaml").write_text((root / "Pulumi.yaml").read_text())  # commands run in a project
    (project / "platform" / "platform.yaml").write_text((root / "platform" / "platform.yaml").read_text())
    (project / "stacks" / "prod.yaml").write_text((root / "stacks" / "prod.yaml").read_text())
    (project / "stacks" / "Pulumi.prod.yaml").write_text("config:\n  aws:region: us-east-1\n")
    (project / "jobs.csv").write_text("submit,duration,gpus,tenant\n0,3600,8,a\n60,600,1,a\n")
    monkeypatch.chdir(project)
    assert configured_trace("prod") is None
    assert main(["simulate", "--stack", "prod", "--format", "markdown", "--if-configured"]) == 0
    assert capsys.readouterr().out == ""
    (project / "stacks" / "Pulumi.prod.yaml").write_text(f"config:\n  {TRACE_CONFIG_KEY}: jobs.csv\n")
    assert main(["simulate", "--stack", "prod", "--format", "markdown", "--if-configured"]) == 0
    table = capsys.readouterr().out
    assert "What this change does to waste, waiting and cost" in table and "| waste % |" in table
