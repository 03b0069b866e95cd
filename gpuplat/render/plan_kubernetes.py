"""The cluster's Kubernetes version against the EKS support calendar, for the plan.

The plan says which support phase the version is in and until when, next to the date of the
calendar it was measured against: a reader of an old plan sees how old the facts are.
"""

from __future__ import annotations

from typing import Any

from gpuplat.catalog.eks import EKS_CALENDAR_AS_OF, EKS_CALENDAR_SOURCE, EKS_VERSIONS, support_phase
from gpuplat.model import Platform, Provider

Json = dict[str, Any]


def kubernetes_json(model: Platform) -> Json:
    version = model.target.kubernetes_version
    if model.target.provider is not Provider.AWS:
        return {"version": version}
    known = EKS_VERSIONS.get(version)
    return {
        "version": version,
        "eksSupport": support_phase(version),
        "standardSupportEnds": known.standard_end if known else None,
        "extendedSupportEnds": known.extended_end if known else None,
        "calendarAsOf": EKS_CALENDAR_AS_OF,
        "calendarSource": EKS_CALENDAR_SOURCE,
    }


def kubernetes_facts(model: Platform) -> Json:
    """What the plan's Kubernetes line says (templates/plan.txt.j2): the version, on aws its phase."""
    version = model.target.kubernetes_version
    known = EKS_VERSIONS.get(version) if model.target.provider is Provider.AWS else None
    return {
        "version": version,
        "aws": model.target.provider is Provider.AWS,
        "known": known is not None,
        "phase": support_phase(version) if model.target.provider is Provider.AWS else None,
        "standard_end": known.standard_end if known else None,
        "extended_end": known.extended_end if known else None,
        "as_of": EKS_CALENDAR_AS_OF,
    }
