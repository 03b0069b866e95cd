"""The create calls of the EC2 and FSx resources, as the Terraform AWS provider's expanders send them
(tests/support_botocore.py checks them): field names, a single value where the API wants a list,
"true" strings to booleans, tags as the API wants them, and no member for an unset argument."""

from __future__ import annotations

from typing import Any

Params = dict[str, Any]
Request = tuple[str, str, Params]  # service, operation, parameters


def tags(tags: dict[str, str] | None, key: str = "Key", value: str = "Value") -> list[dict[str, str]]:
    return [{key: k, value: v} for k, v in (tags or {}).items()]


def ec2_tags(kind: str, inputs: Params) -> list[Params]:
    return [{"ResourceType": kind, "Tags": tags(inputs.get("tags"))}] if inputs.get("tags") else []


def as_bool(value: Any) -> Any:
    return value == "true" if isinstance(value, str) and value in ("true", "false") else value


def some(**fields: Any) -> Params:
    """Only the fields that are set: the provider sends no member for an unset argument."""
    return {k: v for k, v in fields.items() if v is not None and v != [] and v != {}}


def fsx_file_system(i: Params, name: str) -> Request:
    lustre = some(
        DeploymentType=i.get("deploymentType"),
        PerUnitStorageThroughput=i.get("perUnitStorageThroughput"),
        DataCompressionType=i.get("dataCompressionType"),
        CopyTagsToBackups=i.get("copyTagsToBackups"),
        AutomaticBackupRetentionDays=i.get("automaticBackupRetentionDays"),
        DailyAutomaticBackupStartTime=i.get("dailyAutomaticBackupStartTime"),
        EfaEnabled=i.get("efaEnabled"),
        MetadataConfiguration=some(
            Mode=(i.get("metadataConfiguration") or {}).get("mode"),
            Iops=(i.get("metadataConfiguration") or {}).get("iops"),
        ),
    )
    subnets = i["subnetIds"] if isinstance(i["subnetIds"], list) else [i["subnetIds"]]
    return (
        "fsx",
        "CreateFileSystem",
        some(
            FileSystemType="LUSTRE",
            StorageCapacity=i["storageCapacity"],
            StorageType=i.get("storageType"),
            SubnetIds=subnets,
            SecurityGroupIds=i.get("securityGroupIds"),
            KmsKeyId=i.get("kmsKeyId"),
            FileSystemTypeVersion=i.get("fileSystemTypeVersion"),
            LustreConfiguration=lustre,
            Tags=tags(i.get("tags")),
        ),
    )


def fsx_association(i: Params, name: str) -> Request:
    s3 = i.get("s3") or {}
    return (
        "fsx",
        "CreateDataRepositoryAssociation",
        some(
            FileSystemId=i["fileSystemId"],
            FileSystemPath=i.get("fileSystemPath"),
            DataRepositoryPath=i["dataRepositoryPath"],
            BatchImportMetaDataOnCreate=i.get("batchImportMetaDataOnCreate"),
            ImportedFileChunkSize=i.get("importedFileChunkSize"),
            S3=some(
                AutoExportPolicy=some(Events=(s3.get("autoExportPolicy") or {}).get("events")),
                AutoImportPolicy=some(Events=(s3.get("autoImportPolicy") or {}).get("events")),
            ),
            Tags=tags(i.get("tags")),
        ),
    )


def capacity_reservation(i: Params, name: str) -> Request:
    return (
        "ec2",
        "CreateCapacityReservation",
        some(
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
            TagSpecifications=ec2_tags("capacity-reservation", i),
        ),
    )


def placement_group(i: Params, name: str) -> Request:
    return (
        "ec2",
        "CreatePlacementGroup",
        some(
            GroupName=i.get("name", name),
            Strategy=i.get("strategy"),
            PartitionCount=i.get("partitionCount"),
            SpreadLevel=i.get("spreadLevel"),
            TagSpecifications=ec2_tags("placement-group", i),
        ),
    )


def vpc_endpoint(i: Params, name: str) -> Request:
    return (
        "ec2",
        "CreateVpcEndpoint",
        some(
            VpcId=i["vpcId"],
            ServiceName=i["serviceName"],
            VpcEndpointType=i.get("vpcEndpointType"),
            PrivateDnsEnabled=i.get("privateDnsEnabled"),
            SubnetIds=i.get("subnetIds"),
            SecurityGroupIds=i.get("securityGroupIds"),
            RouteTableIds=i.get("routeTableIds"),
            TagSpecifications=ec2_tags("vpc-endpoint", i),
        ),
    )


def launch_template(i: Params, name: str) -> Request:
    devices = [
        some(
            DeviceName=d.get("deviceName"), Ebs=some(**{k[0].upper() + k[1:]: as_bool(v) for k, v in d["ebs"].items()})
        )
        for d in i.get("blockDeviceMappings", [])
    ]
    metadata = {k[0].upper() + k[1:]: v for k, v in (i.get("metadataOptions") or {}).items()}
    specs = [{"ResourceType": s["resourceType"], "Tags": tags(s.get("tags"))} for s in i.get("tagSpecifications", [])]
    data = some(BlockDeviceMappings=devices, MetadataOptions=metadata, TagSpecifications=specs)
    return (
        "ec2",
        "CreateLaunchTemplate",
        some(LaunchTemplateName=name, VersionDescription=i.get("description"), LaunchTemplateData=data),
    )


def subnet(i: Params, name: str) -> Request:
    return (
        "ec2",
        "CreateSubnet",
        some(
            VpcId=i["vpcId"],
            CidrBlock=i.get("cidrBlock"),
            AvailabilityZone=i.get("availabilityZone"),
            TagSpecifications=ec2_tags("subnet", i),
        ),
    )


def ingress(i: Params, name: str) -> Request:
    permission = some(
        IpProtocol=i["ipProtocol"],
        FromPort=i.get("fromPort"),
        ToPort=i.get("toPort"),
        IpRanges=[some(CidrIp=i["cidrIpv4"], Description=i.get("description"))] if i.get("cidrIpv4") else None,
        UserIdGroupPairs=[some(GroupId=i["referencedSecurityGroupId"], Description=i.get("description"))]
        if i.get("referencedSecurityGroupId")
        else None,
    )
    kind = "security-group-rule"
    return (
        "ec2",
        "AuthorizeSecurityGroupIngress",
        some(GroupId=i["securityGroupId"], IpPermissions=[permission], TagSpecifications=ec2_tags(kind, i)),
    )


def egress(i: Params, name: str) -> Request:
    _, _, params = ingress(i, name)
    return "ec2", "AuthorizeSecurityGroupEgress", params
