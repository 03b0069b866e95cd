"""The rules an organisation configures (policy_config): required tags and a GPU budget.

Registered into policies.REGISTRY when policies is imported, after its own rules.
"""

from __future__ import annotations

from collections.abc import Sequence

from .policies import COMPUTED, UNTAGGABLE, Context, Resource, _map, _rule, _stack_rule  # pyright: ignore[reportPrivateUsage]


@_rule("aws-required-tags", "mandatory", "Taggable AWS resources carry the organisation's required tag keys")
def _required_tags(r: Resource, ctx: Context) -> list[str]:
    tags = r.props.get("tags")
    if not r.type.startswith("aws:") or r.type in UNTAGGABLE or tags == COMPUTED:
        return []
    present = {k for k, v in _map(tags).items() if v not in (None, "")}
    missing = [k for k in ctx.config.required_tags if k not in present]
    return [f"missing required tags: {', '.join(missing)}"] if missing else []


@_stack_rule("gpu-budget", "The plan's expected monthly GPU spend stays under the configured cap", "advisory")
def _gpu_budget(resources: Sequence[Resource], ctx: Context) -> list[tuple[str, str]]:
    # Fed by the plan (cost.py), not by the resources: node counts are decided by the planner and
    # Karpenter at run time, so the recorded objects carry limits, never a bill.
    cap, cost = ctx.config.gpu_budget_monthly_usd, ctx.gpu_monthly_usd
    if cap is None:
        return []
    if cost is None:
        return [("", f"a GPU budget of ${cap:,.0f}/month is set but the plan has no cost (spec has no procurement)")]
    if cost > cap:
        return [("", f"expected GPU spend ${cost:,.0f}/month exceeds the budget of ${cap:,.0f}/month")]
    return []
