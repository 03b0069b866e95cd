"""`gpuplat preview --format markdown`: the pull-request comment's sections and numbers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from gpuplat.compile import compile_stack
from gpuplat.render.comment import SERVICES_LABEL, usd, usd_delta
from gpuplat.render.plan import plan_json
from tests.test_preview_diff import CAPACITY, Project, Run, make_project


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Generator[Project]:
    with make_project(tmp_path_factory.mktemp("repo")) as made:
        yield made


def _head_plan(project: Project) -> dict[str, Any]:
    previous = Path.cwd()
    os.chdir(project.root)
    try:
        compiled = compile_stack("dev")
    finally:
        os.chdir(previous)
    assert compiled.model is not None and compiled.plan is not None
    return plan_json(compiled.model, compiled.plan)


def _base_plan(project: Project) -> dict[str, Any]:
    """What the base's own planner says (the working tree is at `base` outside `overlay`)."""
    done = subprocess.run(
        [sys.executable, "-m", "gpuplat.cli", "plan", "--stack", "dev", "--format", "json"],
        cwd=project.root,
        env={**os.environ, "PYTHONPATH": str(project.root)},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def comment(project: Project) -> tuple[Run, dict[str, Any], dict[str, Any]]:
    base = _base_plan(project)
    with project.overlay(*CAPACITY):
        head = _head_plan(project)
        run = project.preview(fmt="markdown")
    return run, base, head


def _section(markdown: str, title: str) -> str:
    match = re.search(rf"^### {re.escape(title)}\n(.*?)(?=^### |\Z)", markdown, re.S | re.M)
    assert match, f"no section {title!r}"
    return match.group(1)


def test_sections_of_the_comment(comment: tuple[Run, dict[str, Any], dict[str, Any]]) -> None:
    run, _, _ = comment
    assert run.code == 0, run.err
    md = run.out
    assert md.startswith("## gpuplat preview: stack `dev` against `base`\n")
    for title in ("Resource changes", "Capacity and markets", "Monthly cost", "Policy", "Platform"):
        _section(md, title)
    changes = _section(md, "Resource changes")
    assert "| `atlas-storage-hot` | `aws:fsx/lustreFileSystem:LustreFileSystem` | `storageCapacity` |" in changes
    assert "[!WARNING]" not in changes  # nothing stateful is replaced
    policy = _section(md, "Policy")
    assert "violation" in policy or "policy pack not available" in policy
    assert "```mermaid\nflowchart LR\n" in _section(md, "Platform")


def test_the_comment_leads_with_the_change_and_its_cost(comment: tuple[Run, dict[str, Any], dict[str, Any]]) -> None:
    run, base, head = comment
    verdict, lead = run.out.split("\n\n")[1:3]  # under the title: what blocks, then the change
    # Growing train moves quota between flavors; every journey the Verify section lists as
    # failing further down is named first.
    failing = re.findall(r"^\| (\S+) \| (\S+) \| `([^`]+)` \| ([\w, -]+) \|$", _section(run.out, "Verify"), re.M)
    if failing:
        assert verdict.startswith(f"> [!CAUTION]\n> **{len(failing)} blocker(s)**:\n"), verdict
        for tenant, pool, resource, steps in failing:
            assert f"> - verify: {tenant} → {pool} (`{resource}`) breaks at {steps}" in verdict
    else:
        assert verdict == (
            "**Nothing blocks this change**: no refused change, no broken journey, no mandatory policy violation."
        )
    # Cost and capacity before the details.
    titles = re.findall(r"^### (.+)$", run.out, re.M)
    assert titles.index("Monthly cost") < titles.index("Capacity and markets") < titles.index("Resource changes")
    assert titles.index("Resource changes") < titles.index("Policy") < titles.index("Platform")
    before, after = base["cost"]["monthlyUsd"], head["cost"]["monthlyUsd"]
    delta = f"+${after - before:,.0f}, {100 * (after - before) / before:+.1f} %"
    assert re.fullmatch(r"\*\*(\d+ to (create|update|replace|delete)(, )?)+\*\* · .* · .*", lead), lead
    assert f"GPU cost at max size **${after:,.0f}/month** ({delta})" in lead
    assert "<details><summary>diagram</summary>" not in run.out or "```mermaid" in run.out


def test_capacity_rows_show_base_and_head(comment: tuple[Run, dict[str, Any], dict[str, Any]]) -> None:
    run, base, head = comment
    capacity = _section(run.out, "Capacity and markets")
    for pool_before, pool_after in zip(base["pools"], head["pools"], strict=True):
        assert pool_before["name"] == pool_after["name"]
        for key, label in (("reserved", "reserved"), ("spot", "spot"), ("onDemand", "on-demand")):
            b, a = pool_before["markets"][key], pool_after["markets"][key]
            if a["nodes"] == b["nodes"] == 0:
                continue
            nodes = str(a["nodes"]) if a["nodes"] == b["nodes"] else f"{b['nodes']} → {a['nodes']}"
            gpus = str(a["gpus"]) if a["gpus"] == b["gpus"] else f"{b['gpus']} → {a['gpus']}"
            assert f"| {pool_after['name']} | {label} | {nodes} | {gpus} |" in capacity
    assert "| train | reserved | 1 → 2 | 8 → 16 |" in capacity
    hot = (base["storage"]["hot"]["capacityGiB"], head["storage"]["hot"]["capacityGiB"])
    assert f"| hot | {hot[0]} GiB → {hot[1]} GiB |" in capacity
    std = (base["storage"]["hot"]["standard"]["capacityGiB"], head["storage"]["hot"]["standard"]["capacityGiB"])
    assert f"| hot (standard) | {std[0]} GiB" in capacity  # the plan's second file system is shown too


def test_a_change_of_pool_size_shows_a_chart_of_nodes(comment: tuple[Run, dict[str, Any], dict[str, Any]]) -> None:
    """The chart's bars are the plan's nodes per pool and market, base beside head, for the pools that moved."""
    run, base, head = comment
    capacity = _section(run.out, "Capacity and markets")
    chart = re.search(r"```mermaid\nxychart-beta\n(.*?)```", capacity, re.S)
    assert chart, capacity
    categories = json.loads(re.search(r"x-axis (\[.*\])", chart.group(1)).group(1))  # type: ignore[union-attr]
    bars = json.loads(re.search(r"bar (\[.*\])", chart.group(1)).group(1))  # type: ignore[union-attr]
    shown = dict(zip(categories, bars, strict=True))
    labels = {"reserved": "reserved", "spot": "spot", "onDemand": "on-demand"}
    moved = {
        b["name"]
        for b, a in zip(base["pools"], head["pools"], strict=True)
        if any(b["markets"][k]["nodes"] != a["markets"][k]["nodes"] for k in labels)
    }
    assert moved and {c.split(" ")[0] for c in categories} == moved
    for side, plan in (("base", base), ("head", head)):
        for pool in plan["pools"]:
            for key, label in labels.items():
                name = f"{pool['name']} {label}: {side}"
                if name in shown:
                    assert shown[name] == pool["markets"][key]["nodes"], name


def test_the_capacity_chart_matches_its_golden_file() -> None:
    from tests.snapshots import CHART, render_chart

    assert render_chart() == CHART.read_text(encoding="utf-8"), "the chart changed; review and run `make snapshots`"


def test_no_chart_when_no_pool_moves(comment: tuple[Run, dict[str, Any], dict[str, Any]]) -> None:
    from gpuplat.render.charts import capacity_chart
    from gpuplat.render.comment import MARKETS

    _, base, _ = comment
    assert capacity_chart(base, base, MARKETS) is None


def test_cost_delta_is_the_plan_difference(comment: tuple[Run, dict[str, Any], dict[str, Any]]) -> None:
    run, base, head = comment
    cost = _section(run.out, "Monthly cost")
    before, after = base["cost"]["monthlyUsd"], head["cost"]["monthlyUsd"]
    assert after > before
    delta = usd_delta(round(after - before, 2))
    assert f"| **GPU total** | {usd(before)} | {usd(after)} | **{delta}** (" in cost
    assert "every pool at its max size all month" in cost  # not a forecast, and it says so
    for b, a in zip(base["cost"]["pools"], head["cost"]["pools"], strict=True):
        pool_delta = sum(a["monthlyUsd"].values()) - sum(b["monthlyUsd"].values())
        assert f"| {a['name']} | " in cost and usd_delta(pool_delta) in cost


def test_services_and_assumptions_in_the_comment(comment: tuple[Run, dict[str, Any], dict[str, Any]]) -> None:
    run, base, head = comment
    cost = _section(run.out, "Monthly cost")
    before, after = base["cost"]["servicesMonthlyUsd"], head["cost"]["servicesMonthlyUsd"]
    # The overlay grows the hot tier: its FSx storage is priced, so the services move too.
    assert after > before
    row = f"| {SERVICES_LABEL} | {usd(before)} | {usd(after)} | {usd_delta(after - before)} |"
    assert row in cost
    total_after = head["cost"]["monthlyUsd"] + after
    assert f"| GPU + services | {usd(base['cost']['monthlyUsd'] + before)} | {usd(total_after)} |" in cost
    assert "assumption `reserved-savings-plan`" in cost
    assert "Prices for `us-east-1`, list prices." in cost  # the catalog's own region: nothing estimated


def test_a_base_planner_without_services_shows_a_dash() -> None:
    from gpuplat.render.comment import _service_rows  # pyright: ignore[reportPrivateUsage]

    rows = _service_rows({"monthlyUsd": 100.0, "servicesMonthlyUsd": 10.0}, {"monthlyUsd": 90.0})
    label = SERVICES_LABEL
    assert rows == [[label, "-", "$10.00", ""], ["GPU + services", "-", "$110.00", ""]]


def test_stateful_replacement_is_bold_with_a_warning(project: Project) -> None:
    with project.overlay(("target:\n", "target:\n  zones: [us-east-1b, us-east-1c]\n")):
        run = project.preview(fmt="markdown")
    assert run.code == 1
    verdict = run.out.split("\n\n")[1]
    assert verdict.startswith("> [!CAUTION]\n> **") and " blocker(s)**:\n" in verdict
    assert "> - refused unless `--allow-replace`: replace `atlas-storage-hot` (aws:fsx/" in verdict
    changes = _section(run.out, "Resource changes")
    assert "> [!WARNING]" in changes and "**replace `atlas-storage-hot`**" in changes
    assert "| **replace** ⚠️ | **`atlas-storage-hot`** (stateful) |" in changes


def test_without_a_base_the_comment_shows_the_stack(project: Project) -> None:
    run = project.run("preview", "--stack", "dev", "--format", "markdown")
    assert run.code == 0, run.err
    assert run.out.startswith("## gpuplat preview: stack `dev`\n")
    resources = _section(run.out, "Resources")
    assert "| `aws:fsx/lustreFileSystem:LustreFileSystem` | 2 |" in resources  # critical + standard
    # Grouped by the platform's components, the per-type table folded away.
    assert re.search(
        r"^\*\*\d+ resources\*\* in \d+ components · GPU cost at max size \*\*\$[\d,]+/month\*\* · ", run.out, re.M
    )
    assert "| `atlas-storage` | `StorageTiers` | " in resources and "| `(platform)` | stack, providers | " in resources
    assert "<details><summary>" in resources and resources.index("| component |") < resources.index("| type | count |")
    assert "→" not in _section(run.out, "Capacity and markets")
    assert "| GPU total |" in _section(run.out, "Monthly cost")
    _section(run.out, "Policy")


def test_a_base_without_a_planner_is_a_note(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuplat.commands import preview as command
    from gpuplat.render.comment import PlanResult

    monkeypatch.setattr(command, "base_plan", lambda *a: PlanResult(None, "the base has no gpuplat planner"))
    run = project.preview(base="patched", fmt="markdown")
    assert run.code == 0, run.err
    assert "Base plan not available: the base has no gpuplat planner" in run.out
    assert "| GPU total |" in _section(run.out, "Monthly cost")


@dataclass(frozen=True)
class _Violation:
    policy: str
    level: str
    urn: str
    message: str


def test_blockers_list_broken_journeys_and_mandatory_violations_per_policy() -> None:
    """The first lines name what fails the check, before any number (a comment once opened with
    "no policy violations" above a change that broke 4 of 5 journeys)."""
    from gpuplat.render.comment_summary import blockers

    found = [
        _Violation("aws-required-tags", "mandatory", "urn:a::atlas-vpc", "missing tag cost-center"),
        _Violation("aws-required-tags", "mandatory", "urn:a::atlas-eks", "missing tag cost-center"),
        _Violation("gpu-budget", "advisory", "urn:a::atlas", "over budget"),
    ]
    text = blockers([], False, ["research → infer (`nvidia.com/mig-1g.10gb`) breaks at capacity"], found)
    assert text.splitlines() == [
        "> [!CAUTION]",
        "> **2 blocker(s)**:",
        "> - verify: research → infer (`nvidia.com/mig-1g.10gb`) breaks at capacity",
        "> - policy `aws-required-tags` (mandatory) on 2 resource(s), e.g. `atlas-vpc`: missing tag cost-center",
    ]
    # Not evaluated is said, never counted as passing.
    assert blockers(None, False, None, None) == (
        "**Nothing blocks this change**: no broken journey, no mandatory policy violation "
        "(verify and the policy pack not evaluated)."
    )


def test_broken_journeys_come_from_verify() -> None:
    from gpuplat.verify.output import failing_lines
    from gpuplat.verify.types import Journey, Step

    broken = Journey(
        "research", "infer", "nvidia.com/mig-1g.10gb", (Step("queue", True, "ok"), Step("capacity", False, "none"))
    )
    fine = Journey("product", "dev", "nvidia.com/gpu.shared", (Step("queue", True, "ok"),))
    assert failing_lines([broken, fine]) == ["research → infer (`nvidia.com/mig-1g.10gb`) breaks at capacity"]


def test_owned_nodes_show_each_pools_nodes_and_gpus_not_empty_markets() -> None:
    """Provider kubernetes buys in no market: the section had only the header of the per-market
    table (every market row zero, so skipped) and a fleet row of zero markets."""
    from gpuplat.model import build_model
    from gpuplat.plan import build_plan
    from gpuplat.render.comment import _capacity_section  # pyright: ignore[reportPrivateUsage]
    from tests.support_k8s import KUBERNETES_EXAMPLE

    def plan_of(edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        doc = YAML(typ="safe").load(KUBERNETES_EXAMPLE.read_text(encoding="utf-8"))
        edit(doc)
        model = build_model(doc)
        plan = build_plan(model).plan
        assert plan is not None
        return plan_json(model, plan)

    base = plan_of(lambda doc: None)
    head = plan_of(lambda doc: doc["gpuNodePools"][2]["nodes"].update(max=5))  # lab: 3 -> 5 nodes of 4 GPUs
    section = _capacity_section(head, base)
    assert "every pool at max size (base → head); the nodes are already owned, bought in no market." in section
    assert "| train | 16 | 128 |" in section and "| infer | 4 | 32 |" in section
    assert "| lab | 3 → 5 | 12 → 20 |" in section
    assert f"| fleet GPUs |\n| ---: |\n| {base['fleet']['gpus']} → {head['fleet']['gpus']} |" in section
    assert "spot" not in section and "on-demand" not in section
