"""Rules on the EKS endpoint's exposure and the hot tier's backups and EFA (provider aws)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from gpuplat.diagnostics import Level
from gpuplat.validate.registry import Finding, rule
from gpuplat.validate.rules._common import Data, as_list, as_str, is_int, provider, section
from gpuplat.vocabulary import DEFAULT_ENDPOINT

EKS_ENDPOINT_DOCS = "https://docs.aws.amazon.com/eks/latest/userguide/cluster-endpoint.html"
FSX_BACKUPS_DOCS = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/using-backups-fsx.html"
FSX_EFA_DOCS = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/efa-file-systems.html"


def _cidrs(data: Data) -> list[tuple[int, str]]:
    target = section(data, "target")
    raw = as_list(target.get("publicAccessCidrs")) if target is not None else []
    return [(i, c) for i, c in enumerate(raw) if isinstance(c, str)]


@rule(
    "GP249",
    "public-access-cidrs",
    Level.ERROR,
    "EKS applies publicAccessCidrs only to a public endpoint and accepts only IPv4 network addresses.",
    source=EKS_ENDPOINT_DOCS,
    fix="Use `publicAccessCidrs` only with `endpoint: public`, as IPv4 network addresses (e.g. 203.0.113.0/24).",
)
def public_access_cidrs(data: Data) -> Iterator[Finding]:
    target = section(data, "target")
    if provider(data) != "aws" or target is None or "publicAccessCidrs" not in target:
        return
    if target.get("endpoint", DEFAULT_ENDPOINT) != "public":
        yield Finding(
            ("target", "publicAccessCidrs"),
            "publicAccessCidrs restrict a public endpoint, but target.endpoint is private (reachable only inside "
            "the VPC); remove them or set endpoint: public",
            at_key=True,
        )
        return
    for i, cidr in _cidrs(data):
        try:
            ipaddress.IPv4Network(cidr, strict=True)
        except ValueError as err:
            yield Finding(("target", "publicAccessCidrs", i), f"{cidr} is not an IPv4 network address ({err})")


@rule(
    "GP306",
    "public-endpoint-open",
    Level.WARNING,
    "A public EKS endpoint open to 0.0.0.0/0 lets anyone on the internet try the API; IAM still authenticates.",
    source=EKS_ENDPOINT_DOCS,
    fix="Set `target.publicAccessCidrs` to your networks, or `endpoint: private`.",
)
def public_endpoint_open(data: Data) -> Iterator[Finding]:
    target = section(data, "target")
    if provider(data) != "aws" or target is None or target.get("endpoint") != "public":
        return
    for i, cidr in _cidrs(data):
        if cidr.endswith("/0"):
            yield Finding(
                ("target", "publicAccessCidrs", i),
                f"{cidr} opens the public API endpoint to the whole internet; name the networks that deploy "
                f"and operate the cluster (VPN, CI runners) instead",
            )


@rule(
    "GP259",
    "hot-backup-with-data-repository",
    Level.ERROR,
    "FSx for Lustre backs up only persistent file systems not linked to a data repository; the hot tier "
    "exports to the cold bucket through one.",
    source=FSX_BACKUPS_DOCS,
    fix=(
        "Set `storage.hot.backupRetentionDays: 0` (the cold bucket's versioned export is the copy), or remove "
        "`storage.cold`."
    ),
)
def hot_backup_with_data_repository(data: Data) -> Iterator[Finding]:
    hot, cold = section(data, "storage", "hot"), section(data, "storage", "cold")
    if provider(data) != "aws" or hot is None or cold is None:
        return
    days = hot.get("backupRetentionDays")
    if is_int(days) and days > 0:
        yield Finding(
            ("storage", "hot", "backupRetentionDays"),
            f"the hot tier exports to the cold bucket (a data repository association), and FSx does not back up "
            f"such file systems, so {days} days of backups cannot be kept; the cold bucket's versioned export is "
            f"the copy: set backupRetentionDays: 0 or remove storage.cold",
        )


@rule(
    "GP307",
    "hot-efa-available",
    Level.WARNING,
    "FSx for Lustre PERSISTENT_2 serves EFA clients with GPUDirect Storage, many times a TCP client's "
    "throughput per node; it is fixed when the file system is created.",
    source=FSX_EFA_DOCS,
    fix="Set `storage.hot.efa: true` before the first deploy (it replaces an existing file system), or acknowledge it.",
)
def hot_efa_available(data: Data) -> Iterator[Finding]:
    hot, fabric = section(data, "storage", "hot"), section(data, "network", "fabric")
    if provider(data) != "aws" or hot is None or fabric is None or "efa" in hot:
        return
    if as_str(fabric.get("transport")) not in (None, "efa"):
        return
    yield Finding(
        ("storage", "hot"),
        "the fabric uses EFA but the hot tier's file systems do not: a new file system can (efa: true, with "
        "GPUDirect Storage); an existing one would be replaced and lose its data, so set efa: false to keep it",
        at_key=True,
    )
