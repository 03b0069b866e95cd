"""Committed previews of the shipped stacks: a pull request shows its infrastructure diff.

Beside them, `comment_chart.md`: the pull-request comment's capacity chart from dev's plan (base)
to prod's (head), so a change to the chart's text shows in review too.

Regenerate after an intended change with `make snapshots` (python -m tests.snapshots).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from gpuplat.preview.stack import record_stack

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = Path(__file__).resolve().parent
STACKS = ("dev", "staging", "prod")


def snapshot_path(stack: str) -> Path:
    return SNAPSHOTS / f"{stack}.json"


def render(stack: str) -> str:
    """Exactly what `gpuplat preview --stack <stack> --format json` prints."""
    cwd = Path.cwd()
    os.chdir(ROOT)
    try:
        resources = record_stack(stack)
    finally:
        os.chdir(cwd)
    return json.dumps({"resources": [r.to_json() for r in resources]}, indent=2) + "\n"


CHART = SNAPSHOTS / "comment_chart.md"


def render_chart() -> str:
    """The comment's capacity chart, base the dev stack's plan JSON, head the prod stack's."""
    from gpuplat.compile import compile_stack
    from gpuplat.render.charts import capacity_chart
    from gpuplat.render.comment import MARKETS
    from gpuplat.render.plan import plan_json

    cwd = Path.cwd()
    os.chdir(ROOT)
    try:
        plans = []
        for stack in ("dev", "prod"):
            compiled = compile_stack(stack)
            assert compiled.model is not None and compiled.plan is not None, compiled.diagnostics
            plans.append(plan_json(compiled.model, compiled.plan))
    finally:
        os.chdir(cwd)
    chart = capacity_chart(plans[1], plans[0], MARKETS)
    assert chart is not None, "dev and prod plan the same nodes: the chart needs two plans that differ"
    return chart + "\n"
