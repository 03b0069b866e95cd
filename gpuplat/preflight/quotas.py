# pyright: strict
"""What the stack takes from the account's service quotas at `nodes.max`, and which quota holds it.

EC2 counts running instances in vCPUs per instance-family group, separately for on-demand and spot
("Amazon EC2 instance type quotas", EC2 User Guide). Instances launched into an on-demand capacity
reservation count against the on-demand quota, so a pool's reserved nodes held in ODCRs add to it;
nodes in a bought Capacity Block do not. Every private subnet's NAT gateway holds one Elastic IP.
FSx for Lustre limits the total storage of the account's file systems of one deployment type in
the region; the hot tier and its standard file system are both PERSISTENT_2, so both count
against "Lustre Persistent_2 storage capacity". Keys are `<service code>/<quota code>` as Service
Quotas names them, so the reader asks GetServiceQuota for exactly these.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpuplat.catalog import fsx
from gpuplat.catalog.instances import instance_type
from gpuplat.model import Market, Platform, ReservationKind
from gpuplat.plan import Plan

# The system node group (components/aws/cluster.py): at most 4 x m7i.2xlarge (8 vCPUs each).
SYSTEM_VCPUS_AT_MAX = 4 * 8
NAT_GATEWAYS_PER_ZONE = 1


@dataclass(frozen=True)
class Quota:
    key: str  # "<service code>/<quota code>"
    name: str  # as the Service Quotas console shows it


ON_DEMAND = {
    "standard": Quota("ec2/L-1216C47A", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances"),
    "g": Quota("ec2/L-DB2E81BA", "Running On-Demand G and VT instances"),
    "p": Quota("ec2/L-417A185B", "Running On-Demand P instances"),
}
# Spot splits the P families: P5, P5e and P5en have a quota of their own.
SPOT = {
    "standard": Quota("ec2/L-34B43A08", "All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests"),
    "g": Quota("ec2/L-3819A6DF", "All G and VT Spot Instance Requests"),
    "p": Quota("ec2/L-7212CCBC", "All P4, P3 and P2 Spot Instance Requests"),
    "p5": Quota("ec2/L-C4BD4855", "All P5 Spot Instance Requests"),
}
_SPOT_P5_FAMILIES = frozenset({"p5", "p5e", "p5en"})
_SPOT_P_FAMILIES = frozenset({"p2", "p3", "p3dn", "p4d", "p4de"})
ELASTIC_IPS = Quota("ec2/L-0263D0A3", "EC2-VPC Elastic IPs")
# Per region, counting every PERSISTENT_2 Lustre file system the account has, not only ours
# (default: fsx.DEFAULT_STORAGE_QUOTA_GIB, which `check` warns about as GP356).
LUSTRE_STORAGE = Quota(f"fsx/{fsx.STORAGE_QUOTA_CODE}", fsx.STORAGE_QUOTA_NAME)

EVERY_QUOTA: tuple[Quota, ...] = (*ON_DEMAND.values(), *SPOT.values(), ELASTIC_IPS, LUSTRE_STORAGE)


def family_group(itype: str) -> str | None:
    """`p`, `g` or `standard`: the on-demand quota group of an instance type; None for one we do not place."""
    if itype.startswith("p"):
        return "p"
    if itype.startswith(("g", "vt")):
        return "g"
    if itype[:1] in "acdhimrtz":
        return "standard"
    return None


def spot_group(itype: str) -> str | None:
    """The spot quota group; None where the family's spot quota is not documented (P6: sources
    disagree between P5's and P4/P3/P2's), so its spot nodes are not checked rather than guessed."""
    group = family_group(itype)
    if group != "p":
        return group
    family = itype.split(".", 1)[0]
    if family in _SPOT_P5_FAMILIES:
        return "p5"
    return "p" if family in _SPOT_P_FAMILIES else None


def _add(need: dict[Quota, float], quota: Quota, amount: float) -> None:
    if amount > 0:
        need[quota] = need.get(quota, 0) + amount


def _pool_vcpus(model: Platform, plan: Plan, need: dict[Quota, float]) -> None:
    for pool in model.pools:
        itype = instance_type(pool.instance_type or "")
        group, spot_quota = family_group(pool.instance_type or ""), spot_group(pool.instance_type or "")
        if itype is None or group is None:
            continue
        markets = plan.pool(pool.name).markets
        on_demand = markets[Market.ON_DEMAND].nodes if Market.ON_DEMAND in markets else 0
        if Market.RESERVED in markets and pool.reservation.kind is ReservationKind.ON_DEMAND_RESERVATION:
            on_demand += markets[Market.RESERVED].nodes
        spot = markets[Market.SPOT].nodes if Market.SPOT in markets else 0
        _add(need, ON_DEMAND[group], on_demand * itype.vcpus)
        if spot_quota is not None:
            _add(need, SPOT[spot_quota], spot * itype.vcpus)


def needed(model: Platform, plan: Plan) -> Mapping[Quota, float]:
    """Quota -> the amount this stack holds when every pool is at nodes.max."""
    need: dict[Quota, float] = {}
    _add(need, ON_DEMAND["standard"], SYSTEM_VCPUS_AT_MAX)
    _pool_vcpus(model, plan, need)
    _add(need, ELASTIC_IPS, NAT_GATEWAYS_PER_ZONE * len(model.target.zones))
    hot = plan.storage.hot
    if hot is not None:
        _add(need, LUSTRE_STORAGE, hot.total_capacity_gib)
    return need


def quota_problems(model: Platform, plan: Plan, quotas: Mapping[str, float]) -> list[str]:
    """One sentence per quota the stack would exceed at nodes.max (quotas not read are skipped)."""
    region = model.target.region or ""
    problems: list[str] = []
    for quota, amount in needed(model, plan).items():
        limit = quotas.get(quota.key)
        if limit is None or amount <= limit:
            continue
        service, code = quota.key.split("/")
        how = (
            f"aws service-quotas request-service-quota-increase --service-code {service} --quota-code {code} "
            f"--desired-value {amount:g} --region {region}"
        )
        problems.append(
            f"service quota {quota.name!r} in {region} is {limit:g}, and this stack needs {amount:g} at "
            f"nodes.max; request an increase before deploying ({how})"
        )
    return problems
