# pyright: strict
"""Where each pool's instance type must be offered, and the sentence when it is not.

Not every zone offers every GPU instance type (p5, p4d, g6e, ...), and which do is only known by
asking the deploying account (gpuplat/catalog/zones.py says why `check` cannot). Without this
check a deploy creates the VPC, the cluster and FSx and then fails on a capacity reservation, or
leaves a NodePool Karpenter can never satisfy.

Where a pool must launch:
- a fabric pool: the fabric zone (its placement group, reservations and nodes are there);
- any pool: every zone the plan puts reserved capacity in (an ODCR in a zone without the type
  is refused);
- any other pool: at least one of its zones (Karpenter launches only where the type exists,
  so a partial offering is fine, none is not).

Nodes held in Capacity Blocks launch in the zone of the block the operator bought, and a type
sold mainly as blocks (p5e) may be listed in no zone's regular offerings: a pool whose every
market is blocks is not checked here (its blocks are), and a block pool with spot or on-demand
nodes is checked as those are placed.
"""

from __future__ import annotations

from gpuplat.catalog.zones import names_are_per_account
from gpuplat.model import GpuNodePool, Market, Platform, ReservationKind
from gpuplat.plan import Plan


def required_zones(model: Platform, plan: Plan, pool: GpuNodePool) -> tuple[list[str], list[str]]:
    """(zones that must each offer the type, zones of which at least one must)."""
    if pool.reservation.kind is ReservationKind.CAPACITY_BLOCK and set(pool.markets) <= {Market.RESERVED}:
        return [], []
    must = sorted({r.zone for r in plan.reservations if r.pool == pool.name})
    if pool.fabric and plan.fabric_zone is not None:
        must = sorted({plan.fabric_zone, *must})
    return must, ([] if pool.fabric else list(model.target.zones))


def _lookup(itype: str, region: str) -> str:
    return (
        f"aws ec2 describe-instance-type-offerings --location-type availability-zone "
        f"--filters Name=instance-type,Values={itype} --region {region}"
    )


def offering_problem(model: Platform, plan: Plan, pool: GpuNodePool, offered: list[str]) -> str | None:
    """The sentence that stops the deployment, or None when the pool can launch."""
    itype, region = pool.instance_type or "", model.target.region or ""
    must, any_of = required_zones(model, plan, pool)
    offered_here = sorted(z for z in offered if z in model.target.zones)
    where = f"offers it in {', '.join(offered_here)}" if offered_here else "offers it in none of them"
    per_account = (
        f"; zone names in {region} are this account's own, so the same name may be another place elsewhere"
        if names_are_per_account(region)
        else ""
    )
    missing = [z for z in must if z not in offered]
    if missing:
        zone = missing[0]
        if pool.fabric and zone == plan.fabric_zone:
            role, remedy = "the fabric zone", "Choose a target.fabricZone that offers it or another instance type"
        else:
            # The plan spreads a non-fabric pool's reservations over every target zone.
            role = "a zone with reserved capacity"
            remedy = (
                "List only zones that offer it in target.zones (reservations are spread over all of them), "
                "or choose another instance type"
            )
        return (
            f"pool {pool.name}: {itype} is not offered in {zone} ({role}) in this AWS account; "
            f"of the spec's zones EC2 {where}{per_account}. {remedy} ({_lookup(itype, region)})"
        )
    if any_of and not set(any_of) & set(offered):
        return (
            f"pool {pool.name}: {itype} is offered in none of the zones {', '.join(any_of)} in this "
            f"AWS account, so Karpenter could never launch a node{per_account}; add a zone that offers it or choose "
            f"another instance type ({_lookup(itype, region)})"
        )
    return None
