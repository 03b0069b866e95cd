"""The planner: derived numbers (procurement split, sharing capacity, fabric, storage, cost)."""

from gpuplat.plan.types import Plan, PlanFinding, PlanOutcome


def build_plan(model: object) -> PlanOutcome:  # placeholder until the planner lands
    raise NotImplementedError


__all__ = ["Plan", "PlanFinding", "PlanOutcome", "build_plan"]
