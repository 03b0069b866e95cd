"""Where the cluster's Kubernetes minor stands on the EKS support calendar (provider aws)."""

from __future__ import annotations

from gpuplat.catalog.eks import EKS_CALENDAR_AS_OF, EKS_CALENDAR_SOURCE, EKS_VERSIONS, support_phase
from gpuplat.model import Platform, Provider
from gpuplat.plan.types import EksSupport


def eks_support(model: Platform) -> EksSupport | None:
    if model.target.provider is not Provider.AWS:
        return None
    version = model.target.kubernetes_version
    known = EKS_VERSIONS.get(version)
    return EksSupport(
        phase=support_phase(version),
        standard_end=known.standard_end if known else None,
        extended_end=known.extended_end if known else None,
        calendar_as_of=EKS_CALENDAR_AS_OF,
        calendar_source=EKS_CALENDAR_SOURCE,
    )
