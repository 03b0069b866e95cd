"""`gpuplat simulate` says what it assumed and how much it replayed: each job's busy share drawn
from a measured distribution (with the waste at its quartiles), and the share of the trace's
GPU-hours replayed with why the rest was not. Slices of Philly keep the runs short."""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

import pytest

from gpuplat.catalog.utilization import PHILLY_GPU_UTIL, PHILLY_GPU_UTIL_STEP
from gpuplat.compile import load_for_stack
from gpuplat.model import Platform
from gpuplat.plan import Plan
from gpuplat.simulate import Options, Trace, TraceError, load_distribution, load_trace, simulate
from gpuplat.simulate.fleet import build_flavors, build_tenants
from gpuplat.simulate.mapping import gpu_hours, tenant_mapping
from gpuplat.simulate.run import build
from gpuplat.simulate.utilization import PHILLY, constant

TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"
PHILLY_JOBS, PHILLY_CDF = TRACES / "philly-jobs.csv", TRACES / "philly-gpu-util-cdf.csv"
needs_traces = pytest.mark.skipif(not PHILLY_JOBS.exists(), reason=f"no public traces at {TRACES}")
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "traces"


@pytest.fixture(scope="module")
def prod() -> tuple[Platform, Plan]:
    return load_for_stack("prod")


@pytest.fixture(scope="module")
def philly() -> Trace:
    return load_trace(PHILLY_JOBS)


def _slice(trace: Trace, n: int) -> Trace:
    return dataclasses.replace(trace, jobs=trace.jobs[:n])


@needs_traces
def test_the_shipped_distribution_is_the_published_cdf() -> None:
    with PHILLY_CDF.open(newline="") as handle:
        rows = [float(r["gpu_util_percent"]) / 100 for r in csv.DictReader(handle)]
    published = load_distribution(str(PHILLY_CDF))
    for i, value in enumerate(PHILLY_GPU_UTIL):
        share = i * PHILLY_GPU_UTIL_STEP
        assert value == pytest.approx(published.quantile(share), abs=0.01), share
    assert PHILLY.quantile(0.5) == pytest.approx(0.486, abs=0.002)  # the published median
    assert PHILLY.mean == pytest.approx(sum(rows) / len(rows), abs=0.005)


def test_draws_are_per_job_and_keep_the_traces_own_share(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("submit,duration,gpus,utilization\n0,60,1,\n1,60,1,0.9\n2,60,1,\n")
    jobs = load_trace(trace).jobs
    first, again, other = PHILLY.draws(4, jobs), PHILLY.draws(4, jobs), PHILLY.draws(5, jobs)
    assert first == again and first != other and first[1] == 0.9
    # Common random numbers: a job's draw does not move when another job's share is given.
    blank = [dataclasses.replace(j, utilization=None) for j in jobs]
    assert PHILLY.draws(4, blank)[2] == first[2]


def test_a_distribution_from_a_cdf_an_export_or_a_number(tmp_path: Path) -> None:
    cdf = tmp_path / "cdf.csv"
    cdf.write_text("cumulative_percent,gpu_util_percent\n0,10\n50,20\n100,60\n")
    dist = load_distribution(str(cdf))
    assert (dist.quantile(0.25), dist.quantile(0.75), dist.mean) == pytest.approx((0.15, 0.4, 0.275))
    export = load_distribution(str(FIXTURES / "dcgm-range.json"))
    shares = sorted(j.utilization or 0 for j in load_trace(FIXTURES / "dcgm-range.json").jobs)
    assert (export.quantile(0.0), export.quantile(1.0)) == (shares[0], shares[-1])
    assert load_distribution("0.3") == constant(0.3)


def test_a_bad_distribution_is_refused_at_its_lines(tmp_path: Path) -> None:
    cdf = tmp_path / "cdf.csv"
    cdf.write_text("cumulative_percent,gpu_util_percent\n0,10\n50,x\n40,5\n100,130\n")
    with pytest.raises(TraceError) as err:
        load_distribution(str(cdf))
    assert [line for line, _ in err.value.problems] == [3, 4, 5]
    with pytest.raises(TraceError):
        load_distribution("1.5")
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(TraceError) as err:
        load_distribution(str(other))
    assert "cumulative_percent" in err.value.problems[0][1]


@needs_traces
def test_waste_comes_from_the_distribution_and_its_quartiles_bracket_it(
    philly: Trace, prod: tuple[Platform, Plan]
) -> None:
    model, plan = prod
    trace = _slice(philly, 2000)
    drawn = simulate(model, plan, trace, Options(autoscaling=False, spot=False))
    share = drawn.busy_share
    assert share.drawn_jobs == 2000 and share.own_jobs == 0
    assert share.waste_at_p75 < drawn.waste["total"] < share.waste_at_p25
    # Every job at the distribution's p75: the replay's waste is the sensitivity line's.
    at_p75 = simulate(model, plan, trace, Options(autoscaling=False, spot=False, utilization=constant(share.p75)))
    assert at_p75.waste["total"] == pytest.approx(share.waste_at_p75, rel=1e-6)
    # Fully busy jobs leave only the unallocated part as waste.
    busy = simulate(model, plan, trace, Options(autoscaling=False, spot=False, utilization=constant(1.0)))
    assert busy.waste["idle"] == pytest.approx(0.0, abs=1e-9)


@needs_traces
def test_the_default_mapping_places_philly_on_prod(philly: Trace, prod: tuple[Platform, Plan]) -> None:
    """The two biggest virtual clusters by GPU-hours went to partners (MIG only) when mapped by
    job count; weighed by GPU-hours and the pools each tenant may use, almost all of it is placed."""
    model, plan = prod
    flavors = build_flavors(model, plan)
    tenants = build_tenants(model, plan, flavors)
    mapping = tenant_mapping(philly.jobs, tenants, {}, {f.key: f for f in flavors})
    assert "partners" not in mapping.values() and len(set(mapping.values())) == 2
    _, _, unplaceable = build(model, plan, philly, Options())
    lost = sum(gpu_hours(philly.jobs[i]) for i in unplaceable)
    assert lost < 0.05 * sum(gpu_hours(j) for j in philly.jobs)
    assert all("wider than" in why for why in unplaceable.values())


@needs_traces
def test_the_share_replayed_and_why_the_rest_was_not(philly: Trace, prod: tuple[Platform, Plan]) -> None:
    model, plan = prod
    trace = _slice(philly, 1500)
    biggest = max({j.tenant for j in trace.jobs}, key=lambda t: sum(gpu_hours(j) for j in trace.jobs if j.tenant == t))
    result = simulate(model, plan, trace, Options(tenant_map={biggest: "partners"}))
    cover = result.coverage
    total = sum(gpu_hours(j) for j in trace.jobs)
    missing = sum(gpu_hours(j) for j in trace.jobs if j.tenant == biggest)
    assert cover.trace_gpu_h == pytest.approx(total)
    assert cover.replayed_gpu_h == pytest.approx(total - missing)
    ((why, (jobs, hours)),) = cover.not_replayed.items()
    assert why == f"{biggest} -> partners: whole GPUs: partners may use no pool of whole GPUs"
    assert (jobs, hours) == (sum(1 for j in trace.jobs if j.tenant == biggest), pytest.approx(missing))


def test_every_output_reports_the_share_and_the_assumption(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gpuplat.cli import main

    trace = tmp_path / "t.csv"
    trace.write_text("submit,duration,gpus,tenant\n0,3600,1,a\n10,3600,4096,a\n20,600,2,b\n")
    args = ["simulate", "--stack", "prod", "--trace", str(trace), "--utilization", "0.5"]
    assert main([*args, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["coverage"]["traceGpuHours"] == pytest.approx(1 + 4096 + 2 / 6)
    assert doc["coverage"]["replayedShare"] == pytest.approx((1 + 2 / 6) / (1 + 4096 + 2 / 6))
    (gone,) = doc["coverage"]["notReplayed"]
    assert gone["jobs"] == 1 and "wider than" in gone["why"]
    assert doc["assumptions"]["busyShare"]["source"] == "every job at 0.5"
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "of the trace's 4,097 GPU-hours (0.0 %)" in text and "busy share: drawn for 3 jobs" in text
    assert main([*args, "--format", "markdown"]) == 0
    assert "% of its GPU-hours replayed" in capsys.readouterr().out


def test_a_tenant_map_onto_no_tenant_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gpuplat.cli import main

    trace = tmp_path / "t.csv"
    trace.write_text("submit,duration,gpus,tenant\n0,600,1,a\n")
    assert main(["simulate", "--stack", "prod", "--trace", str(trace), "--tenant-map", "a=nobody"]) == 2
    err = capsys.readouterr().err
    assert "nobody, not a tenant of the spec" in err and "Traceback" not in err
    bad = tmp_path / "cdf.csv"
    bad.write_text("cumulative_percent,gpu_util_percent\n0,x\n")
    assert main(["simulate", "--stack", "prod", "--trace", str(trace), "--utilization", str(bad)]) == 1
    assert f"{bad}:2:1: error GP032 $: " in capsys.readouterr().err


@needs_traces
def test_utilisation_moves_the_floor_where_memory_does_not_hide_it(
    philly: Trace, prod: tuple[Platform, Plan]
) -> None:
    """Memory counts as used on every allocated GPU, so with both signals (the emitted rule) the
    pressure is the allocation and the busy share never decides; with utilisation alone it does."""
    model, plan = prod
    trace = _slice(philly, 600)

    def provisioned(signals: frozenset[str], share: float) -> float:
        options = Options(spot=False, signals=signals, utilization=constant(share))
        return simulate(model, plan, trace, options).total("provisioned_gpu_h")

    both, util = frozenset({"utilization", "memory"}), frozenset({"utilization"})
    assert provisioned(both, 0.1) == provisioned(both, 0.9)
    idle, busy = provisioned(util, 0.1), provisioned(util, 0.9)
    assert idle < busy <= provisioned(both, 0.9)
    assert provisioned(frozenset(), 0.9) <= idle  # no signal: the floor sits at nodes.min


def test_the_rule_and_the_replay_read_one_list_of_signals(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuplat import scaling

    expr = scaling.pressure_expr("train", "5m")
    assert scaling.utilization_record("5m") in expr and scaling.memory_record("5m") in expr
    assert Options().signals == frozenset(scaling.DRIVING_SIGNALS)
    assert scaling.pressure(0.2, 0.7) == 0.7 and scaling.pressure(0.2, 0.7, frozenset({"utilization"})) == 0.2
    monkeypatch.setattr(scaling, "DRIVING_SIGNALS", ("utilization",))
    assert scaling.memory_record("5m") not in scaling.pressure_expr("train", "5m")
