# pyright: strict
"""verify's output: text for people, JSON for machines (`{"journeys": [...]}`)."""

from __future__ import annotations

import json
from collections.abc import Sequence

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
