"""`gpuplat preview --format markdown`: the pull-request comment.

Sections: resource changes (or, without --base, resources by type), per-pool capacity and
market changes, the reference workloads' fit (report_workloads.py), monthly cost delta,
policy results, `gpuplat verify`'s journeys (when given) and a mermaid diagram of the platform.

The numbers come from the plan JSON (`gpuplat plan --format json`) on both sides. The head's is built
in-process; the base's comes from the base checkout's own `python -m gpuplat.cli plan`
(PYTHONPATH and cwd = the checkout), never from importing base code here, so a pull request
that changes the planner compares the old planner's numbers with the new one's.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

from gpuplat.graph import platform_mermaid
from gpuplat.model import Platform
from gpuplat.plan.report import plan_json
from gpuplat.plan.types import Plan
from gpuplat.vocabulary import MARKET_ORDER

from .diff import OPS, Change
from .engine import RecordedResource
from .report_summary import fold, lead, resources_section
from .report_workloads import workloads_section

Json = dict[str, Any]
MARKETS = tuple((m.procurement_key, m.value) for m in MARKET_ORDER)  # (plan JSON key, market)
_DETAILS_OVER = 25  # past this many rows the table folds away, keeping cost and policy in view


@dataclass(frozen=True)
class PlanResult:
    plan: Json | None
    note: str | None = None  # why there is no plan


class ViolationLike(Protocol):
    @property
    def policy(self) -> str: ...
    @property
    def level(self) -> str: ...
    @property
    def urn(self) -> str: ...
    @property
    def message(self) -> str: ...


@dataclass(frozen=True)
class PolicyResult:
    violations: Sequence[ViolationLike] | None
    note: str | None = None


@dataclass(frozen=True)
class Report:
    stack: str
    model: Platform
    plan: Plan
    resources: Sequence[RecordedResource]
    changes: Sequence[Change] | None
    base_ref: str | None
    base_plan: PlanResult | None
    policy: PolicyResult
    allow_replace: bool = False
    verify: str | None = None  # `gpuplat verify`'s markdown section, when computed


def base_plan(root: Path, stack: str, spec: str | None, overlay: str | None) -> PlanResult:
    """The base checkout's own `gpuplat plan --format json`, run in a subprocess."""
    if not (root / "gpuplat" / "cli.py").is_file():
        return PlanResult(None, "the base has no gpuplat planner")
    command = [sys.executable, "-m", "gpuplat.cli", "plan", "--stack", stack, "--format", "json"]
    if spec:
        command += ["--spec", spec]
    if overlay is not None:
        command += ["--overlay", overlay]
    path = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)
    try:
        done = subprocess.run(
            command,
            cwd=root,
            env={**os.environ, "PYTHONPATH": path},
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return PlanResult(None, f"gpuplat plan could not run at the base ({err})")
    if done.returncode == 2 and "invalid choice" in done.stderr:
        return PlanResult(None, "the base's gpuplat has no plan command")
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return PlanResult(None, f"gpuplat plan failed at the base (exit {done.returncode}): {last}")
    try:
        loaded = json.loads(done.stdout)
    except json.JSONDecodeError:
        return PlanResult(None, "the base's gpuplat plan printed no JSON document")
    if not isinstance(loaded, dict) or "pools" not in loaded:
        return PlanResult(None, "the base's plan JSON has no pools")
    return PlanResult(cast("Json", loaded))


def evaluate_policy(
    resources: Sequence[RecordedResource],
    stack: str,
    tag_keys: Collection[str] | None = None,
    gpu_monthly_usd: float | None = None,
) -> PolicyResult:
    """Offline policy results, as `gpuplat policy` finds them; a note when the pack is missing."""
    try:
        module = importlib.import_module("gpuplat.preview.policy_command")
    except ImportError as err:
        return PolicyResult(None, f"policy pack not available ({err})")
    evaluate = getattr(module, "evaluate", None)
    if not callable(evaluate):
        return PolicyResult(None, "policy pack not available (gpuplat.preview.policy_command has no evaluate)")
    # The spec's tag keys sharpen the tagging policy; a pack without that parameter gets none.
    accepts_tags = "tag_keys" in inspect.signature(evaluate).parameters
    extra: dict[str, Any] = {"tag_keys": tag_keys} if accepts_tags and tag_keys is not None else {}
    if "config" in inspect.signature(evaluate).parameters:
        # The organisation's settings (policy/config.json), as `gpuplat policy` reads them.
        try:
            extra |= {"config": module.policy_config(None), "gpu_monthly_usd": gpu_monthly_usd}
        except Exception as err:
            return PolicyResult(None, f"policy configuration not readable: {err}")
    try:
        violations = list(cast("Sequence[ViolationLike]", evaluate(resources, stack=stack, **extra)))
    except Exception as err:  # a policy bug must not hide the rest of the comment
        return PolicyResult(None, f"policy evaluation failed: {type(err).__name__}: {err}")
    return PolicyResult(violations)


# ---- formatting ---------------------------------------------------------------------------------


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: Sequence[str], rows: Sequence[Sequence[object]], right: int = 0) -> str:
    """Markdown table; the last `right` columns are right-aligned (numbers)."""
    align = ["---"] * (len(header) - right) + ["---:"] * right
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "| " + " | ".join(align) + " |"]
    lines.extend("| " + " | ".join(_cell(c) for c in row) + " |" for row in rows)
    return "\n".join(lines) + "\n"


def usd(value: float) -> str:
    return f"-${-value:,.2f}" if value < 0 else f"${value:,.2f}"


def usd_delta(value: float) -> str:
    return "±$0.00" if round(value, 2) == 0 else ("+" if value > 0 else "") + usd(value)


def _arrow(before: object, after: object) -> str:
    return str(after) if before == after else f"{before} → {after}"


# ---- sections ---------------------------------------------------------------------------------


def _changes_section(changes: Sequence[Change], head_count: int, allow_replace: bool) -> str:
    counts = Counter(c.op for c in changes)
    unchanged = head_count - sum(c.op != "delete" for c in changes)
    out = ["### Resource changes\n\n"]
    out.append(_table([*OPS, "unchanged"], [[*(counts.get(op, 0) for op in OPS), unchanged]], right=5))
    blocked = [(c, reason) for c in changes for reason in c.blocked]
    if blocked:
        lines = "".join(f"> - **`{c.name}`** ({c.type}): {reason}\n" for c, reason in blocked)
        out.append(
            f"\n> [!CAUTION]\n> {len(blocked)} change(s) AWS would refuse; the preview fails, "
            f"`--allow-replace` or not:\n{lines}"
        )
    refused = [c for c in changes if c.refused]
    if refused:
        verdict = "accepted with `--allow-replace`" if allow_replace else "the preview fails unless `--allow-replace`"
        names = ", ".join(f"**{c.op} `{c.name}`** ({c.type})" for c in refused)
        out.append(
            f"\n> [!WARNING]\n> {len(refused)} stateful resource(s) would lose their data: {names}; {verdict}.\n"
        )
    drains = [c for c in changes if c.drains]
    if drains:
        names = ", ".join(f"`{c.drains}`" for c in drains)
        out.append(
            f"\n> [!WARNING]\n> {len(drains)} NodePool(s) deleted or replaced ({names}): Karpenter will drain "
            "their nodes (the NodeClaims go with their NodePool) and evict the GPU jobs running there.\n"
        )
    if not changes:
        out.append("\nNo resource changes.\n")
        return "".join(out)
    rows: list[list[str]] = []
    for c in changes:
        fields = ", ".join(f"`{f.path}`" + (" (forces replacement)" if f.replaces else "") for f in c.fields)
        if c.blocked:
            rows.append([f"**{c.op}** ⛔", f"**`{c.name}`** (refused by AWS)", f"`{c.type}`", fields])
        elif c.refused:
            rows.append([f"**{c.op}** ⚠️", f"**`{c.name}`** (stateful)", f"`{c.type}`", fields])
        else:
            rows.append([c.op, f"`{c.name}`", f"`{c.type}`", fields])
    table = _table(["op", "resource", "type", "changed fields"], rows)
    if len(rows) > _DETAILS_OVER:
        table = f"<details><summary>{len(rows)} changed resources</summary>\n\n{table}\n</details>\n"
    out.append("\n" + table)
    return "".join(out)


def _pool_markets(plan: Json) -> dict[str, dict[str, tuple[int, int]]]:
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for pool in cast("list[Json]", plan.get("pools") or []):
        markets = cast("Json", pool.get("markets") or {})
        out[str(pool["name"])] = {
            key: (int(markets.get(key, {}).get("nodes", 0)), int(markets.get(key, {}).get("gpus", 0)))
            for key, _ in MARKETS
        }
    return out


def _capacity_section(head: Json, base: Json | None) -> str:
    out = ["### Capacity and markets\n\n"]
    now = _pool_markets(head)
    before = _pool_markets(base) if base is not None else None
    rows: list[list[str]] = []
    for pool in [*now, *(p for p in (before or {}) if p not in now)]:
        after_m = now.get(pool)
        before_m = before.get(pool) if before is not None else None
        label = (
            pool + (" (new)" if before is not None and before_m is None else "") + (" (removed)" if not after_m else "")
        )
        for key, market in MARKETS:
            a = after_m[key] if after_m else (0, 0)
            b = before_m[key] if before_m else (0, 0)
            if a == b == (0, 0):
                continue
            if before is None:
                rows.append([label, market, str(a[0]), str(a[1])])
            else:
                rows.append([label, market, _arrow(b[0], a[0]), _arrow(b[1], a[1])])
    out.append("Nodes and GPUs per market, every pool at max size" + (" (base → head)" if base else "") + ".\n\n")
    out.append(_table(["pool", "market", "nodes", "GPUs"], rows, right=2))
    fleet_now = cast("Json", head.get("fleet") or {})
    fleet_before = cast("Json", (base or {}).get("fleet") or {})
    totals = [
        _arrow(
            cast("Json", fleet_before.get("markets") or {}).get(k, 0),
            cast("Json", fleet_now.get("markets") or {}).get(k, 0),
        )
        if base
        else str(cast("Json", fleet_now.get("markets") or {}).get(k, 0))
        for k, _ in MARKETS
    ]
    gpus = _arrow(fleet_before.get("gpus"), fleet_now.get("gpus")) if base else str(fleet_now.get("gpus"))
    out.append("\n" + _table(["fleet GPUs", *(m for _, m in MARKETS)], [[gpus, *totals]], right=3))
    storage = _storage_rows(head, base)
    if storage:
        out.append("\n" + _table(["storage tier", "capacity"], storage, right=1))
    return "".join(out)


def _tier_sizes(plan: Json | None) -> dict[str, str]:
    storage = cast("Json", (plan or {}).get("storage") or {})
    hot, warm = cast("Json | None", storage.get("hot")), cast("Json | None", storage.get("warm"))
    sizes: dict[str, str] = {}
    if hot:
        sizes["hot"] = f"{hot.get('capacityGiB')} GiB"
    if warm:
        sizes["warm"] = f"{warm.get('capacityTiB')} TiB"
    return sizes


def _storage_rows(head: Json, base: Json | None) -> list[list[str]]:
    now, before = _tier_sizes(head), _tier_sizes(base)
    if base is None:
        return [[tier, size] for tier, size in now.items()]
    tiers = [*now, *(t for t in before if t not in now)]
    return [[tier, _arrow(before.get(tier, "none"), now.get(tier, "none"))] for tier in tiers]


def _cost(plan: Json | None) -> Json | None:
    return cast("Json | None", plan.get("cost")) if plan else None


def _pool_costs(cost: Json) -> dict[str, float]:
    return {
        str(p["name"]): sum(float(v) for v in cast("Json", p.get("monthlyUsd") or {}).values())
        for p in cast("list[Json]", cost.get("pools") or [])
    }


def _services(cost: Json | None) -> float | None:
    """Monthly USD of the services beside the GPU nodes; None from a planner that did not price them."""
    value = cost.get("servicesMonthlyUsd") if cost else None
    return float(value) if isinstance(value, int | float) else None


def _service_rows(now: Json, before: Json | None) -> list[list[str]]:
    """Services and GPU + services, base -> head (a base without them shows `-`)."""
    s_now, s_before = _services(now), _services(before)
    if s_now is None:
        return []
    t_now = float(now["monthlyUsd"]) + s_now
    if before is None:
        return [["services (control plane, NAT, storage)", usd(s_now)], ["GPU + services", usd(t_now)]]
    label = "services (control plane, NAT, storage)"
    if s_before is None:
        return [[label, "-", usd(s_now), ""], ["GPU + services", "-", usd(t_now), ""]]
    t_before = float(before["monthlyUsd"]) + s_before
    return [
        [label, usd(s_before), usd(s_now), usd_delta(s_now - s_before)],
        ["GPU + services", usd(t_before), usd(t_now), usd_delta(t_now - t_before)],
    ]


def _assumption_notes(cost: Json) -> str:
    notes = cast("list[Json]", cost.get("assumptions") or [])
    return "".join(f"\n- assumption `{a['name']}`: {a['text']}" for a in notes) + ("\n" if notes else "")


def _cost_section(head: Json, base: Json | None) -> str:
    out = ["### Monthly cost\n\n"]
    now, before = _cost(head), _cost(base)
    if now is None:
        return out[0] + "No procurement on provider kubernetes: the nodes are already owned.\n"
    if base is None or before is None:
        rows = [
            ["total", usd(float(now["monthlyUsd"]))],
            ["all on-demand", usd(float(now["allOnDemandMonthlyUsd"]))],
            ["savings", f"{now['savingsPercent']} %"],
            *_service_rows(now, None),
        ]
        return out[0] + _table(["", "USD / month"], rows, right=1) + _assumption_notes(now)
    total_now, total_before = float(now["monthlyUsd"]), float(before["monthlyUsd"])
    delta = round(total_now - total_before, 2)
    pct = f" ({100 * delta / total_before:+.1f} %)" if total_before and delta else ""
    rows = [["**total**", usd(total_before), usd(total_now), f"**{usd_delta(delta)}**{pct}"]]
    pools_now, pools_before = _pool_costs(now), _pool_costs(before)
    for pool in [*pools_now, *(p for p in pools_before if p not in pools_now)]:
        a, b = pools_now.get(pool, 0.0), pools_before.get(pool, 0.0)
        rows.append([pool, usd(b), usd(a), usd_delta(a - b)])
    on_demand_now, on_demand_before = float(now["allOnDemandMonthlyUsd"]), float(before["allOnDemandMonthlyUsd"])
    rows.append(
        ["all on-demand", usd(on_demand_before), usd(on_demand_now), usd_delta(on_demand_now - on_demand_before)]
    )
    rows.append(["savings", f"{before['savingsPercent']} %", f"{now['savingsPercent']} %", ""])
    rows.extend(_service_rows(now, before))
    out.append(_table(["", "base", "head", "delta"], rows, right=3))
    out.append(_assumption_notes(now))
    return "".join(out)


def _policy_section(policy: PolicyResult) -> str:
    out = ["### Policy\n\n"]
    if policy.violations is None:
        return out[0] + f"> [!NOTE]\n> {policy.note}\n"
    if not policy.violations:
        return out[0] + "No policy violations.\n"
    mandatory = sum(v.level == "mandatory" for v in policy.violations)
    out.append(f"{len(policy.violations)} violation(s), {mandatory} mandatory.\n\n")
    rows = [
        [f"**{v.level}**" if v.level == "mandatory" else v.level, v.policy, f"`{v.urn.rpartition('::')[2]}`", v.message]
        for v in sorted(policy.violations, key=lambda v: (v.level != "mandatory", v.policy, v.urn))
    ]
    out.append(_table(["level", "policy", "resource", "message"], rows))
    return "".join(out)


def render_markdown(report: Report) -> str:
    head_plan = plan_json(report.model, report.plan)
    title = f"## gpuplat preview: stack `{report.stack}`"
    out = [title + (f" against `{report.base_ref}`" if report.base_ref else "") + "\n\n"]
    base: Json | None = None
    if report.changes is not None:
        result = report.base_plan or PlanResult(None, "the base plan was not computed")
        base = result.plan
    # First what changes and what it costs; the details follow, long ones folded.
    out.append(lead(report.resources, report.changes, (_cost(head_plan), _cost(base)), report.policy.violations))
    if report.changes is not None:
        out.append(_changes_section(report.changes, len(report.resources), report.allow_replace))
        result = report.base_plan or PlanResult(None, "the base plan was not computed")
        if base is None:
            out.append(f"\n> [!NOTE]\n> Base plan not available: {result.note}; showing the head's numbers only.\n")
    else:
        out.append(resources_section(report.resources, _table))
    out.append("\n" + _capacity_section(head_plan, base))
    if workloads := workloads_section(head_plan, base, _table):
        out.append("\n" + workloads)
    out.append("\n" + _cost_section(head_plan, base))
    out.append("\n" + _policy_section(report.policy))
    if report.verify is not None:
        out.append("\n" + report.verify)
    diagram = "```mermaid\n" + platform_mermaid(report.model, report.plan) + "```\n"
    out.append("\n### Platform\n\n" + fold("diagram", diagram))
    return "".join(out)
