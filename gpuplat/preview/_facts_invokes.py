# pyright: basic
# (invoke arguments arrive as untyped JSON-like dicts.)
"""Provider functions answered from saved account facts (`gpuplat preview --account-facts`).

The program's preflight (components/aws/preflight.py) reads the account through these invokes;
fed the facts `gpuplat preflight --save` recorded, the offline preview stops where the real
deploy would, before any resource. An id the facts do not hold fails as the provider's data
source does (it finds nothing); a quota the facts do not hold is answered with no value, and a
kind of fact the file does not hold at all is answered as the mock account would (None here).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuplat.preflight.facts import AccountFacts

from ._mockdata import MockContext


class FactNotFoundError(LookupError):
    """What the provider's data source reports for an id the account does not have."""


def _filters(args: dict[str, Any]) -> dict[str, list[str]]:
    return {str(f.get("name")): [str(v) for v in f.get("values") or []] for f in args.get("filters") or []}


def _zones(facts: AccountFacts, args: dict[str, Any], ctx: MockContext) -> dict[str, Any] | None:
    if facts.zones is None:
        return None
    zones = dict(sorted((facts.zones or {}).items()))
    return {"id": ctx.region, "names": list(zones), "zoneIds": list(zones.values()), "state": "available"}


def _offerings(facts: AccountFacts, args: dict[str, Any], ctx: MockContext) -> dict[str, Any] | None:
    if facts.offerings is None:
        return None
    filters = _filters(args)
    wanted_types = filters.get("instance-type")
    wanted_zones = filters.get("location")
    pairs = [
        (itype, zone)
        for itype, zones in sorted((facts.offerings or {}).items())
        for zone in zones
        if (wanted_types is None or itype in wanted_types) and (wanted_zones is None or zone in wanted_zones)
    ]
    kind = args.get("locationType") or "availability-zone"
    return {
        "id": ctx.region,
        "locationType": kind,
        "instanceTypes": [t for t, _ in pairs],
        "locations": [z for _, z in pairs],
        "locationTypes": [kind] * len(pairs),
    }


def _eks_versions(facts: AccountFacts, args: dict[str, Any], ctx: MockContext) -> dict[str, Any] | None:
    if facts.eks_versions is None:
        return None
    status = "STANDARD_SUPPORT"
    rows = [{"clusterVersion": v, "clusterType": "eks", "versionStatus": status} for v in facts.eks_versions]
    return {"id": ctx.region, "clusterVersions": rows}


def _quota(facts: AccountFacts, args: dict[str, Any], ctx: MockContext) -> dict[str, Any] | None:
    if facts.quotas is None:
        return None
    service = str(args.get("serviceCode", ""))
    key = f"{service}/{args.get('quotaCode') or ''}"
    value = facts.quotas.get(key)
    return {} if value is None else {"id": key, "serviceCode": service, "value": value}


def _capacity_block(facts: AccountFacts, args: dict[str, Any], ctx: MockContext) -> dict[str, Any] | None:
    if facts.capacity_blocks is None:
        return None
    block_id = str(args.get("id", ""))
    for block in facts.capacity_blocks or ():
        if block.id == block_id:
            return {
                "id": block.id,
                "instanceType": block.instance_type,
                "availabilityZone": block.zone,
                "instanceCount": block.instances,
                "state": block.state,
                "tags": dict(block.tags),
            }
    raise FactNotFoundError(f"no matching EC2 Capacity Block Reservation found (id {block_id})")


def _tagged_resources(facts: AccountFacts, args: dict[str, Any], ctx: MockContext) -> dict[str, Any] | None:
    if facts.capacity_blocks is None or list(args.get("resourceTypeFilters") or []) != ["ec2:capacity-reservation"]:
        return None
    wanted = {str(f.get("key")): {str(v) for v in f.get("values") or []} for f in args.get("tagFilters") or []}
    matching = [b for b in facts.capacity_blocks if all(b.tags.get(k) in vs for k, vs in wanted.items())]
    rows = [
        {
            "resourceArn": f"arn:{ctx.partition}:ec2:{facts.region}:{ctx.account}:capacity-reservation/{b.id}",
            "tags": dict(b.tags),
            "complianceDetails": [],
        }
        for b in matching
    ]
    return {"id": ctx.region, "resourceTagMappingLists": rows}


FACTS_INVOKES: dict[str, Callable[[AccountFacts, dict[str, Any], MockContext], dict[str, Any] | None]] = {
    "aws:index/getAvailabilityZones:getAvailabilityZones": _zones,
    "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings": _offerings,
    "aws:eks/getClusterVersions:getClusterVersions": _eks_versions,
    "aws:servicequotas/getServiceQuota:getServiceQuota": _quota,
    "aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation": _capacity_block,
    "aws:resourcegroupstaggingapi/getResources:getResources": _tagged_resources,
}
