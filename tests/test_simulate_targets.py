"""A tenant's service level in `gpuplat simulate`: the share of its jobs that started within its
`targetWait`, on a hand-written trace whose waits are known, in text, JSON and the PR comment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuplat.compile import Sources, compile_sources
from gpuplat.model import Platform
from gpuplat.plan import Plan
from gpuplat.simulate import Options, Result, load_trace, simulate
from gpuplat.simulate.report import render_json, render_markdown, render_text

# Two existing 8-GPU nodes, research may hold 8 GPUs (guests the rest), StrictFIFO. A runs
# 0-3600; B, C and X queue behind it and run one after the other: B waits 3,600 s, C 3,600 s,
# X exactly 800 s; D and E find research's GPUs free.
TRACE = """submit,duration,gpus,tenant
0,3600,8,lab
0,100,8,lab
100,100,8,lab
3000,100,8,lab
5000,100,4,lab
5000,100,4,lab
"""


def _cluster(tmp: Path, targets: dict[str, str]) -> tuple[Platform, Plan]:
    def tenant(name: str, gpus: int) -> str:
        wait = f", targetWait: {targets[name]}" if name in targets else ""
        return f"  - {{name: {name}, gpus: {gpus}{wait}}}\n"

    spec = tmp / "cluster.yaml"
    spec.write_text(
        "apiVersion: gpuplat/v1\nkind: Platform\nmetadata: {name: lab}\n"
        'target: {provider: kubernetes, kubernetesVersion: "1.33"}\n'
        "gpuNodePools:\n  - name: gpu\n    gpu: {model: A10G-24GB, count: 8}\n"
        "    nodeSelector: {gpuplat.dev/pool: gpu}\n    nodes: {min: 2, max: 2}\n"
        "tenants:\n" + tenant("research", 8) + tenant("guests", 8)
    )
    compiled = compile_sources(Sources(spec, None))
    assert compiled.ok and compiled.model is not None and compiled.plan is not None, compiled.diagnostics
    return compiled.model, compiled.plan


def _replay(tmp: Path, targets: dict[str, str]) -> Result:
    model, plan = _cluster(tmp, targets)
    (tmp / "jobs.csv").write_text(TRACE)
    options = Options(lookahead=1, tenant_map={"lab": "research"})
    return simulate(model, plan, load_trace(tmp / "jobs.csv"), options)


def test_the_share_started_within_the_target_is_counted_at_the_boundary(tmp_path: Path) -> None:
    result = _replay(tmp_path, {"research": "800s"})
    (target,) = result.targets
    assert (target.tenant, target.target_seconds, target.jobs, target.within) == ("research", 800, 6, 4)
    # One second less and X, which waited exactly 800 s, misses it.
    (tighter,) = _replay(tmp_path, {"research": "799s"}).targets
    assert tighter.within == 3
    # Past every wait, every job meets it.
    (loose,) = _replay(tmp_path, {"research": "1h"}).targets
    assert (loose.within, loose.share) == (6, 1.0)


def test_only_tenants_with_a_target_are_reported(tmp_path: Path) -> None:
    assert _replay(tmp_path, {}).targets == ()
    guests = _replay(tmp_path, {"guests": "5m"})
    (only,) = guests.targets
    assert (only.tenant, only.jobs, only.within, only.share) == ("guests", 0, 0, None)  # no guest's job in the trace
    assert "guests: no job of the trace replayed, so nothing to measure against its target wait 5m" in render_text(
        guests
    )
    assert "within target" not in json.dumps(json.loads(render_json(guests))["headline"])


def test_the_share_shows_beside_waste_in_text_json_and_the_comment(tmp_path: Path) -> None:
    head = _replay(tmp_path, {"research": "800s"})
    text = render_text(head)
    waste_at = text.index("waste ")
    assert "research: 66.7 % of 6 jobs started within the target wait 800s (2 later or never)" in text[waste_at:]
    doc = json.loads(render_json(head))
    assert doc["targetWait"] == [
        {"tenant": "research", "targetSeconds": 800, "jobs": 6, "within": 4, "share": 4 / 6},
    ]
    assert doc["headline"]["research within target %"]["mean"] == pytest.approx(100 * 4 / 6)
    comment = render_markdown(head)
    assert "| research within target % | 66.67 |" in comment
    assert "- research: 66.7 % of 6 jobs started within the target wait 800s" in comment


def test_a_base_without_the_target_gives_no_delta_for_it(tmp_path: Path) -> None:
    base = _replay(tmp_path, {})
    head = _replay(tmp_path, {"research": "800s"})
    comment = render_markdown(head, base)
    assert "within target" not in comment.split("|---|")[1].split("\n- ")[0]  # not in the delta table
    assert "- research: 66.7 % of 6 jobs started within the target wait 800s" in comment
