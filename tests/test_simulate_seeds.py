"""Noise bands: every headline number over several seeds with its interval, and a change's deltas
paired seed by seed against a base replayed on the same seeds (common random numbers), marked
where they are inside the noise. The base-vs-head runs use a git repository of their own."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from gpuplat.simulate.bands import band, paired, t975
from tests.support_git import git

ROOT = Path(__file__).resolve().parents[1]
PHILLY = ROOT.parent / "shared" / "traces" / "philly-jobs.csv"
needs_traces = pytest.mark.skipif(not PHILLY.exists(), reason=f"no public traces at {PHILLY.parent}")


def test_a_band_is_the_t_interval_of_the_mean() -> None:
    b = band([1.0, 2.0, 3.0])
    assert (b.mean, b.half) == pytest.approx((2.0, t975(2) * 1.0 / math.sqrt(3)))
    assert band([5.0]).verdict == "one seed: no interval"
    assert band([0.0, 0.0, 0.0]).verdict == "no change"
    assert band([-1.0, 2.0, 0.5]).verdict == "inside the noise"
    assert band([1.0, 1.2, 0.9]).verdict == "outside the noise"


def test_deltas_are_paired_by_seed() -> None:
    # Seeds move both sides a lot; the change moves each seed by 1: paired, it is outside the noise.
    base = [{"x": v} for v in (10.0, 50.0, 90.0)]
    head = [{"x": v + 1} for v in (10.0, 50.0, 90.0)]
    ((b, h, d),) = paired(base, head).values()
    assert b.half > 40 and h.half > 40  # unpaired, a difference of 1 would be lost in the seeds' spread
    assert (d.mean, d.half, d.verdict) == (1.0, 0.0, "outside the noise")


def _project(tmp: Path) -> Path:
    """This repository's prod stack and a slice of Philly, committed as the base: 3,000 jobs, enough
    for spot interruptions on every seed after a market-mix edit, so its cost has an interval."""
    project = tmp / "project"
    (project / "stacks").mkdir(parents=True)
    (project / "platform").mkdir()
    for name in ("Pulumi.yaml", "platform/platform.yaml", "stacks/prod.yaml"):
        (project / name).write_text((ROOT / name).read_text())
    (project / "stacks" / "Pulumi.prod.yaml").write_text("config:\n  gpuplat:simulateTrace: jobs.csv\n")
    with PHILLY.open() as handle:
        (project / "jobs.csv").write_text("".join(next(handle) for _ in range(3001)))
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "base")
    return project


def _run(project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    from gpuplat.cli import main

    monkeypatch.chdir(project)
    assert main(["simulate", "--stack", "prod", "--base", "HEAD", "--seeds", "3", *argv]) == 0
    return capsys.readouterr().out


@needs_traces
def test_the_same_spec_on_the_same_seeds_shows_no_delta_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Common random numbers: with nothing changed, the seeds' noise cancels exactly."""
    doc = json.loads(_run(_project(tmp_path), monkeypatch, capsys, "--format", "json"))
    assert doc["head"]["seeds"] == doc["base"]["seeds"] == [0, 1, 2]
    assert {k: v["verdict"] for k, v in doc["delta"].items()} == dict.fromkeys(doc["delta"], "no change")
    assert doc["head"]["headline"]["waste %"]["low"] < doc["head"]["headline"]["waste %"]["high"]


@needs_traces
def test_a_market_mix_edit_shows_cost_with_an_interval_and_marks_the_noise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path)
    spec = project / "platform" / "platform.yaml"
    mix = "  spot: 30\n  reserved: 30\n  onDemand: 40\n"
    assert mix in spec.read_text()
    spec.write_text(spec.read_text().replace(mix, "  spot: 40\n  reserved: 30\n  onDemand: 30\n"))
    doc = json.loads(_run(project, monkeypatch, capsys, "--format", "json"))
    cost = doc["delta"]["cost USD / month"]
    assert cost["delta"] < 0 and cost["low"] < cost["delta"] < cost["high"] < 0  # more spot: cheaper, surely
    for name, d in doc["delta"].items():
        inside = d["low"] <= 0 <= d["high"] and not d["low"] == d["high"] == 0
        assert (d["verdict"] == "inside the noise") == inside, name
    assert "this change's" in doc["baseCompiledWith"]
    comment = _run(project, monkeypatch, capsys, "--format", "markdown")
    assert "mean over 3 seeds with its 95 % interval" in comment
    rows = {line.split(" | ")[0].lstrip("| "): line for line in comment.splitlines() if line.startswith("| ")}
    for name, d in doc["delta"].items():
        assert rows[name].endswith(f"| {d['verdict']} |"), name
    assert f"| {cost['low']:+,.2f} to {cost['high']:+,.2f} |" in rows["cost USD / month"]
    assert "the base's spec is compiled by gpuplat" in comment


def test_seeds_below_one_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gpuplat.cli import main

    trace = tmp_path / "t.csv"
    trace.write_text("submit,duration,gpus\n0,60,1\n")
    assert main(["simulate", "--stack", "prod", "--trace", str(trace), "--seeds", "0"]) == 2
    assert "at least one seed" in capsys.readouterr().err


@needs_traces
def test_seeds_in_worker_processes_give_what_one_process_gives() -> None:
    import dataclasses

    from gpuplat.compile import load_for_stack
    from gpuplat.simulate import Options, load_trace, simulate_seeds
    from gpuplat.simulate.report import render_json

    model, plan = load_for_stack("prod")
    trace = load_trace(PHILLY)
    trace = dataclasses.replace(trace, jobs=trace.jobs[:300])
    options = Options(seed=4, tenant_map={"6214e9": "research"})
    alone = simulate_seeds(model, plan, trace, options, 3)
    forked = simulate_seeds(model, plan, trace, options, 3, workers=2)
    assert [r.seed for r in forked] == [4, 5, 6]
    assert [render_json(r) for r in forked] == [render_json(r) for r in alone]


@needs_traces
def test_the_new_projects_pull_request_comment_replays_the_stacks_that_name_a_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The `gpuplat simulate` line of the workflow `gpuplat init` writes, run as the workflow runs it
    (`$base` the merge base): prod names a trace and gets its table, dev names none and adds nothing."""
    from gpuplat.cli import main

    workflow = ROOT / "gpuplat" / "scaffold" / "templates" / "workflows" / "pull-request.yml"
    (line,) = [ln.strip() for ln in workflow.read_text().splitlines() if ln.strip().startswith("gpuplat simulate")]
    argv = [arg.replace('"$base"', "HEAD") for arg in line.split(">>")[0].split()[1:]]
    assert "--all-stacks" in argv and "--if-configured" in argv
    project = _project(tmp_path)
    (project / "stacks" / "Pulumi.dev.yaml").write_text("config:\n  aws:region: us-east-1\n")
    monkeypatch.chdir(project)
    assert main(argv) == 0
    comment = capsys.readouterr().out
    assert comment.count("### What this change does to waste, waiting and cost") == 1
    assert "mean over 5 seeds with its 95 % interval" in comment and "| cost USD / month |" in comment
    assert main([*argv, "--plot", str(tmp_path / "replay.svg")]) == 2
    assert "--plot draws one stack's replay" in capsys.readouterr().err
