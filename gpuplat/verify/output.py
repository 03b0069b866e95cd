# pyright: strict
"""verify's output: text for people, JSON for machines (`{"journeys": [...]}`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from gpuplat.model import Platform
from gpuplat.plan import Plan

from .types import Journey

# What the real controllers do that verify does not model: it follows what is emitted, one
# unit of one job at a time, and never runs a scheduling cycle. The e2e suite (real API
# server, scheduler, Kueue and Karpenter) carries these.
NOT_MODELLED: tuple[str, ...] = (
    "Kueue's scheduling cycle: flavor order and fungibility, fair sharing, preemption, "
    "topology-aware placement, and waitForPodsReady eviction and requeuing",
    "Karpenter's launch decisions: instance choice, price and availability, spot interruption, "
    "insufficient capacity, reservations running out, NodePool limits counted once nodes exist",
    "node initialization: startup taints and the time until a device plugin registers the resource "
    "(verify only checks that what Karpenter is told a node offers is what a device plugin registers)",
    "kube-scheduler's fit of CPU, memory and other pods on a node; HAMi's scheduler extender scoring",
    "the GPU Operator at runtime: MIG reconfiguration, MPS daemons, driver and toolkit readiness",
    "ValidatingAdmissionPolicies' CEL (named, not evaluated) and admission webhooks",
    "CSI mounts (FSx, Mountpoint S3): whether a volume mounts and who may read it",
    "Prometheus rules and KEDA triggers being evaluated",
)


def render_json(journeys: Sequence[Journey]) -> str:
    document = {"journeys": [j.to_json() for j in journeys], "notModelled": list(NOT_MODELLED)}
    return json.dumps(document, indent=2) + "\n"


def render_text(journeys: Sequence[Journey]) -> str:
    out: list[str] = []
    for j in journeys:
        out.append(f"{'ok    ' if j.ok else 'FAILED'} {j.tenant} -> {j.pool} ({j.resource})\n")
        for step in j.steps:
            out.append(f"    {'ok  ' if step.ok else 'FAIL'} {step.step}: {step.detail}\n")
    failed = sum(not j.ok for j in journeys)
    out.append(f"{len(journeys)} journey(s): {len(journeys) - failed} ok, {failed} failed\n")
    out.append("not modelled by verify (the e2e suite runs the real controllers for these):\n")
    out.extend(f"  - {item}\n" for item in NOT_MODELLED)
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
