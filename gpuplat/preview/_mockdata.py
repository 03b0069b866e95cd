# pyright: basic
# (reads protobuf Structs, whose item access is untyped.)
"""Deterministic stand-ins for what providers would return, so dependent program code runs.

Every value is a pure function of the resource's URN, name, inputs and region (the region
of the AWS provider the resource or invoke goes through, else the stack's `aws:region`):
two recordings of the same program are identical, and an unrelated edit never changes the
fake attributes of an untouched resource. Physical names imitate Pulumi autonaming
(`<name>-<hex>`) with the hex taken from a hash of the URN instead of randomness.

Invokes (provider functions) are answered from the table in _invokes.

Resource outputs are returned as a *patch* over the echoed inputs: the monitor applies it
with "inputs win" semantics (nested mappings merge), so a value the program set is never
replaced by a fake one. UNKNOWN in a patch makes that output unknown, as in a real preview.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from google.protobuf import struct_pb2

from gpuplat.catalog.regions import partition_of
from gpuplat.preflight.facts import AccountFacts

from ._render import UNKNOWN, known_string

ACCOUNT_ID = "123456789012"


@dataclass(frozen=True)
class MockContext:
    region: str
    account: str = ACCOUNT_ID
    partition: str = "aws"
    # Saved account facts (`--account-facts`): invokes answer from them instead of from an
    # account that offers everything (gpuplat/preview/_facts_invokes.py).
    facts: AccountFacts | None = None

    def for_region(self, region: str) -> MockContext:
        return replace(self, region=region, partition=partition_of(region))


@dataclass(frozen=True)
class FromInput:
    """Patch value: copy another input field verbatim (keeps secrets/unknowns intact)."""

    key: str


def hex_digest(seed: str, n: int) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:n]


Patch = dict[str, Any]
_Handler = Callable[[str, str, struct_pb2.Struct, MockContext, str, Patch], None]


def resource_outputs(type_: str, name: str, urn: str, inputs: struct_pb2.Struct, ctx: MockContext) -> tuple[str, Patch]:
    """(id, patch) for a registered resource. Component resources get no id."""
    id_ = f"{name}-id"
    patch: Patch = {}
    if type_.startswith("pulumi:providers:"):
        return id_, patch
    if type_ == "pulumi:pulumi:StackReference":
        # Another stack's outputs are not known offline (a fleet worker's credentials): unknown,
        # as before that stack's first update, never invented.
        patch.update(outputs=UNKNOWN, secretOutputNames=[])
        return id_, patch
    package = type_.split(":", 1)[0]
    if package == "aws":
        _aws_generic(type_, name, urn, inputs, ctx, id_, patch)
    elif package == "kubernetes":
        _kubernetes_generic(type_, name, urn, inputs, patch)
    handler = _SPECIFIC.get(type_)
    if handler is not None:
        handler(name, urn, inputs, ctx, id_, patch)
    return id_, patch


# ---------------------------------------------------------------------------------- aws


def _physical_name(name: str, urn: str, inputs: struct_pb2.Struct, key: str = "name") -> str:
    given = known_string(inputs, key)
    if given is not None:
        return given
    prefix = known_string(inputs, f"{key}Prefix")
    if prefix is not None:
        return prefix + hex_digest(urn, 7)
    return f"{name}-{hex_digest(urn, 7)}"


def _type_parts(type_: str) -> tuple[str, str]:
    # "aws:s3/bucketV2:BucketV2" -> ("s3", "bucketV2")
    module = type_.split(":")[1]
    service, _, kind = module.partition("/")
    return service, kind or module


def _aws_generic(
    type_: str, name: str, urn: str, inputs: struct_pb2.Struct, ctx: MockContext, id_: str, patch: Patch
) -> None:
    service, kind = _type_parts(type_)
    physical = _physical_name(name, urn, inputs)
    patch["name"] = physical
    region = "" if service == "iam" else ctx.region
    patch["arn"] = f"arn:{ctx.partition}:{service}:{region}:{ctx.account}:{kind.lower()}/{physical}"
    if "tags" in inputs:
        patch["tagsAll"] = FromInput("tags")


def arn(ctx: MockContext, service: str, resource: str, *, regional: bool = True) -> str:
    region = ctx.region if regional else ""
    return f"arn:{ctx.partition}:{service}:{region}:{ctx.account}:{resource}"


def _bucket(name: str, urn: str, inputs: struct_pb2.Struct, ctx: MockContext, id_: str, patch: Patch) -> None:
    bucket = _physical_name(name, urn, inputs, "bucket").lower()
    del patch["name"]
    patch.update(
        bucket=bucket,
        arn=f"arn:{ctx.partition}:s3:::{bucket}",
        bucketDomainName=f"{bucket}.s3.amazonaws.com",
        bucketRegionalDomainName=f"{bucket}.s3.{ctx.region}.amazonaws.com",
        region=ctx.region,
        hostedZoneId="Z3AQBSTGFYJSTF",
    )


def _directory_bucket(name: str, urn: str, inputs: struct_pb2.Struct, ctx: MockContext, id_: str, patch: Patch) -> None:
    del patch["name"]
    zone = f"{zone_prefix(ctx.region)}-az4"
    bucket = known_string(inputs, "bucket") or f"{name}-{hex_digest(urn, 7)}--{zone}--x-s3"
    patch.update(bucket=bucket, arn=arn(ctx, "s3express", f"bucket/{bucket}"))


def _eks_cluster(name: str, urn: str, inputs: struct_pb2.Struct, ctx: MockContext, id_: str, patch: Patch) -> None:
    physical = patch["name"]
    tag = hex_digest(urn, 32).upper()
    ca = base64.b64encode(b"-----BEGIN CERTIFICATE-----\ngpuplat-preview\n-----END CERTIFICATE-----\n")
    patch.update(
        arn=arn(ctx, "eks", f"cluster/{physical}"),
        endpoint=f"https://{tag}.gr7.{ctx.region}.eks.amazonaws.com",
        certificateAuthority={"data": ca.decode()},
        identities=[{"oidcs": [{"issuer": f"https://oidc.eks.{ctx.region}.amazonaws.com/id/{tag}"}]}],
        status="ACTIVE",
        platformVersion="eks.1",
        clusterId=hex_digest(urn + "#id", 8) + "-" + hex_digest(urn + "#id2", 4),
        vpcConfig={"clusterSecurityGroupId": f"{name}-cluster-sg", "vpcId": f"{name}-vpc"},
    )


def _iam(kind: str) -> _Handler:
    def handler(name: str, urn: str, inputs: struct_pb2.Struct, ctx: MockContext, id_: str, patch: Patch) -> None:
        patch["arn"] = arn(ctx, "iam", f"{kind}/{patch['name']}", regional=False)
        patch["uniqueId"] = "AROA" + hex_digest(urn, 17).upper()

    return handler


def _oidc_provider(name: str, urn: str, inputs: struct_pb2.Struct, ctx: MockContext, id_: str, patch: Patch) -> None:
    url = (known_string(inputs, "url") or name).removeprefix("https://")
    patch["arn"] = arn(ctx, "iam", f"oidc-provider/{url}", regional=False)


def _kms_key(name: str, urn: str, inputs: struct_pb2.Struct, ctx: MockContext, id_: str, patch: Patch) -> None:
    patch.update(keyId=id_, arn=arn(ctx, "kms", f"key/{id_}"))


def _sqs_queue(name: str, urn: str, inputs: struct_pb2.Struct, ctx: MockContext, id_: str, patch: Patch) -> None:
    queue = patch["name"]
    patch.update(
        arn=f"arn:{ctx.partition}:sqs:{ctx.region}:{ctx.account}:{queue}",
        url=f"https://sqs.{ctx.region}.amazonaws.com/{ctx.account}/{queue}",
    )


def _fsx_lustre(name: str, urn: str, inputs: struct_pb2.Struct, ctx: MockContext, id_: str, patch: Patch) -> None:
    patch.update(
        arn=arn(ctx, "fsx", f"file-system/{id_}"),
        dnsName=f"{id_}.fsx.{ctx.region}.amazonaws.com",
        mountName=hex_digest(urn, 8),
        networkInterfaceIds=[f"{name}-eni"],
        ownerId=ctx.account,
    )


def _ec2(kind: str, **extra: str) -> _Handler:
    def handler(name: str, urn: str, inputs: struct_pb2.Struct, ctx: MockContext, id_: str, patch: Patch) -> None:
        patch["arn"] = arn(ctx, "ec2", f"{kind}/{id_}")
        patch["ownerId"] = ctx.account
        for key, suffix in extra.items():
            patch[key] = f"{name}-{suffix}"

    return handler


def _eip(name: str, urn: str, inputs: struct_pb2.Struct, ctx: MockContext, id_: str, patch: Patch) -> None:
    patch.update(publicIp=f"198.51.100.{int(hex_digest(urn, 4), 16) % 254 + 1}", allocationId=id_)


def _launch_template(name: str, urn: str, inputs: struct_pb2.Struct, ctx: MockContext, id_: str, patch: Patch) -> None:
    patch.update(arn=arn(ctx, "ec2", f"launch-template/{id_}"), latestVersion=1, defaultVersion=1)


def _placement_group(name: str, urn: str, inputs: struct_pb2.Struct, ctx: MockContext, id_: str, patch: Patch) -> None:
    patch.update(arn=arn(ctx, "ec2", f"placement-group/{patch['name']}"), placementGroupId=f"pg-{hex_digest(urn, 17)}")


def _eks_child(kind: str) -> _Handler:
    def handler(name: str, urn: str, inputs: struct_pb2.Struct, ctx: MockContext, id_: str, patch: Patch) -> None:
        cluster = known_string(inputs, "clusterName") or "cluster"
        patch["arn"] = arn(ctx, "eks", f"{kind}/{cluster}/{patch['name']}/{hex_digest(urn, 8)}")
        patch["status"] = "ACTIVE"

    return handler


def _pod_identity(name: str, urn: str, inputs: struct_pb2.Struct, ctx: MockContext, id_: str, patch: Patch) -> None:
    cluster = known_string(inputs, "clusterName") or "cluster"
    patch.update(
        associationArn=arn(ctx, "eks", f"podidentityassociation/{cluster}/a-{hex_digest(urn, 17)}"),
        associationId=f"a-{hex_digest(urn, 17)}",
    )


# --------------------------------------------------------------------------- kubernetes


def _kubernetes_generic(type_: str, name: str, urn: str, inputs: struct_pb2.Struct, patch: Patch) -> None:
    if type_.endswith("List") or type_.startswith("kubernetes:helm.sh/"):
        return
    # pulumi-kubernetes autonames objects without metadata.name; dependants such as
    # `namespace=ns.metadata.name` must see that name rather than None.
    patch["metadata"] = {"name": f"{name}-{hex_digest(urn, 8)}"}


def _helm_release(name: str, urn: str, inputs: struct_pb2.Struct, ctx: MockContext, id_: str, patch: Patch) -> None:
    release = known_string(inputs, "name") or f"{name}-{hex_digest(urn, 8)}"
    namespace: str = known_string(inputs, "namespace") or ("default" if "namespace" not in inputs else UNKNOWN)
    patch.update(
        name=release,
        status={
            "name": release,
            "namespace": namespace,
            "chart": known_string(inputs, "chart") or UNKNOWN,
            "version": known_string(inputs, "version") or UNKNOWN,
            "status": "deployed",
            "revision": 1,
        },
    )


_SPECIFIC: dict[str, _Handler] = {
    "aws:s3/bucket:Bucket": _bucket,
    "aws:s3/bucketV2:BucketV2": _bucket,
    "aws:s3/directoryBucket:DirectoryBucket": _directory_bucket,
    "aws:eks/cluster:Cluster": _eks_cluster,
    "aws:eks/nodeGroup:NodeGroup": _eks_child("nodegroup"),
    "aws:eks/addon:Addon": _eks_child("addon"),
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": _pod_identity,
    "aws:iam/role:Role": _iam("role"),
    "aws:iam/policy:Policy": _iam("policy"),
    "aws:iam/instanceProfile:InstanceProfile": _iam("instance-profile"),
    "aws:iam/openIdConnectProvider:OpenIdConnectProvider": _oidc_provider,
    "aws:kms/key:Key": _kms_key,
    "aws:sqs/queue:Queue": _sqs_queue,
    "aws:fsx/lustreFileSystem:LustreFileSystem": _fsx_lustre,
    "aws:ec2/vpc:Vpc": _ec2(
        "vpc",
        defaultSecurityGroupId="default-sg",
        mainRouteTableId="main-rtb",
        defaultRouteTableId="default-rtb",
        defaultNetworkAclId="default-acl",
    ),
    "aws:ec2/subnet:Subnet": _ec2("subnet"),
    "aws:ec2/securityGroup:SecurityGroup": _ec2("security-group"),
    "aws:ec2/internetGateway:InternetGateway": _ec2("internet-gateway"),
    "aws:ec2/routeTable:RouteTable": _ec2("route-table"),
    "aws:ec2/capacityReservation:CapacityReservation": _ec2("capacity-reservation"),
    "aws:ec2/natGateway:NatGateway": _eip,
    "aws:ec2/eip:Eip": _eip,
    "aws:ec2/launchTemplate:LaunchTemplate": _launch_template,
    "aws:ec2/placementGroup:PlacementGroup": _placement_group,
    "kubernetes:helm.sh/v3:Release": _helm_release,
}


def zone_prefix(region: str) -> str:
    parts = region.split("-")
    return parts[0] + "".join(p[0] for p in parts[1:-1]) + parts[-1] if len(parts) >= 3 else region
