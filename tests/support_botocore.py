"""The AWS API requests a stack's resources and the preflight reads would send, checked against
botocore's service models (the API's own shapes: members, types, required, enums, patterns, ranges).

pulumi-aws hands each resource's inputs to the Terraform AWS provider, which sends one create call
per resource; `request(resource)` rebuilds that call from the recorded inputs the way the provider's
expanders do (field names, list vs single value, "true" strings to booleans, tags as the API wants
them). `problems(service, operation, params)` runs botocore's ParamValidator, which checks members,
types, required members and minimums, and then what it leaves out: enum values, patterns and maximums.

Values the mock engine made up (ids and ARNs of other resources, "<name>-id") are not ours to check
against a pattern; `mock_values` names them so only gpuplat's own values are.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import botocore.session
from botocore.model import OperationModel
from botocore.validate import ParamValidator

from gpuplat.preview import RecordedResource
from tests import support_aws_calls as ec2_fsx
from tests import support_aws_calls_services as services
from tests.support_aws_calls import Params, Request


@cache
def operation(service: str, name: str) -> OperationModel:
    return botocore.session.get_session().get_service_model(service).operation_model(name)


def _extra(shape: Any, value: Any, path: str, mock: Callable[[str], bool]) -> Iterator[str]:
    """What ParamValidator does not check: enums, patterns, maximums. (`shape` is a botocore Shape,
    whose members and metadata botocore types as cached properties pyright cannot index.)"""
    kind = shape.type_name
    if kind == "structure" and isinstance(value, dict):
        for key, item in value.items():
            if key in shape.members:
                yield from _extra(shape.members[key], item, f"{path}.{key}", mock)
    elif kind == "list" and isinstance(value, list):
        if "max" in shape.metadata and len(value) > shape.metadata["max"]:
            yield f"{path}: {len(value)} items, at most {shape.metadata['max']}"
        for i, item in enumerate(value):
            yield from _extra(shape.member, item, f"{path}[{i}]", mock)
    elif kind == "map" and isinstance(value, dict):
        for key, item in value.items():
            yield from _extra(shape.key, key, f"{path} key", mock)
            yield from _extra(shape.value, item, f"{path}[{key}]", mock)
    elif isinstance(value, str):
        if shape.enum and value not in shape.enum:
            yield f"{path}: {value!r} is not one of {shape.enum}"
        if mock(value):  # another resource's id or ARN as the mock engine made it up: not ours to check
            return
        pattern = shape.metadata.get("pattern")
        if pattern:
            try:
                ok = re.search(pattern, value) is not None
            except re.error:  # a Java-only construct: nothing to say
                ok = True
            if not ok:
                yield f"{path}: {value!r} does not match {pattern}"
        if "max" in shape.metadata and len(value) > shape.metadata["max"]:
            yield f"{path}: {len(value)} characters, at most {shape.metadata['max']}"
    elif isinstance(value, int) and not isinstance(value, bool) and value > shape.metadata.get("max", value):
        yield f"{path}: {value} is above {shape.metadata['max']}"


def problems(service: str, name: str, params: Params, mock: Callable[[str], bool] = lambda _: False) -> list[str]:
    shape: Any = operation(service, name).input_shape
    report = ParamValidator().validate(params, shape)
    found = (
        [line.strip() for line in report.generate_report().splitlines() if line.strip()] if report.has_errors() else []
    )
    return found + list(_extra(shape, params, name, mock))


def mock_values(resources: tuple[RecordedResource, ...]) -> Callable[[str], bool]:
    """True for a value the mock engine invented: it carries another resource's logical name."""
    names = sorted({r.name for r in resources}, key=len, reverse=True)
    return lambda value: any(name in value for name in names)


# type -> the provider's create call(s); a resource type absent here and from NOT_CHECKED fails the test
REQUESTS: dict[str, tuple[Callable[[Params, str], Request], ...]] = {
    "aws:fsx/lustreFileSystem:LustreFileSystem": (ec2_fsx.fsx_file_system,),
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": (ec2_fsx.fsx_association,),
    "aws:ec2/capacityReservation:CapacityReservation": (ec2_fsx.capacity_reservation,),
    "aws:ec2/placementGroup:PlacementGroup": (ec2_fsx.placement_group,),
    "aws:ec2/vpcEndpoint:VpcEndpoint": (ec2_fsx.vpc_endpoint,),
    "aws:ec2/launchTemplate:LaunchTemplate": (ec2_fsx.launch_template,),
    "aws:ec2/subnet:Subnet": (ec2_fsx.subnet,),
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": (ec2_fsx.ingress,),
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": (ec2_fsx.egress,),
    "aws:eks/cluster:Cluster": (services.eks_cluster,),
    "aws:eks/nodeGroup:NodeGroup": (services.node_group,),
    "aws:eks/addon:Addon": (services.addon,),
    "aws:eks/accessEntry:AccessEntry": (services.access_entry,),
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": (services.pod_identity,),
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration": (services.lifecycle,),
    "aws:s3/directoryBucket:DirectoryBucket": (services.directory_bucket,),
    "aws:kms/key:Key": (services.kms_key, services.kms_deletion),
    "aws:sqs/queue:Queue": (services.queue,),
    "aws:cloudwatch/eventRule:EventRule": (services.event_rule,),
}

# Types whose create call carries nothing gpuplat chooses beyond ids, names, tags and JSON documents
# (IAM and resource policies are checked by their own tests, not by a shape).
NOT_CHECKED = frozenset(
    {
        "aws:cloudwatch/eventTarget:EventTarget",
        "aws:ec2/eip:Eip",
        "aws:ec2/internetGateway:InternetGateway",
        "aws:ec2/natGateway:NatGateway",
        "aws:ec2/routeTable:RouteTable",
        "aws:ec2/routeTableAssociation:RouteTableAssociation",
        "aws:ec2/securityGroup:SecurityGroup",
        "aws:ec2/vpc:Vpc",
        "aws:iam/role:Role",
        "aws:iam/rolePolicy:RolePolicy",
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
        "aws:s3/bucket:Bucket",
        "aws:s3/bucketOwnershipControls:BucketOwnershipControls",
        "aws:s3/bucketPolicy:BucketPolicy",
        "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
        "aws:s3/bucketVersioning:BucketVersioning",
        "aws:sqs/queuePolicy:QueuePolicy",
    }
)


def requests(resource: RecordedResource) -> list[Request]:
    return [build(resource.inputs, resource.name) for build in REQUESTS.get(resource.type, ())]
