"""Preflight at program start: read the account facts, check them, stop before the first resource.

The checks are gpuplat/preflight (the same ones `gpuplat preflight` runs); this module only reads
the facts, through pulumi-aws's plain (synchronous) invokes, so they are answered before anything
is registered: also under `pulumi up --skip-preview`, where checks inside `.apply()` would run
after the VPC, the roles and the protected KMS keys exist. The invokes go through the default
provider with the spec's region, since the explicit provider is itself a registration.

A fact the answer does not carry is left unread (the offline preview's mock answers offerings and
zones for an account that offers everything, and nothing else, unless it is fed saved facts).
Capacity Blocks are read by id. The block data source answers one block only, so blocks selected
by tag are first found through the Resource Groups Tagging API (every capacity reservation with all
the tags, as Karpenter's selector term matches them), then read by id.
"""

from __future__ import annotations

from datetime import UTC, datetime
from types import MappingProxyType

import pulumi
import pulumi_aws as aws

from gpuplat.model import Platform
from gpuplat.plan import Plan
from gpuplat.preflight.facts import AccountFacts, CapacityBlock
from gpuplat.preflight.quotas import EVERY_QUOTA
from gpuplat.preflight.runner import ApiAccess, runner_problem


class PreflightError(pulumi.RunError):
    """The account would refuse this stack; the message lists every reason, one per line. A
    RunError, so `pulumi up` prints the reasons without a Python traceback."""


def _zones(region: str) -> dict[str, str]:
    found = aws.get_availability_zones(region=region)
    return dict(zip(found.names or [], found.zone_ids or [], strict=False))


def _offerings(model: Platform, region: str) -> dict[str, tuple[str, ...]]:
    types = sorted({p.instance_type for p in model.pools if p.instance_type})
    if not types:
        return {}
    found = aws.ec2.get_instance_type_offerings(
        location_type="availability-zone",
        filters=[
            aws.ec2.GetInstanceTypeOfferingsFilterArgs(name="instance-type", values=types),
            aws.ec2.GetInstanceTypeOfferingsFilterArgs(name="location", values=list(model.target.zones)),
        ],
        region=region,
    )
    offered: dict[str, list[str]] = {t: [] for t in types}
    for itype, zone in zip(found.instance_types or [], found.locations or [], strict=False):
        offered.setdefault(itype, []).append(zone)
    return {t: tuple(sorted(z)) for t, z in offered.items()}


def _eks_versions(region: str) -> tuple[str, ...] | None:
    found = aws.eks.get_cluster_versions(region=region)
    if not found.cluster_versions:
        return None
    return tuple(v.cluster_version for v in found.cluster_versions if v.version_status != "UNSUPPORTED")


def _quotas(region: str) -> dict[str, float] | None:
    values: dict[str, float] = {}
    for quota in EVERY_QUOTA:
        service, code = quota.key.split("/")
        try:
            found = aws.servicequotas.get_service_quota(service_code=service, quota_code=code, region=region)
        except Exception as err:  # e.g. no servicequotas permission: that quota is not checked, said so
            pulumi.log.warn(f"preflight: service quota {quota.name!r} ({quota.key}) was not read: {err}")
            continue
        if found.value is not None:
            values[quota.key] = float(found.value)
    return values or None


def _tagged_reservation_ids(tags: dict[str, str], region: str) -> set[str] | None:
    found = aws.resourcegroupstaggingapi.get_resources(
        resource_type_filters=["ec2:capacity-reservation"],
        tag_filters=[
            aws.resourcegroupstaggingapi.GetResourcesTagFilterArgs(key=k, values=[v]) for k, v in sorted(tags.items())
        ],
        region=region,
    )
    if not found.id:  # no answer (the mock account's): not read
        return None
    # An empty list may arrive as none at all. ARNs: arn:aws:ec2:<region>:<account>:capacity-reservation/cr-...
    return {m.resource_arn.rsplit("/", 1)[-1] for m in found.resource_tag_mapping_lists or []}


def _capacity_blocks(plan: Plan, region: str) -> tuple[CapacityBlock, ...] | None:
    ids = {i for use in plan.capacity_blocks for i in use.ids}
    for tags in {tuple(sorted(use.tags.items())) for use in plan.capacity_blocks if use.tags}:
        try:
            tagged = _tagged_reservation_ids(dict(tags), region)
        except Exception as err:  # e.g. no tag:GetResources permission: the blocks are not checked, said so
            pulumi.log.warn(f"preflight: the Capacity Blocks selected by tag were not read: {err}")
            return None
        if tagged is None:
            return None
        ids |= tagged
    blocks: list[CapacityBlock] = []
    for block_id in sorted(ids):
        try:
            found = aws.ec2.get_capacity_block_reservation(id=block_id, region=region)
        except Exception:  # the data source fails on an id it does not find: the block is not held
            continue
        if found.instance_type is None:  # an answer without the block's facts: not read
            return None
        blocks.append(
            CapacityBlock(
                id=block_id,
                instance_type=found.instance_type,
                zone=found.availability_zone or "",
                instances=int(found.instance_count or 0),
                state=found.state or "",
                tags=MappingProxyType(dict(found.tags or {})),
            )
        )
    return tuple(blocks)


def read_facts(model: Platform, plan: Plan) -> AccountFacts:
    """What the deploying account offers in the spec's region, read before any registration."""
    region = model.target.region or ""
    return AccountFacts(
        region=region,
        read_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        zones=MappingProxyType(_zones(region)),
        offerings=MappingProxyType(_offerings(model, region)),
        eks_versions=_eks_versions(region),
        capacity_blocks=_capacity_blocks(plan, region),
        quotas=None if (q := _quotas(region)) is None else MappingProxyType(q),
    )


def preflight(model: Platform, plan: Plan, access: ApiAccess, *, report: bool = False) -> None:
    """Stop the program, before its first resource, with every reason the account would refuse it.

    With `report` (a recording that judges the stack instead of deploying it: gpuplat's verify,
    policy and the base of `preview --base`) the program goes on; the caller reports the reasons,
    from the same pure checks (gpuplat/preflight), beside its verdict."""
    from gpuplat.preflight.checks import preflight_problems

    runner = runner_problem(model.target.endpoint, access)
    if runner is not None and not report:
        # Refused whatever the account says, so the account is not asked: a lookup needs the AWS
        # provider plugin and credentials, and the engine ends the program when either is missing.
        raise PreflightError(
            f"this stack would stop at preflight:\n- {runner}\n"
            "(the account's facts were not read; they are checked once this is fixed)"
        )
    problems = ([runner] if runner is not None else []) + preflight_problems(model, plan, read_facts(model, plan))
    if problems and not report:
        raise PreflightError("this stack would stop at preflight:\n" + "\n".join(f"- {p}" for p in problems))
    if not problems:
        pulumi.log.debug("preflight: the account offers everything this stack needs")
