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


def kubernetes_text(model: Platform) -> str:
    version = model.target.kubernetes_version
    if model.target.provider is not Provider.AWS:
        return f"Kubernetes {version}\n"
    known = EKS_VERSIONS.get(version)
    phase = support_phase(version)
    if known is None:
        when = "not in the EKS calendar"
    elif phase == "standard":
        when = f"EKS standard support until {known.standard_end}, extended until {known.extended_end}"
    elif phase == "extended":
        when = f"EKS extended support (extra per-cluster-hour fee) until {known.extended_end}"
    else:
        when = f"EKS support ended {known.extended_end}"
    return f"Kubernetes {version}: {when} (EKS calendar as of {EKS_CALENDAR_AS_OF})\n"
