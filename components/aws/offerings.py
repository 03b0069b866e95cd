"""Deploy-time check that every pool's instance type is offered where the pool must launch.

Not every zone offers every GPU instance type (p5, p4d, g6e, ...), and which do is only known
by asking the deploying account (gpuplat/catalog/zones.py says why `check` cannot). Without
this check a `pulumi up` creates the VPC, the cluster and FSx and then fails on a capacity
reservation, or leaves a NodePool Karpenter can never satisfy. The program asks EC2's
DescribeInstanceTypeOfferings (location type `availability-zone`, the names the spec uses)
once per pool, during the preview every `pulumi up` runs first, and stops with a sentence
naming the pool, the instance type and the zone: nothing is created.

Where a pool must launch:
- a fabric pool: the fabric zone (its placement group, reservations and nodes are there);
- any pool: every zone the plan puts reserved capacity in (an ODCR in a zone without the type
  is refused);
- any other pool: at least one of its zones (Karpenter launches only where the type exists,
  so a partial offering is fine, none is not).

Nodes held in Capacity Blocks launch in the zone of the block the operator bought, and a type
sold mainly as blocks (p5e) may be listed in no zone's regular offerings: a pool whose every
market is blocks is not checked, and a block pool with spot or on-demand nodes is checked as
those are placed.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from gpuplat.catalog.zones import names_are_per_account
from gpuplat.model import GpuNodePool, Market, Platform, ReservationKind
from gpuplat.plan import Plan

from .fabric import fabric_zone


def required_zones(model: Platform, plan: Plan, pool: GpuNodePool) -> tuple[list[str], list[str]]:
    """(zones that must each offer the type, zones of which at least one must)."""
    if pool.reservation.kind is ReservationKind.CAPACITY_BLOCK and set(pool.markets) <= {Market.RESERVED}:
        return [], []
    must = sorted({r.zone for r in plan.reservations if r.pool == pool.name})
    if pool.fabric:
        must = sorted({fabric_zone(plan), *must})
    return must, ([] if pool.fabric else list(model.target.zones))


def offering_problem(model: Platform, plan: Plan, pool: GpuNodePool, offered: list[str]) -> str | None:
    """The sentence that stops the deployment, or None when the pool can launch."""
    itype, region = pool.instance_type or "", model.target.region or ""
    must, any_of = required_zones(model, plan, pool)
    where = f"offers it in {', '.join(sorted(offered))}" if offered else "offers it in none of them"
    per_account = (
        f"; zone names in {region} are this account's own, so the same name may be another place elsewhere"
        if names_are_per_account(region)
        else ""
    )
    missing = [z for z in must if z not in offered]
    if missing:
        zone = missing[0]
        role = "the fabric zone" if pool.fabric and zone == plan.fabric_zone else "a zone with reserved capacity"
        return (
            f"pool {pool.name}: instance type {itype} is not offered in {zone} ({role}) in this AWS account; "
            f"of the spec's zones EC2 {where}{per_account}. Choose another target.fabricZone or instance "
            f"type, or zones that offer it (aws ec2 describe-instance-type-offerings --location-type "
            f"availability-zone --filters Name=instance-type,Values={itype} --region {region})"
        )
    if any_of and not set(any_of) & set(offered):
        return (
            f"pool {pool.name}: instance type {itype} is offered in none of the zones {', '.join(any_of)} in this "
            f"AWS account, so Karpenter could never launch a node{per_account}; add a zone that offers it or choose "
            f"another instance type (aws ec2 describe-instance-type-offerings --location-type availability-zone "
            f"--filters Name=instance-type,Values={itype} --region {region})"
        )
    return None


def _checked(model: Platform, plan: Plan, pool: GpuNodePool, offered: list[str]) -> str:
    problem = offering_problem(model, plan, pool, offered)
    if problem is not None:
        raise ValueError(problem)
    return pool.instance_type or ""


def offered_instance_type(
    parent: pulumi.Resource, model: Platform, plan: Plan, pool: GpuNodePool
) -> pulumi.Output[str]:
    """The pool's instance type once EC2 confirmed it is offered where the pool must launch; the
    NodePool requirement takes this value, so a refusal stops the program (and the preview)."""
    offerings = aws.ec2.get_instance_type_offerings_output(
        location_type="availability-zone",
        filters=[
            aws.ec2.GetInstanceTypeOfferingsFilterArgs(name="instance-type", values=[pool.instance_type or ""]),
            aws.ec2.GetInstanceTypeOfferingsFilterArgs(name="location", values=list(model.target.zones)),
        ],
        # parent: the invoke goes through the component's (the spec region's) provider.
        opts=pulumi.InvokeOutputOptions(parent=parent),
    )
    return offerings.locations.apply(lambda offered: _checked(model, plan, pool, list(offered)))
