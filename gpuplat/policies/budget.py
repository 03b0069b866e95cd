"""The GPU budget the organisation configures (config.py), held against the plan's GPU spend at max size
(every pool at nodes.max all month: the most the fleet can cost, not a forecast)."""

from __future__ import annotations

from collections.abc import Sequence

from ._base import Context, Resource, stack_rule


@stack_rule(
    "gpu-budget",
    "The monthly GPU spend at max size (every pool at nodes.max) stays under the configured cap",
    "advisory",
)
def _gpu_budget(resources: Sequence[Resource], ctx: Context) -> list[tuple[str, str]]:
    # Fed by the plan (cost.py), not by the resources: node counts are decided by the planner and
    # Karpenter at run time, so the recorded objects carry limits, never a bill.
    cap, cost = ctx.config.gpu_budget_monthly_usd, ctx.gpu_monthly_usd
    if cap is None:
        return []
    if cost is None:
        return [("", f"a GPU budget of ${cap:,.0f}/month is set but the plan has no cost (spec has no procurement)")]
    if cost > cap:
        return [("", f"GPU spend at max size ${cost:,.0f}/month exceeds the budget of ${cap:,.0f}/month")]
    return []
