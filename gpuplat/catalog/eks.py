# pyright: strict
"""Kubernetes minor versions on Amazon EKS and the dates their support ends.

Source (read 2026-12-03): the Amazon EKS Kubernetes release calendar,
https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html#kubernetes-release-calendar
(cross-checked with https://endoflife.date/amazon-eks). A minor gets 14 months of standard support
from its EKS release, then 12 months of extended support billed per cluster hour on top of the
standard EKS fee; after that EKS refuses CreateCluster on it and auto-upgrades running clusters.
The dates are the days the calendar names: extended-support billing starts on the day standard
support ends, and CreateCluster is refused from the day extended support ends.

`check` measures the spec against this calendar on EKS_CALENDAR_AS_OF, not on the machine's clock:
the same spec gives the same answer until the table is bumped (bump the date with the rows).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

EKS_CALENDAR_AS_OF = "2026-12-03"
EKS_CALENDAR_SOURCE = (
    "https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html#kubernetes-release-calendar"
)


@dataclass(frozen=True)
class EksVersion:
    minor: str
    standard_end: str  # ISO dates (YYYY-MM-DD) compare as strings
    extended_end: str


def _versions(*rows: tuple[str, str, str]) -> Mapping[str, EksVersion]:
    return MappingProxyType({row[0]: EksVersion(*row) for row in rows})


EKS_VERSIONS: Mapping[str, EksVersion] = _versions(
    ("1.29", "2025-03-23", "2026-03-23"),
    ("1.30", "2025-07-23", "2026-07-23"),
    ("1.31", "2025-11-26", "2026-11-26"),
    ("1.32", "2026-03-23", "2027-03-23"),
    ("1.33", "2026-07-29", "2027-07-29"),
    ("1.34", "2026-12-02", "2027-12-02"),
    ("1.35", "2027-03-27", "2028-03-27"),
    # Released on EKS in 2026-06 (AMIs: NODE_AMI_ALIASES below); the calendar's day was not read
    # with the rest, so the ends count 14 and 26 months from 2026-06-01, the earliest it can be:
    # the warnings come no later than AWS's. Replace with the calendar's days when it is read again.
    ("1.36", "2027-08-01", "2028-08-01"),
)


def support_phase(minor: str, on: str = EKS_CALENDAR_AS_OF) -> str:
    """`standard`, `extended`, `ended` or `unknown` (a minor this calendar does not list) on a date."""
    version = EKS_VERSIONS.get(minor)
    if version is None:
        return "unknown"
    if on < version.standard_end:
        return "standard"
    if on < version.extended_end:
        return "extended"
    return "ended"


def offered(on: str = EKS_CALENDAR_AS_OF) -> tuple[str, ...]:
    """The minors EKS creates clusters on, in standard or extended support, on a date."""
    return tuple(m for m in EKS_VERSIONS if support_phase(m, on) in ("standard", "extended"))


# The EKS-optimized AL2023 AMI release GPU nodes launch, per Kubernetes minor, as a Karpenter
# alias. Pinned rather than `al2023@latest`: with `latest` every new AMI EKS publishes becomes
# drift and Karpenter replaces production GPU nodes one by one, unreviewed; a pin moves only
# when this table (or the spec's `target.nodeAmi`) does, and the change shows in the preview.
# Source (read 2026-12-03): awslabs/amazon-eks-ami CHANGELOG.md at 81fec2e8 (2026-07-23), release
# v20260714, which lists amazon-eks-node-al2023-x86_64-nvidia-1.30 ... 1.36-v20260714.
NODE_AMI_SOURCE = "https://github.com/awslabs/amazon-eks-ami/releases/tag/v20260714"
NODE_AMI_ALIASES: Mapping[str, str] = MappingProxyType(
    {minor: "al2023@v20260714" for minor in ("1.30", "1.31", "1.32", "1.33", "1.34", "1.35", "1.36")}
)


def node_ami_alias(minor: str, override: str | None = None) -> str:
    """The spec's pin, else the catalog's for the minor; `al2023@latest` only for a minor it lacks."""
    return override or NODE_AMI_ALIASES.get(minor, "al2023@latest")
