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
from botocore.model import ListShape, MapShape, OperationModel, Shape, StructureShape
from botocore.validate import ParamValidator

from gpuplat.preview import RecordedResource

Params = dict[str, Any]
Request = tuple[str, str, Params]  # service, operation, parameters


@cache
def operation(service: str, name: str) -> OperationModel:
    return botocore.session.get_session().get_service_model(service).operation_model(name)


def _extra(shape: Shape, value: Any, path: str, mock: Callable[[str], bool]) -> Iterator[str]:
    """What ParamValidator does not check: enums, patterns, maximums."""
    if isinstance(shape, StructureShape) and isinstance(value, dict):
        for key, item in value.items():
            if key in shape.members:
                yield from _extra(shape.members[key], item, f"{path}.{key}", mock)
    elif isinstance(shape, ListShape) and isinstance(value, list):
        if "max" in shape.metadata and len(value) > shape.metadata["max"]:
            yield f"{path}: {len(value)} items, at most {shape.metadata['max']}"
        for i, item in enumerate(value):
            yield from _extra(shape.member, item, f"{path}[{i}]", mock)
    elif isinstance(shape, MapShape) and isinstance(value, dict):
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
    shape = operation(service, name).input_shape
    report = ParamValidator().validate(params, shape)
    found = (
        [line.strip() for line in report.generate_report().splitlines() if line.strip()] if report.has_errors() else []
    )
    return found + list(_extra(shape, params, name, mock))


def mock_values(resources: tuple[RecordedResource, ...]) -> Callable[[str], bool]:
    """True for a value the mock engine invented: it carries another resource's logical name."""
    names = sorted({r.name for r in resources}, key=len, reverse=True)
    return lambda value: any(name in value for name in names)


# ------------------------------------------------------------------ the provider's create calls


def _tags(tags: dict[str, str] | None, key: str = "Key", value: str = "Value") -> list[dict[str, str]]:
    return [{key: k, value: v} for k, v in (tags or {}).items()]


def _ec2_tags(kind: str, inputs: Params) -> list[Params]:
    return [{"ResourceType": kind, "Tags": _tags(inputs.get("tags"))}] if inputs.get("tags") else []


def _bool(value: Any) -> Any:
    return value == "true" if isinstance(value, str) and value in ("true", "false") else value


def _some(**fields: Any) -> Params:
    """Only the fields that are set: the provider sends no member for an unset argument."""
    return {k: v for k, v in fields.items() if v is not None and v != [] and v != {}}


def _fsx_file_system(i: Params, name: str) -> Request:
    lustre = _some(
        DeploymentType=i.get("deploymentType"),
        PerUnitStorageThroughput=i.get("perUnitStorageThroughput"),
        DataCompressionType=i.get("dataCompressionType"),
        CopyTagsToBackups=i.get("copyTagsToBackups"),
        AutomaticBackupRetentionDays=i.get("automaticBackupRetentionDays"),
        DailyAutomaticBackupStartTime=i.get("dailyAutomaticBackupStartTime"),
        EfaEnabled=i.get("efaEnabled"),
        MetadataConfiguration=_some(
            Mode=(i.get("metadataConfiguration") or {}).get("mode"),
            Iops=(i.get("metadataConfiguration") or {}).get("iops"),
        ),
    )
    subnets = i["subnetIds"] if isinstance(i["subnetIds"], list) else [i["subnetIds"]]
    return (
        "fsx",
        "CreateFileSystem",
        _some(
            FileSystemType="LUSTRE",
            StorageCapacity=i["storageCapacity"],
            StorageType=i.get("storageType"),
            SubnetIds=subnets,
            SecurityGroupIds=i.get("securityGroupIds"),
            KmsKeyId=i.get("kmsKeyId"),
            FileSystemTypeVersion=i.get("fileSystemTypeVersion"),
            LustreConfiguration=lustre,
            Tags=_tags(i.get("tags")),
        ),
    )


def _fsx_association(i: Params, name: str) -> Request:
    s3 = i.get("s3") or {}
    return (
        "fsx",
        "CreateDataRepositoryAssociation",
        _some(
            FileSystemId=i["fileSystemId"],
            FileSystemPath=i.get("fileSystemPath"),
            DataRepositoryPath=i["dataRepositoryPath"],
            BatchImportMetaDataOnCreate=i.get("batchImportMetaDataOnCreate"),
            ImportedFileChunkSize=i.get("importedFileChunkSize"),
            S3=_some(
                AutoExportPolicy=_some(Events=(s3.get("autoExportPolicy") or {}).get("events")),
                AutoImportPolicy=_some(Events=(s3.get("autoImportPolicy") or {}).get("events")),
            ),
            Tags=_tags(i.get("tags")),
        ),
    )


def _capacity_reservation(i: Params, name: str) -> Request:
    return (
        "ec2",
        "CreateCapacityReservation",
        _some(
            InstanceType=i["instanceType"],
            InstancePlatform=i["instancePlatform"],
            AvailabilityZone=i.get("availabilityZone"),
            InstanceCount=i["instanceCount"],
            EndDateType=i.get("endDateType"),
            EndDate=i.get("endDate"),
            InstanceMatchCriteria=i.get("instanceMatchCriteria"),
            Tenancy=i.get("tenancy"),
            EbsOptimized=i.get("ebsOptimized"),
            PlacementGroupArn=i.get("placementGroupArn"),
            TagSpecifications=_ec2_tags("capacity-reservation", i),
        ),
    )


def _placement_group(i: Params, name: str) -> Request:
    return (
        "ec2",
        "CreatePlacementGroup",
        _some(
            GroupName=i.get("name", name),
            Strategy=i.get("strategy"),
            PartitionCount=i.get("partitionCount"),
            SpreadLevel=i.get("spreadLevel"),
            TagSpecifications=_ec2_tags("placement-group", i),
        ),
    )


def _vpc_endpoint(i: Params, name: str) -> Request:
    return (
        "ec2",
        "CreateVpcEndpoint",
        _some(
            VpcId=i["vpcId"],
            ServiceName=i["serviceName"],
            VpcEndpointType=i.get("vpcEndpointType"),
            PrivateDnsEnabled=i.get("privateDnsEnabled"),
            SubnetIds=i.get("subnetIds"),
            SecurityGroupIds=i.get("securityGroupIds"),
            RouteTableIds=i.get("routeTableIds"),
            TagSpecifications=_ec2_tags("vpc-endpoint", i),
        ),
    )


def _launch_template(i: Params, name: str) -> Request:
    devices = [
        _some(
            DeviceName=d.get("deviceName"), Ebs=_some(**{k[0].upper() + k[1:]: _bool(v) for k, v in d["ebs"].items()})
        )
        for d in i.get("blockDeviceMappings", [])
    ]
    metadata = {k[0].upper() + k[1:]: v for k, v in (i.get("metadataOptions") or {}).items()}
    specs = [{"ResourceType": s["resourceType"], "Tags": _tags(s.get("tags"))} for s in i.get("tagSpecifications", [])]
    data = _some(BlockDeviceMappings=devices, MetadataOptions=metadata, TagSpecifications=specs)
    return (
        "ec2",
        "CreateLaunchTemplate",
        _some(LaunchTemplateName=name, VersionDescription=i.get("description"), LaunchTemplateData=data),
    )


def _subnet(i: Params, name: str) -> Request:
    return (
        "ec2",
        "CreateSubnet",
        _some(
            VpcId=i["vpcId"],
            CidrBlock=i.get("cidrBlock"),
            AvailabilityZone=i.get("availabilityZone"),
            TagSpecifications=_ec2_tags("subnet", i),
        ),
    )


def _ingress(i: Params, name: str) -> Request:
    permission = _some(
        IpProtocol=i["ipProtocol"],
        FromPort=i.get("fromPort"),
        ToPort=i.get("toPort"),
        IpRanges=[_some(CidrIp=i["cidrIpv4"], Description=i.get("description"))] if i.get("cidrIpv4") else None,
        UserIdGroupPairs=[_some(GroupId=i["referencedSecurityGroupId"], Description=i.get("description"))]
        if i.get("referencedSecurityGroupId")
        else None,
    )
    kind = "security-group-rule"
    return (
        "ec2",
        "AuthorizeSecurityGroupIngress",
        _some(GroupId=i["securityGroupId"], IpPermissions=[permission], TagSpecifications=_ec2_tags(kind, i)),
    )


def _egress(i: Params, name: str) -> Request:
    _, _, params = _ingress(i, name)
    return "ec2", "AuthorizeSecurityGroupEgress", params


def _eks_cluster(i: Params, name: str) -> Request:
    vpc = i["vpcConfig"]
    encryption = i.get("encryptionConfig")
    access = i.get("accessConfig") or {}
    return (
        "eks",
        "CreateCluster",
        _some(
            name=i.get("name", name),
            version=i.get("version"),
            roleArn=i["roleArn"],
            resourcesVpcConfig=_some(
                subnetIds=vpc.get("subnetIds"),
                securityGroupIds=vpc.get("securityGroupIds"),
                endpointPublicAccess=vpc.get("endpointPublicAccess"),
                endpointPrivateAccess=vpc.get("endpointPrivateAccess"),
                publicAccessCidrs=vpc.get("publicAccessCidrs"),
            ),
            logging={"clusterLogging": [{"types": i["enabledClusterLogTypes"], "enabled": True}]}
            if i.get("enabledClusterLogTypes")
            else None,
            encryptionConfig=[{"resources": encryption["resources"], "provider": encryption["provider"]}]
            if encryption
            else None,
            accessConfig=_some(
                authenticationMode=access.get("authenticationMode"),
                bootstrapClusterCreatorAdminPermissions=access.get("bootstrapClusterCreatorAdminPermissions"),
            ),
            bootstrapSelfManagedAddons=i.get("bootstrapSelfManagedAddons"),
            upgradePolicy=i.get("upgradePolicy"),
            deletionProtection=i.get("deletionProtection"),
            tags=i.get("tags"),
        ),
    )


def _node_group(i: Params, name: str) -> Request:
    return (
        "eks",
        "CreateNodegroup",
        _some(
            clusterName=i["clusterName"],
            nodegroupName=i.get("nodeGroupName", name),
            scalingConfig=i.get("scalingConfig"),
            subnets=i["subnetIds"],
            instanceTypes=i.get("instanceTypes"),
            amiType=i.get("amiType"),
            capacityType=i.get("capacityType"),
            launchTemplate=i.get("launchTemplate"),
            nodeRole=i["nodeRoleArn"],
            labels=i.get("labels"),
            taints=i.get("taints"),
            updateConfig=i.get("updateConfig"),
            tags=i.get("tags"),
        ),
    )


def _addon(i: Params, name: str) -> Request:
    return (
        "eks",
        "CreateAddon",
        _some(
            clusterName=i["clusterName"],
            addonName=i["addonName"],
            addonVersion=i.get("addonVersion"),
            serviceAccountRoleArn=i.get("serviceAccountRoleArn"),
            resolveConflicts=i.get("resolveConflictsOnCreate"),
            configurationValues=i.get("configurationValues"),
            podIdentityAssociations=i.get("podIdentityAssociations"),
            tags=i.get("tags"),
        ),
    )


def _access_entry(i: Params, name: str) -> Request:
    return (
        "eks",
        "CreateAccessEntry",
        _some(
            clusterName=i["clusterName"],
            principalArn=i["principalArn"],
            type=i.get("type"),
            kubernetesGroups=i.get("kubernetesGroups"),
            username=i.get("userName"),
            tags=i.get("tags"),
        ),
    )


def _pod_identity(i: Params, name: str) -> Request:
    return (
        "eks",
        "CreatePodIdentityAssociation",
        _some(
            clusterName=i["clusterName"],
            namespace=i["namespace"],
            serviceAccount=i["serviceAccount"],
            roleArn=i["roleArn"],
            tags=i.get("tags"),
        ),
    )


def _lifecycle(i: Params, name: str) -> Request:
    def rule(r: Params) -> Params:
        return _some(
            ID=r.get("id"),
            Status=r["status"],
            Filter=_some(Prefix=(r.get("filter") or {}).get("prefix")),
            Transitions=[_some(Days=t.get("days"), StorageClass=t["storageClass"]) for t in r.get("transitions", [])],
            Expiration=_some(Days=(r.get("expiration") or {}).get("days")),
            NoncurrentVersionExpiration=_some(
                NoncurrentDays=(r.get("noncurrentVersionExpiration") or {}).get("noncurrentDays")
            ),
            AbortIncompleteMultipartUpload=_some(
                DaysAfterInitiation=(r.get("abortIncompleteMultipartUpload") or {}).get("daysAfterInitiation")
            ),
        )

    configuration = {"Rules": [rule(r) for r in i["rules"]]}
    return "s3", "PutBucketLifecycleConfiguration", {"Bucket": i["bucket"], "LifecycleConfiguration": configuration}


def _directory_bucket(i: Params, name: str) -> Request:
    location = i["location"]
    configuration = _some(
        Location=_some(Type=location.get("type"), Name=location["name"]),
        Bucket=_some(DataRedundancy=i.get("dataRedundancy"), Type=i.get("type")),
    )
    return "s3", "CreateBucket", {"Bucket": i["bucket"], "CreateBucketConfiguration": configuration}


def _kms_key(i: Params, name: str) -> Request:
    return (
        "kms",
        "CreateKey",
        _some(
            Description=i.get("description"),
            KeyUsage=i.get("keyUsage"),
            KeySpec=i.get("customerMasterKeySpec"),
            Policy=i.get("policy"),
            Tags=_tags(i.get("tags"), "TagKey", "TagValue"),
        ),
    )


def _kms_deletion(i: Params, name: str) -> Request:
    # Not a create call: what `pulumi destroy` (or a replacement) sends with the key's window.
    return "kms", "ScheduleKeyDeletion", {"KeyId": f"{name}-id", "PendingWindowInDays": i["deletionWindowInDays"]}


def _queue(i: Params, name: str) -> Request:
    attributes = _some(
        MessageRetentionPeriod=str(i["messageRetentionSeconds"]) if "messageRetentionSeconds" in i else None,
        SqsManagedSseEnabled=str(i["sqsManagedSseEnabled"]).lower() if "sqsManagedSseEnabled" in i else None,
    )
    return "sqs", "CreateQueue", _some(QueueName=i.get("name", name), Attributes=attributes, tags=i.get("tags"))


def _event_rule(i: Params, name: str) -> Request:
    return (
        "events",
        "PutRule",
        _some(
            Name=i.get("name", name),
            EventPattern=i.get("eventPattern"),
            Description=i.get("description"),
            Tags=_tags(i.get("tags")),
        ),
    )


# type -> the provider's create call(s); a resource type absent here and from NOT_CHECKED fails the test
REQUESTS: dict[str, tuple[Callable[[Params, str], Request], ...]] = {
    "aws:fsx/lustreFileSystem:LustreFileSystem": (_fsx_file_system,),
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": (_fsx_association,),
    "aws:ec2/capacityReservation:CapacityReservation": (_capacity_reservation,),
    "aws:ec2/placementGroup:PlacementGroup": (_placement_group,),
    "aws:ec2/vpcEndpoint:VpcEndpoint": (_vpc_endpoint,),
    "aws:ec2/launchTemplate:LaunchTemplate": (_launch_template,),
    "aws:ec2/subnet:Subnet": (_subnet,),
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": (_ingress,),
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": (_egress,),
    "aws:eks/cluster:Cluster": (_eks_cluster,),
    "aws:eks/nodeGroup:NodeGroup": (_node_group,),
    "aws:eks/addon:Addon": (_addon,),
    "aws:eks/accessEntry:AccessEntry": (_access_entry,),
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": (_pod_identity,),
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration": (_lifecycle,),
    "aws:s3/directoryBucket:DirectoryBucket": (_directory_bucket,),
    "aws:kms/key:Key": (_kms_key, _kms_deletion),
    "aws:sqs/queue:Queue": (_queue,),
    "aws:cloudwatch/eventRule:EventRule": (_event_rule,),
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
