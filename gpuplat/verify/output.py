# pyright: strict
"""verify's output: text for people, JSON for machines (`{"journeys": [...]}`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from gpuplat.model import Platform
from gpuplat.plan import Plan

from .render import NO_CHARTS, ChartDirectory, RenderError, RenderUnavailable
from .types import Journey

# What the real controllers do that verify does not model: it follows what is emitted, one
# unit of one job at a time, and never runs a scheduling cycle. The e2e suite (real API
# server, scheduler, Kueue and Karpenter) carries these.
NOT_MODELLED: tuple[str, ...] = (
    "Kueue's scheduling cycle: flavor order and fungibility, fair sharing, preemption, "
    "whether a job's pods fit in one domain of the Topology level it asks for (verify models only which "
    "flavors take a job asking for a placement, and which take one asking for none), "
    "and waitForPodsReady eviction and requeuing",
    "Karpenter's launch decisions: instance choice, price and availability, spot interruption, "
    "insufficient capacity, reservations running out, NodePool limits counted once nodes exist",
    "node initialization: startup taints and the time until a device plugin registers the resource "
    "(verify only checks that what Karpenter is told a node offers is what a device plugin registers)",
    "kube-scheduler's fit of CPU, memory and other pods on a node; HAMi's scheduler extender scoring",
    "the GPU Operator at runtime: MIG reconfiguration, MPS daemons, driver and toolkit readiness; "
    "the MIG pools' boot script (EC2NodeClass userData) running on a host",
    "CPU-only pods and the CPU NodePool (verify follows GPU jobs)",
    "ValidatingAdmissionPolicies' CEL (named, not evaluated) and admission webhooks",
    "CSI mounts (FSx, Mountpoint S3): whether a volume mounts and who may read it",
    "Prometheus rules and KEDA triggers being evaluated",
)


def render_json(journeys: Sequence[Journey], prerequisites: Sequence[str] = ()) -> str:
    document = {
        "journeys": [j.to_json() for j in journeys],
        "notModelled": list(NOT_MODELLED),
        "prerequisites": list(prerequisites),
    }
    return json.dumps(document, indent=2) + "\n"


def render_text(journeys: Sequence[Journey]) -> str:
    out: list[str] = []
    for j in journeys:
        out.append(f"{'ok    ' if j.ok else 'FAILED'} {j.tenant} -> {j.pool} ({j.resource})\n")
        for step in j.steps:
            mark = "ok  " if step.ok and step.checked else "skip" if step.ok else "FAIL"
            out.append(f"    {mark} {step.step}: {step.detail}\n")
    failed = sum(not j.ok for j in journeys)
    out.append(f"{len(journeys)} journey(s): {len(journeys) - failed} ok, {failed} failed\n")
    out += [f"{line}\n" for line in not_checked_lines(journeys)]
    out.append("not modelled by verify (the e2e suite runs the real controllers for these):\n")
    out.extend(f"  - {item}\n" for item in NOT_MODELLED)
    return "".join(out)


def not_checked_lines(journeys: Sequence[Journey]) -> list[str]:
    """What could not be checked here, once per step and reason (none when everything was)."""
    reasons: dict[str, set[str]] = {}
    count = 0
    for j in journeys:
        for step in j.unchecked:
            count += 1
            why = step.detail.rpartition("not checked: ")[2]
            reasons.setdefault(step.step, set()).add(why.rpartition("; whether its feature gate is on: ")[2])
    if not count:
        return []
    lines = [f"{count} step(s) not checked (not failures):"]
    lines += [f"    {step}: {why}" for step, whys in reasons.items() for why in sorted(whys)]
    return lines


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(journeys: Sequence[Journey]) -> str:
    """The pull-request comment's section: journeys ok / failed, the failing steps folded below."""
    failed = [j for j in journeys if not j.ok]
    out = ["### Verify\n\n", f"{len(journeys) - len(failed)} of {len(journeys)} journey(s) reach a GPU.\n"]
    unchecked = not_checked_lines(journeys)
    if unchecked:
        out.append("\n" + "".join(f"> {line.strip()}\n" for line in unchecked))
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


def failing_lines(journeys: Sequence[Journey]) -> list[str]:
    """One line per broken journey and the steps it breaks at: what the comment leads with."""
    return [
        f"{j.tenant} → {j.pool} (`{j.resource}`) breaks at {', '.join(dict.fromkeys(s.step for s in j.failed))}"
        for j in journeys
        if not j.ok
    ]


def markdown_section(
    model: Platform, plan: Plan, resources: Sequence[Mapping[str, Any]], charts: ChartDirectory = NO_CHARTS
) -> tuple[str, list[str] | None]:
    """The section for a recorded stack and its broken journeys, or a note (and None: not known)
    when the charts cannot be rendered here."""
    from .journeys import verify

    try:
        journeys = verify(model, plan, resources, charts)
    except (RenderUnavailable, RenderError) as err:
        return f"### Verify\n\n> [!NOTE]\n> Not verified: {err}\n", None
    return render_markdown(journeys), failing_lines(journeys)
