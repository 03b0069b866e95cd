"""The plan's Kubernetes line: the cluster's version and, on aws, its EKS support phase (the
plan computes the phase; this module only shapes it for the JSON document and the text).
"""

from __future__ import annotations

from typing import Any

from gpuplat.model import Platform
from gpuplat.plan import Plan

Json = dict[str, Any]


def kubernetes_json(model: Platform, plan: Plan) -> Json:
    version = model.target.kubernetes_version
    support = plan.eks_support
    if support is None:
        return {"version": version}
    return {
        "version": version,
        "eksSupport": support.phase,
        "standardSupportEnds": support.standard_end,
        "extendedSupportEnds": support.extended_end,
        "calendarAsOf": support.calendar_as_of,
        "calendarSource": support.calendar_source,
    }


def kubernetes_facts(model: Platform, plan: Plan) -> Json:
    """What the plan's Kubernetes line says (templates/plan.txt.j2): the version, on aws its phase."""
    support = plan.eks_support
    return {
        "version": model.target.kubernetes_version,
        "aws": support is not None,
        "known": support is not None and support.phase != "unknown",
        "phase": support.phase if support else None,
        "standard_end": support.standard_end if support else None,
        "extended_end": support.extended_end if support else None,
        "as_of": support.calendar_as_of if support else None,
    }
