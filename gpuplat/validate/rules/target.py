"""Rules on `target` and on fields that only one provider reads."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpuplat.catalog.eks import EKS_CALENDAR_AS_OF, EKS_VERSIONS, offered, support_phase
from gpuplat.catalog.regions import REGIONS, ZONE_LETTERS
from gpuplat.diagnostics import Level
from gpuplat.validate.registry import Finding, rule
from gpuplat.validate.rules._common import Data, as_list, as_str, did_you_mean, provider, section

_VERSION = re.compile(r"^1\.(\d{2})$")
# The schema's forms of region and zone names; malformed ones are its to report.
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")
_ZONE = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d[a-z]$")

# (path, provider that reads it): fields the other provider silently ignores.
_PROVIDER_ONLY: tuple[tuple[tuple[str, ...], str], ...] = (
    (("target", "region"), "aws"),
    (("target", "zones"), "aws"),
    (("target", "fabricZone"), "aws"),
    (("target", "endpoint"), "aws"),
    (("target", "publicAccessCidrs"), "aws"),
    (("target", "bootstrapClusterCreatorAdmin"), "aws"),
    (("target", "nodeAmi"), "aws"),
    (("target", "addonVersions"), "aws"),
    (("storage", "hot", "backupRetentionDays"), "aws"),
    (("storage", "hot", "backupStartTime"), "aws"),
    (("storage", "hot", "efa"), "aws"),
    (("storage", "cold", "capacityTiB"), "aws"),
    (("target", "context"), "kubernetes"),
    (("network", "vpcCidr"), "aws"),
    (("storage", "hot", "throughputPerTiB"), "aws"),
    (("storage", "cold", "transitions"), "aws"),
    (("storage", "warm", "zoneId"), "aws"),
    (("storage", "hot", "storageClass"), "kubernetes"),
    (("storage", "warm", "storageClass"), "kubernetes"),
    (("storage", "cold", "storageClass"), "kubernetes"),
)


def _zones(data: Data) -> list[str]:
    target = section(data, "target")
    raw = as_list(target.get("zones")) if target is not None else []
    return [z for z in raw if isinstance(z, str)]


@rule(
    "GP210",
    "aws-region-required",
    Level.ERROR,
    "Every AWS resource (VPC, EKS, FSx, S3) is created in one region.",
    fix="Add `target.region` (an AWS region, e.g. us-east-1).",
)
def aws_region_required(data: Data) -> Iterator[Finding]:
    target = section(data, "target")
    if provider(data) == "aws" and target is not None and "region" not in target:
        yield Finding(("target",), "provider aws needs target.region, e.g. us-east-1", at_key=True)


@rule(
    "GP211",
    "aws-zones-required",
    Level.ERROR,
    "Subnets, node groups and the fabric's placement groups live in availability zones the spec names.",
    fix="Add `target.zones`: at least two availability zones of the region (e.g. [us-east-1a, us-east-1b]).",
)
def aws_zones_required(data: Data) -> Iterator[Finding]:
    target = section(data, "target")
    if provider(data) == "aws" and target is not None and "zones" not in target:
        region = as_str(target.get("region")) or "us-east-1"
        yield Finding(
            ("target",),
            f"provider aws needs target.zones, at least two zones of the region, e.g. [{region}a, {region}b]",
            at_key=True,
        )


@rule(
    "GP212",
    "zones-in-region",
    Level.ERROR,
    f"An AWS availability zone name is its region's name plus a letter {ZONE_LETTERS[0]}..{ZONE_LETTERS[-1]} "
    f"(the letters the VPC layout has subnets for; us-east-1, the largest region, ends at f).",
    source="https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/using-regions-availability-zones.html",
    fix="Name zones of `target.region`: the region's name plus a letter (us-east-1a ...).",
)
def zones_in_region(data: Data) -> Iterator[Finding]:
    target = section(data, "target")
    region = as_str(target.get("region")) if target is not None else None
    if provider(data) != "aws" or target is None or region is None or not _REGION.match(region):
        return
    for j, zone in enumerate(as_list(target.get("zones"))):
        if not isinstance(zone, str) or not _ZONE.match(zone):
            continue
        if not re.fullmatch(re.escape(region) + "[a-z]", zone):
            yield Finding(
                ("target", "zones", j),
                f"zone {zone} is not in region {region} (its zones are {region}a, {region}b, ...)",
            )
        elif zone[-1] not in ZONE_LETTERS:
            yield Finding(
                ("target", "zones", j),
                f"zone {zone} is not an availability zone: zone names end in a letter {ZONE_LETTERS[0]}.."
                f"{ZONE_LETTERS[-1]} (us-east-1, the largest region, has a..f), e.g. {region}a",
            )


@rule(
    "GP248",
    "fabric-zone-in-zones",
    Level.ERROR,
    "The fabric pools, FSx and the warm tier go to target.fabricZone, and the VPC has subnets only in "
    "target.zones: a fabric zone outside them has no subnet to put anything in.",
    fix="Set `target.fabricZone` to one of `target.zones`, or add it to them.",
)
def fabric_zone_in_zones(data: Data) -> Iterator[Finding]:
    target = section(data, "target")
    chosen = as_str(target.get("fabricZone")) if target is not None else None
    zones = _zones(data)
    if provider(data) != "aws" or chosen is None or not zones or chosen in zones:
        return
    yield Finding(
        ("target", "fabricZone"),
        f"fabric zone {chosen} is not one of target.zones ({', '.join(zones)}); name one of them, or add "
        f"{chosen} to target.zones",
    )


@rule(
    "GP293",
    "region-exists",
    Level.ERROR,
    "Resources can only be created in a region AWS runs (gpuplat/catalog/regions.py, with its source and date).",
    source="https://docs.aws.amazon.com/global-infrastructure/latest/regions/aws-regions.html",
    fix="Use an AWS region name (the message suggests the nearest).",
)
def region_exists(data: Data) -> Iterator[Finding]:
    target = section(data, "target")
    region = as_str(target.get("region")) if target is not None else None
    if provider(data) != "aws" or region is None or not _REGION.match(region) or region in REGIONS:
        return
    close = did_you_mean(region, REGIONS)
    hint = (
        f"did you mean {close}?"
        if close is not None
        else "e.g. us-east-1, us-west-2, eu-west-1, ... (the list: gpuplat/catalog/regions.py)"
    )
    yield Finding(("target", "region"), f"{region} is not an AWS region gpuplat knows; {hint}")


@rule(
    "GP213",
    "eks-two-zones",
    Level.ERROR,
    "EKS CreateCluster requires subnets in at least two availability zones.",
    source="https://docs.aws.amazon.com/eks/latest/userguide/network-reqs.html",
    fix="List at least two zones in `target.zones`.",
)
def eks_two_zones(data: Data) -> Iterator[Finding]:
    zones = _zones(data)
    if provider(data) == "aws" and len(set(zones)) == 1:
        yield Finding(
            ("target", "zones"),
            f"EKS needs subnets in at least two availability zones but zones lists only {zones[0]}; "
            f"add another zone of the region",
        )


def _eks_version(data: Data) -> str | None:
    target = section(data, "target")
    version = as_str(target.get("kubernetesVersion")) if target is not None else None
    if provider(data) != "aws" or version is None or not _VERSION.match(version):
        return None
    return version


def _offered() -> str:
    return ", ".join(offered())


@rule(
    "GP245",
    "eks-version-ended",
    Level.ERROR,
    "EKS refuses CreateCluster on a Kubernetes minor past its end of extended support "
    "(EKS release calendar, gpuplat/catalog/eks.py).",
    source="https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html",
    fix=(
        "Move `target.kubernetesVersion` to a minor EKS still supports (the message names them); upgrade one minor "
        "at a time."
    ),
)
def eks_version_ended(data: Data) -> Iterator[Finding]:
    version = _eks_version(data)
    if version is None:
        return
    known = EKS_VERSIONS.get(version)
    oldest = next(iter(EKS_VERSIONS))
    if known is not None and support_phase(version) == "ended":
        yield Finding(
            ("target", "kubernetesVersion"),
            f"Kubernetes {version} left EKS extended support on {known.extended_end}, so EKS refuses to create "
            f"a cluster on it; choose one of {_offered()} (EKS calendar as of {EKS_CALENDAR_AS_OF})",
        )
    elif known is None and tuple(map(int, version.split("."))) < tuple(map(int, oldest.split("."))):
        yield Finding(
            ("target", "kubernetesVersion"),
            f"Kubernetes {version} is older than every version EKS still runs; choose one of {_offered()} "
            f"(EKS calendar as of {EKS_CALENDAR_AS_OF})",
        )


@rule(
    "GP300",
    "eks-version-supported",
    Level.WARNING,
    "EKS bills extended-support minors at a higher per-cluster-hour rate, and a minor newer than the "
    "catalog's calendar may not be offered yet (gpuplat/catalog/eks.py).",
    source="https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html",
    fix=(
        "Plan the upgrade of `target.kubernetesVersion`, one minor at a time; acknowledge the warning "
        "(`acknowledge:`) with the reason until then."
    ),
)
def eks_version_supported(data: Data) -> Iterator[Finding]:
    version = _eks_version(data)
    if version is None:
        return
    known = EKS_VERSIONS.get(version)
    newest = next(reversed(tuple(EKS_VERSIONS)))
    if known is not None and support_phase(version) == "extended":
        yield Finding(
            ("target", "kubernetesVersion"),
            f"Kubernetes {version} left EKS standard support on {known.standard_end} and is in extended support "
            f"until {known.extended_end}, billed at the extended per-cluster-hour rate; upgrade one minor at a time to "
            f"{' or '.join(m for m in offered() if support_phase(m) == 'standard')} to pay the standard rate",
        )
    elif known is None and tuple(map(int, version.split("."))) > tuple(map(int, newest.split("."))):
        yield Finding(
            ("target", "kubernetesVersion"),
            f"Kubernetes {version} is newer than the EKS calendar gpuplat knows (as of {EKS_CALENDAR_AS_OF}, "
            f"newest {newest}); EKS will refuse it if it is not offered yet, and the catalog's charts are "
            f"not tested against it",
        )


@rule(
    "GP301",
    "provider-field-ignored",
    Level.WARNING,
    "aws builds its own VPC, EKS and storage; kubernetes uses an existing cluster and StorageClasses.",
    fix="Remove the field the provider does not use (the message names it).",
)
def provider_field_ignored(data: Data) -> Iterator[Finding]:
    kind = provider(data)
    if kind is None:
        return
    for path, reader in _PROVIDER_ONLY:
        parent = section(data, *path[:-1])
        if reader != kind and parent is not None and path[-1] in parent:
            yield Finding(
                path,
                f"{'.'.join(path)} is only read on provider {reader} and is ignored on provider {kind}",
                at_key=True,
            )
