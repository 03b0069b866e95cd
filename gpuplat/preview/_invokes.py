# pyright: basic
# (invoke arguments arrive as untyped JSON-like dicts.)
"""Plausible, deterministic results for the provider functions programs commonly call.

Anything not in the table returns `{}`: the SDK then sees every result field as absent,
which typically surfaces as None in the program rather than as a failure. `ctx` is the
region the invoke targets (its provider's, see _monitor), not necessarily the stack's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from gpuplat.catalog.regions import ZONE_LETTERS
from gpuplat.catalog.s3express import s3_express_zone_ids

from ._facts_invokes import FACTS_INVOKES
from ._mockdata import MockContext, arn, hex_digest, zone_prefix


def invoke(token: str, args: dict[str, Any], ctx: MockContext) -> dict[str, Any]:
    """Plausible result of a provider function; `{}` for anything not in the table."""
    facts_handler = FACTS_INVOKES.get(token)
    if ctx.facts is not None and facts_handler is not None:
        answer = facts_handler(ctx.facts, args, ctx)
        if answer is not None:  # None: the facts did not record this, answer as the mock account
            return answer
    handler = _INVOKES.get(token)
    return handler(args, ctx) if handler is not None else {}


def _caller_identity(args: dict[str, Any], ctx: MockContext) -> dict[str, Any]:
    return {
        "accountId": ctx.account,
        "arn": f"arn:{ctx.partition}:iam::{ctx.account}:user/gpuplat-preview",
        "userId": "AIDAGPUPLATPREVIEW",
        "id": ctx.account,
    }


def _region(args: dict[str, Any], ctx: MockContext) -> dict[str, Any]:
    region = args.get("region") or args.get("name") or ctx.region
    return {
        "name": region,
        "region": region,
        "id": region,
        "description": f"preview region {region}",
        "endpoint": f"ec2.{region}.amazonaws.com",
    }


def _partition(args: dict[str, Any], ctx: MockContext) -> dict[str, Any]:
    return {
        "partition": ctx.partition,
        "dnsSuffix": "amazonaws.com",
        "reverseDnsPrefix": "com.amazonaws",
        "id": ctx.partition,
    }


def _availability_zones(args: dict[str, Any], ctx: MockContext) -> dict[str, Any]:
    # Every letter the Network component can place (a..g), so any zone `check` accepts has an
    # id here; real regions have fewer (us-east-1: a..f), but refusing is validation's job.
    # Accounts map names to IDs in their own order; this one maps the first letters to the
    # region's S3 Express One Zone IDs, as an account whose warm tier deploys would.
    prefix = zone_prefix(ctx.region)
    express = s3_express_zone_ids(ctx.region)
    ids = [*express, *(f"{prefix}-az{i}" for i in range(1, len(ZONE_LETTERS) + 1))]
    zone_ids = list(dict.fromkeys(ids))[: len(ZONE_LETTERS)]
    return {
        "id": ctx.region,
        "names": [f"{ctx.region}{letter}" for letter in ZONE_LETTERS],
        "zoneIds": zone_ids,
        "groupNames": [ctx.region] * len(ZONE_LETTERS),
        "state": args.get("state") or "available",
    }


def _instance_type_offerings(args: dict[str, Any], ctx: MockContext) -> dict[str, Any]:
    # An account where every asked-for type is offered in every asked-for location (zone names,
    # zone IDs or the region, by locationType): the plausible answer for the instance types the
    # catalog holds. Which zones really offer a type only the deploying account knows.
    filters: dict[str, list[str]] = {
        str(f.get("name")): [str(v) for v in f.get("values") or []] for f in args.get("filters") or []
    }
    kind = args.get("locationType") or "region"
    zones = _availability_zones({}, ctx)
    every: dict[str, list[str]] = {
        "region": [ctx.region],
        "availability-zone": list(zones["names"]),
        "availability-zone-id": list(zones["zoneIds"]),
    }
    known = every.get(kind, [])
    locations = [z for z in filters.get("location", known) if z in known]
    types = filters.get("instance-type", [])
    pairs = [(t, z) for t in types for z in locations]
    return {
        "id": ctx.region,
        "filters": args.get("filters"),
        "locationType": kind,
        "instanceTypes": [t for t, _ in pairs],
        "locations": [z for _, z in pairs],
        "locationTypes": [kind] * len(pairs),
        "region": ctx.region,
    }


def _ami_id(seed: Any) -> str:
    return "ami-" + hex_digest(json.dumps(seed, sort_keys=True), 17)


def _ami(args: dict[str, Any], ctx: MockContext) -> dict[str, Any]:
    image = _ami_id(args)
    return {
        "id": image,
        "imageId": image,
        "name": f"gpuplat-preview-{image}",
        "architecture": "x86_64",
        "rootDeviceName": "/dev/xvda",
        "ownerId": ctx.account,
        "state": "available",
    }


def _ssm_parameter(args: dict[str, Any], ctx: MockContext) -> dict[str, Any]:
    name = str(args.get("name", ""))
    value = _ami_id(name) if ("image_id" in name or "/ami" in name) else f"preview-{hex_digest(name, 8)}"
    return {
        "id": name,
        "name": name,
        "value": value,
        "insecureValue": value,
        "type": "String",
        "version": 1,
        "arn": f"arn:{ctx.partition}:ssm:{ctx.region}:{ctx.account}:parameter/{name.lstrip('/')}",
    }


def _one_or_many(values: Any) -> Any:
    if isinstance(values, list) and len(values) == 1:
        return values[0]
    return values


_STATEMENT_LISTS = (
    ("actions", "Action"),
    ("notActions", "NotAction"),
    ("resources", "Resource"),
    ("notResources", "NotResource"),
)


def _policy_document(args: dict[str, Any], ctx: MockContext) -> dict[str, Any]:
    statements: list[dict[str, Any]] = []
    for raw in args.get("statements") or []:
        stmt: dict[str, Any] = {}
        if raw.get("sid"):
            stmt["Sid"] = raw["sid"]
        stmt["Effect"] = raw.get("effect") or "Allow"
        for src, dst in _STATEMENT_LISTS:
            if raw.get(src):
                stmt[dst] = _one_or_many(raw[src])
        for src, dst in (("principals", "Principal"), ("notPrincipals", "NotPrincipal")):
            if raw.get(src):
                stmt[dst] = {p["type"]: _one_or_many(p.get("identifiers", [])) for p in raw[src]}
        if raw.get("conditions"):
            condition: dict[str, dict[str, Any]] = {}
            for cond in raw["conditions"]:
                condition.setdefault(cond["test"], {})[cond["variable"]] = _one_or_many(cond.get("values", []))
            stmt["Condition"] = condition
        statements.append(stmt)
    document: dict[str, Any] = {"Version": args.get("version") or "2012-10-17"}
    if args.get("policyId"):
        document["Id"] = args["policyId"]
    document["Statement"] = statements
    text = json.dumps(document, indent=2)
    return {"json": text, "minifiedJson": json.dumps(document, separators=(",", ":")), "id": hex_digest(text, 10)}


def _cluster_auth(args: dict[str, Any], ctx: MockContext) -> dict[str, Any]:
    return {"id": args.get("name", ""), "name": args.get("name", ""), "token": "k8s-aws-v1.gpuplat-preview-token"}


def _addon_version(args: dict[str, Any], ctx: MockContext) -> dict[str, Any]:
    addon = str(args.get("addonName", "addon"))
    return {"id": addon, "addonName": addon, "version": "v1.0.0-eksbuild.1"}


def _vpc(args: dict[str, Any], ctx: MockContext) -> dict[str, Any]:
    vpc_arn = arn(ctx, "ec2", "vpc/vpc-preview")
    return {"id": "vpc-preview", "cidrBlock": "10.0.0.0/16", "arn": vpc_arn, "ownerId": ctx.account}


def _subnets(args: dict[str, Any], ctx: MockContext) -> dict[str, Any]:
    return {"id": ctx.region, "ids": [f"subnet-preview-{letter}" for letter in "ab"]}


def _yaml_decode(args: dict[str, Any], ctx: MockContext) -> dict[str, Any]:
    # pulumi-kubernetes' ConfigFile/ConfigGroup parse YAML through this provider function.
    import yaml

    return {"result": [doc for doc in yaml.safe_load_all(str(args.get("text", ""))) if doc is not None]}


_INVOKES: dict[str, Callable[[dict[str, Any], MockContext], dict[str, Any]]] = {
    "aws:index/getCallerIdentity:getCallerIdentity": _caller_identity,
    "aws:index/getRegion:getRegion": _region,
    "aws:index/getPartition:getPartition": _partition,
    "aws:index/getAvailabilityZones:getAvailabilityZones": _availability_zones,
    "aws:index/getDefaultTags:getDefaultTags": lambda args, ctx: {"id": "aws", "tags": {}},
    "aws:ec2/getAmi:getAmi": _ami,
    "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings": _instance_type_offerings,
    "aws:ec2/getVpc:getVpc": _vpc,
    "aws:ec2/getSubnets:getSubnets": _subnets,
    "aws:ssm/getParameter:getParameter": _ssm_parameter,
    "aws:iam/getPolicyDocument:getPolicyDocument": _policy_document,
    "aws:eks/getClusterAuth:getClusterAuth": _cluster_auth,
    "aws:eks/getAddonVersion:getAddonVersion": _addon_version,
    "kubernetes:yaml:decode": _yaml_decode,
}
