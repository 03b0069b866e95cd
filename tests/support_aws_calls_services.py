"""The create calls of the EKS, S3, KMS, SQS and EventBridge resources, as the Terraform AWS
provider's expanders send them (tests/support_botocore.py checks them)."""

from __future__ import annotations

from tests.support_aws_calls import Params, Request, some, tags


def eks_cluster(i: Params, name: str) -> Request:
    vpc = i["vpcConfig"]
    encryption = i.get("encryptionConfig")
    access = i.get("accessConfig") or {}
    return (
        "eks",
        "CreateCluster",
        some(
            name=i.get("name", name),
            version=i.get("version"),
            roleArn=i["roleArn"],
            resourcesVpcConfig=some(
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
            accessConfig=some(
                authenticationMode=access.get("authenticationMode"),
                bootstrapClusterCreatorAdminPermissions=access.get("bootstrapClusterCreatorAdminPermissions"),
            ),
            bootstrapSelfManagedAddons=i.get("bootstrapSelfManagedAddons"),
            upgradePolicy=i.get("upgradePolicy"),
            deletionProtection=i.get("deletionProtection"),
            tags=i.get("tags"),
        ),
    )


def node_group(i: Params, name: str) -> Request:
    return (
        "eks",
        "CreateNodegroup",
        some(
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


def addon(i: Params, name: str) -> Request:
    return (
        "eks",
        "CreateAddon",
        some(
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


def access_entry(i: Params, name: str) -> Request:
    return (
        "eks",
        "CreateAccessEntry",
        some(
            clusterName=i["clusterName"],
            principalArn=i["principalArn"],
            type=i.get("type"),
            kubernetesGroups=i.get("kubernetesGroups"),
            username=i.get("userName"),
            tags=i.get("tags"),
        ),
    )


def pod_identity(i: Params, name: str) -> Request:
    return (
        "eks",
        "CreatePodIdentityAssociation",
        some(
            clusterName=i["clusterName"],
            namespace=i["namespace"],
            serviceAccount=i["serviceAccount"],
            roleArn=i["roleArn"],
            tags=i.get("tags"),
        ),
    )


def lifecycle(i: Params, name: str) -> Request:
    def rule(r: Params) -> Params:
        return some(
            ID=r.get("id"),
            Status=r["status"],
            Filter=some(Prefix=(r.get("filter") or {}).get("prefix")),
            Transitions=[some(Days=t.get("days"), StorageClass=t["storageClass"]) for t in r.get("transitions", [])],
            Expiration=some(Days=(r.get("expiration") or {}).get("days")),
            NoncurrentVersionExpiration=some(
                NoncurrentDays=(r.get("noncurrentVersionExpiration") or {}).get("noncurrentDays")
            ),
            AbortIncompleteMultipartUpload=some(
                DaysAfterInitiation=(r.get("abortIncompleteMultipartUpload") or {}).get("daysAfterInitiation")
            ),
        )

    configuration = {"Rules": [rule(r) for r in i["rules"]]}
    return "s3", "PutBucketLifecycleConfiguration", {"Bucket": i["bucket"], "LifecycleConfiguration": configuration}


def directory_bucket(i: Params, name: str) -> Request:
    location = i["location"]
    configuration = some(
        Location=some(Type=location.get("type"), Name=location["name"]),
        Bucket=some(DataRedundancy=i.get("dataRedundancy"), Type=i.get("type")),
    )
    return "s3", "CreateBucket", {"Bucket": i["bucket"], "CreateBucketConfiguration": configuration}


def kms_key(i: Params, name: str) -> Request:
    return (
        "kms",
        "CreateKey",
        some(
            Description=i.get("description"),
            KeyUsage=i.get("keyUsage"),
            KeySpec=i.get("customerMasterKeySpec"),
            Policy=i.get("policy"),
            Tags=tags(i.get("tags"), "TagKey", "TagValue"),
        ),
    )


def kms_deletion(i: Params, name: str) -> Request:
    # Not a create call: what `pulumi destroy` (or a replacement) sends with the key's window.
    return "kms", "ScheduleKeyDeletion", {"KeyId": f"{name}-id", "PendingWindowInDays": i["deletionWindowInDays"]}


def queue(i: Params, name: str) -> Request:
    attributes = some(
        MessageRetentionPeriod=str(i["messageRetentionSeconds"]) if "messageRetentionSeconds" in i else None,
        SqsManagedSseEnabled=str(i["sqsManagedSseEnabled"]).lower() if "sqsManagedSseEnabled" in i else None,
    )
    return "sqs", "CreateQueue", some(QueueName=i.get("name", name), Attributes=attributes, tags=i.get("tags"))


def event_rule(i: Params, name: str) -> Request:
    return (
        "events",
        "PutRule",
        some(
            Name=i.get("name", name),
            EventPattern=i.get("eventPattern"),
            Description=i.get("description"),
            Tags=tags(i.get("tags")),
        ),
    )
