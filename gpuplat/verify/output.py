# pyright: strict
"""verify's output: text for people, JSON for machines (`{"journeys": [...]}`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from gpuplat.model import Platform
from gpuplat.plan import Plan

from .types import Journey


def render_json(journeys: Sequence[Journey]) -> str:
    return json.dumps({"journeys": [j.to_json() for j in journeys]}, indent=2) + "\n"


def render_text(journeys: Sequence[Journey]) -> str:
    out: list[str] = []
    for j in journeys:
        out.append(f"{'ok    ' if j.ok else 'FAILED'} {j.tenant} -> {j.pool} ({j.resource})\n")
        for step in j.steps:
            out.append(f"    {'ok  ' if step.ok else 'FAIL'} {step.step}: {step.detail}\n")
    failed = sum(not j.ok for j in journeys)
    out.append(f"{len(journeys)} journey(s): {len(journeys) - failed} ok, {failed} failed\n")
    return "".join(out)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(journeys: Sequence[Journey]) -> str:
    """The pull-request comment's section: journeys ok / failed, the failing steps folded below."""
    failed = [j for j in journeys if not j.ok]
    out = ["### Verify\n\n", f"{len(journeys) - len(failed)} of {len(journeys)} journey(s) reach a GPU.\n"]
    if not failed:
        return "".join(out)
    out.append("\n| tenant | pool | resource | failing steps |\n| --- | --- | --- | --- |\n")
    for j in failed:
        names = ", ".join(dict.fromkeys(s.step for s in j.failed))
        out.append(f"| {j.tenant} | {j.pool} | `{j.resource}` | {names} |\n")
    out.append("\n<details><summary>What is missing</summary>\n\n")
    for j in failed:
        for step in j.failed:
            out.append(f"- {j.tenant} → {j.pool} (`{j.resource}`) **{step.step}**: {_cell(step.detail)}\n")
    out.append("\n</details>\n")
    return "".join(out)


def markdown_section(model: Platform, plan: Plan, resources: Sequence[Mapping[str, Any]]) -> str:
    """The section for a recorded stack, or a note when the charts cannot be rendered here."""
    from .journeys import verify
    from .render import RenderError, RenderUnavailable

    try:
        return render_markdown(verify(model, plan, resources))
    except (RenderUnavailable, RenderError) as err:
        return f"### Verify\n\n> [!NOTE]\n> Not verified: {err}\n"
