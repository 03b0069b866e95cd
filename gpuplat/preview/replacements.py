"""Which input changes force a resource to be replaced, per resource type, and which types hold data.

The offline preview has no provider plugin to ask, so the providers' knowledge is curated
here. Every entry names the input path (camelCase, dot-joined, as in the recorded inputs)
and where the fact comes from:

pulumi-aws is bridged from terraform-provider-aws: a field marked `ForceNew` in the
Terraform schema (or `RequiresReplace` in plugin-framework resources, or forced by a
`CustomizeDiff`) is what `pulumi preview` reports as a replacement. Read from
hashicorp/terraform-provider-aws, internal/service/<service>/<resource>.go (v5/v6):

* fsx/lustre_file_system.go: subnet_ids, security_group_ids, deployment_type, storage_type,
  kms_key_id, drive_cache_type, copy_tags_to_backups, backup_id, import_path, export_path,
  imported_file_chunk_size are ForceNew. storage_capacity is updatable but the CustomizeDiff
  `resourceLustreFileSystemStorageCapacityCustomizeDiff` forces replacement on a DECREASE;
  `...MetadataConfigCustomizeDiff` does the same for a metadata_configuration.iops decrease.
  per_unit_storage_throughput lost its ForceNew in v5 (AWS allows throughput updates on
  PERSISTENT_2). file_system_type_version: ForceNew in v5; the pulumi-aws 7.x docs
  (SDK docstring) say a higher version upgrades in place and a lower one replaces, which is
  what the table encodes. efa_enabled: "must be set at creation ... cannot be changed"
  (pulumi-aws 7.x docs), so any change replaces.
* fsx/data_repository_association.go: file_system_id, file_system_path,
  data_repository_path are ForceNew (s3 policies and chunk size update in place).
* eks/cluster.go: name, role_arn, bootstrap_self_managed_addons,
  access_config.bootstrap_cluster_creator_admin_permissions,
  kubernetes_network_config.{ip_family,service_ipv4_cidr}, outpost_config are ForceNew;
  removing encryption_config is forced by `customdiff.ForceNewIfChange` ("you cannot disable
  envelope encryption"). vpc_config.subnet_ids / security_group_ids are NOT ForceNew any more
  (UpdateClusterConfig accepts them since 2024), so they are updates.
* eks/node_group.go: cluster_name, node_group_name(_prefix), node_role_arn, subnet_ids,
  ami_type, capacity_type, instance_types, disk_size, remote_access, launch_template.{id,name}
  are ForceNew; scaling_config, labels, taints, version, launch_template.version update.
* kms/key.go: customer_master_key_spec, key_usage, multi_region, custom_key_store_id,
  xks_key_id are ForceNew.
* ec2/ec2_capacity_reservation.go: availability_zone, instance_type, instance_platform,
  tenancy, ebs_optimized, ephemeral_storage, instance_match_criteria are ForceNew.
  outpost_arn and placement_group_arn are NOT ForceNew in the schema, yet the update only
  sends count and end date (ModifyCapacityReservation cannot move a reservation): the
  provider would report an update that silently does nothing. They are listed as
  replacements because a new reservation is the only way to get what the spec now asks for.
* s3/directory_bucket.go (plugin framework): bucket, type, location.{name,type} are
  RequiresReplace and the resource is `WithNoOpUpdate` (only force_destroy changes in
  place), so data_redundancy replaces too.
* s3/bucket.go: bucket, bucket_prefix, object_lock_enabled are ForceNew.
* ec2 vpc/subnet/placement group/security group, iam role, sqs queue: their identity
  fields (cidr_block; cidr_block, availability_zone, vpc_id; name, strategy; name,
  description, vpc_id; name; name, fifo_queue) are ForceNew.
* The identity fields of the other types the platform emits (launch template name, addon
  and access entry keys, route table / NAT / endpoint parents, rule parents, bucket
  sub-resources' bucket) are ForceNew too; listed from the same schemas, less central.
* `region` (pulumi-aws 7 per-resource region) moves a resource to another region: replace.

pulumi-kubernetes (provider/pkg/provider/diff.go: `forceNewProperties`): .metadata.name and
.metadata.namespace of every kind; StorageClass .parameters and .provisioner; the whole
PersistentVolumeClaim .spec (so a claim's requested size must never follow anything that
changes); a PersistentVolume's volume source (.spec.csi, .spec.nfs ..., while .spec.capacity
updates in place); ConfigMap .data/.binaryData (replaced rather than mutated, v4 default);
Secret .type, .data, .stringData; ResourceQuota .spec.scopes; Job .spec.template,
.completions, .parallelism, .selector; the .spec.selector of Deployments and StatefulSets
(and a StatefulSet's serviceName, podManagementPolicy, revisionHistoryLimit,
volumeClaimTemplates); Service .spec.clusterIP. helm.v3 Release (helm_release.go,
`forceNewFields := {".name", ".namespace"}`). The Kubernetes API server rejects updates to
StorageClass reclaimPolicy / volumeBindingMode, a PersistentVolume's volumeMode and node
affinity, a DaemonSet's selector (the provider's table spells the kind `Daemonset`, so it
never matches), a PriorityClass value and a RoleBinding roleRef, so those
can only be applied by delete + create: listed as replacements. `kind` and an apiVersion
group change name a different API object; a version-only change (v1beta1 -> v1) is the same
object, which is why the components alias old versions.

Pulumi itself: a resource's own `replaceOnChanges` option ("*" = any input) forces
replacement; `deleteBeforeReplace` only orders it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from .stateful import STATEFUL_TYPES as STATEFUL_TYPES  # the diff refuses to replace or delete these

Condition = Callable[[Any, Any], bool]


@dataclass(frozen=True)
class Rule:
    path: str  # camelCase input path, dot-joined; a change at or below (or above) it matches
    when: Condition | None = None  # (old, new) at `path` -> replace?; None: any change replaces


def _decrease(old: Any, new: Any) -> bool:
    return isinstance(old, int | float) and isinstance(new, int | float) and new < old


def _version_key(value: Any) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in str(value).split("."))
    except ValueError:
        return ()


def _downgrade(old: Any, new: Any) -> bool:
    before, after = _version_key(old), _version_key(new)
    return not before or not after or after < before


def _removed(old: Any, new: Any) -> bool:
    return bool(old) and not new


def _iops_decrease(old: Any, new: Any) -> bool:
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return False
    before = cast("Mapping[str, Any]", old).get("iops")
    after = cast("Mapping[str, Any]", new).get("iops")
    return _decrease(before, after)


def _api_group(value: Any) -> str:
    text = str(value or "")
    return text.rpartition("/")[0] if "/" in text else ""


def _group_changed(old: Any, new: Any) -> bool:
    return _api_group(old) != _api_group(new)


def _differs(old: Any, new: Any) -> bool:
    return old != new


def _rules(*paths: str) -> tuple[Rule, ...]:
    return tuple(Rule(p) for p in paths)


_AWS: dict[str, tuple[Rule, ...]] = {
    "aws:fsx/lustreFileSystem:LustreFileSystem": (
        *_rules(
            "subnetIds",
            "securityGroupIds",
            "deploymentType",
            "storageType",
            "kmsKeyId",
            "driveCacheType",
            "copyTagsToBackups",
            "backupId",
            "importPath",
            "exportPath",
            "importedFileChunkSize",
            "efaEnabled",
        ),
        Rule("storageCapacity", _decrease),
        Rule("fileSystemTypeVersion", _downgrade),
        Rule("metadataConfiguration", _iops_decrease),
    ),
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": _rules(
        "fileSystemId", "fileSystemPath", "dataRepositoryPath"
    ),
    "aws:eks/cluster:Cluster": (
        *_rules(
            "name",
            "roleArn",
            "bootstrapSelfManagedAddons",
            "accessConfig.bootstrapClusterCreatorAdminPermissions",
            "kubernetesNetworkConfig.ipFamily",
            "kubernetesNetworkConfig.serviceIpv4Cidr",
            "outpostConfig",
        ),
        Rule("encryptionConfig", _removed),
    ),
    "aws:eks/nodeGroup:NodeGroup": _rules(
        "clusterName",
        "nodeGroupName",
        "nodeGroupNamePrefix",
        "nodeRoleArn",
        "subnetIds",
        "amiType",
        "capacityType",
        "instanceTypes",
        "diskSize",
        "remoteAccess",
        "launchTemplate.id",
        "launchTemplate.name",
    ),
    "aws:kms/key:Key": _rules("customerMasterKeySpec", "keyUsage", "multiRegion", "customKeyStoreId", "xksKeyId"),
    "aws:ec2/capacityReservation:CapacityReservation": _rules(
        "availabilityZone",
        "instanceType",
        "instancePlatform",
        "tenancy",
        "ebsOptimized",
        "ephemeralStorage",
        "instanceMatchCriteria",
        "placementGroupArn",
        "outpostArn",
    ),
    "aws:s3/directoryBucket:DirectoryBucket": _rules("bucket", "location", "dataRedundancy", "type"),
    "aws:s3/bucket:Bucket": _rules("bucket", "bucketPrefix", "objectLockEnabled"),
    "aws:s3/bucketV2:BucketV2": _rules("bucket", "bucketPrefix", "objectLockEnabled"),
    "aws:ec2/vpc:Vpc": _rules("cidrBlock", "ipv4IpamPoolId"),
    "aws:ec2/subnet:Subnet": _rules("cidrBlock", "availabilityZone", "availabilityZoneId", "vpcId", "outpostArn"),
    "aws:ec2/placementGroup:PlacementGroup": _rules("name", "strategy", "partitionCount", "spreadLevel"),
    "aws:ec2/securityGroup:SecurityGroup": _rules("name", "namePrefix", "description", "vpcId"),
    "aws:iam/role:Role": _rules("name", "namePrefix"),
    "aws:sqs/queue:Queue": _rules("name", "namePrefix", "fifoQueue"),
    # Identity fields of the other types the platform emits.
    "aws:ec2/launchTemplate:LaunchTemplate": _rules("name", "namePrefix"),
    "aws:eks/addon:Addon": _rules("addonName", "clusterName"),
    "aws:eks/accessEntry:AccessEntry": _rules("clusterName", "principalArn", "type"),
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": _rules("clusterName", "namespace", "serviceAccount"),
    "aws:iam/rolePolicy:RolePolicy": _rules("name", "namePrefix", "role"),
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": _rules("role", "policyArn"),
    "aws:ec2/natGateway:NatGateway": _rules("allocationId", "subnetId", "connectivityType"),
    "aws:ec2/routeTable:RouteTable": _rules("vpcId"),
    "aws:ec2/routeTableAssociation:RouteTableAssociation": _rules("subnetId", "gatewayId"),
    "aws:ec2/vpcEndpoint:VpcEndpoint": _rules("vpcId", "serviceName", "vpcEndpointType"),
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": _rules("securityGroupId"),
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": _rules("securityGroupId"),
    "aws:sqs/queuePolicy:QueuePolicy": _rules("queueUrl"),
    "aws:cloudwatch/eventRule:EventRule": _rules("name", "namePrefix"),
    "aws:cloudwatch/eventTarget:EventTarget": _rules("rule", "targetId"),
}

for _sub in (
    "bucketLifecycleConfiguration:BucketLifecycleConfiguration",
    "bucketOwnershipControls:BucketOwnershipControls",
    "bucketPolicy:BucketPolicy",
    "bucketPublicAccessBlock:BucketPublicAccessBlock",
    "bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
    "bucketVersioning:BucketVersioning",
):
    _AWS[f"aws:s3/{_sub}"] = _rules("bucket", "expectedBucketOwner")

_KUBERNETES: dict[str, tuple[Rule, ...]] = {
    "kubernetes:helm.sh/v3:Release": _rules("name", "namespace"),
    "kubernetes:storage.k8s.io/v1:StorageClass": _rules(
        "provisioner", "parameters", "reclaimPolicy", "volumeBindingMode"
    ),
    "kubernetes:core/v1:PersistentVolume": _rules(
        "spec.csi", "spec.nfs", "spec.hostPath", "spec.local", "spec.nodeAffinity", "spec.volumeMode"
    ),
    "kubernetes:core/v1:PersistentVolumeClaim": _rules("spec"),
    "kubernetes:core/v1:ConfigMap": _rules("data", "binaryData"),
    "kubernetes:core/v1:Secret": _rules("type", "data", "stringData"),
    "kubernetes:core/v1:ResourceQuota": _rules("spec.scopes"),
    "kubernetes:core/v1:Service": _rules("spec.clusterIP"),
    "kubernetes:batch/v1:Job": _rules("spec.template", "spec.completions", "spec.parallelism", "spec.selector"),
    "kubernetes:apps/v1:Deployment": _rules("spec.selector"),
    "kubernetes:apps/v1:DaemonSet": _rules("spec.selector"),
    "kubernetes:apps/v1:StatefulSet": _rules(
        "spec.selector",
        "spec.serviceName",
        "spec.podManagementPolicy",
        "spec.revisionHistoryLimit",
        "spec.volumeClaimTemplates",
    ),
    "kubernetes:scheduling.k8s.io/v1:PriorityClass": _rules("value"),
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": _rules("roleRef"),
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding": _rules("roleRef"),
}

# Every Kubernetes object (not Helm releases, which carry name/namespace at the top level).
_KUBERNETES_OBJECT: tuple[Rule, ...] = (
    *_rules("metadata.name", "metadata.namespace", "kind"),
    Rule("apiVersion", _group_changed),
)

REPLACE_RULES: Mapping[str, tuple[Rule, ...]] = {**_AWS, **_KUBERNETES}


def rules_for(type_: str) -> tuple[Rule, ...]:
    """The replacement rules of a resource type (empty for components and unknown types)."""
    rules = REPLACE_RULES.get(type_, ())
    if type_.startswith("aws:"):
        rules = (*rules, Rule("region"))
    elif type_.startswith("kubernetes:") and type_ != "kubernetes:helm.sh/v3:Release":
        rules = (*rules, *_KUBERNETES_OBJECT)
    return rules


def _related(changed: str, rule: str) -> bool:
    return changed == rule or changed.startswith(rule + ".") or rule.startswith(changed + ".")


def value_at(data: Mapping[str, Any], path: str) -> Any:
    """The value at a dot-joined path, None when absent (rule paths never hold dotted keys)."""
    current: Any = data
    for part in path.split("."):
        if not isinstance(current, Mapping):
            return None
        current = cast("Mapping[str, Any]", current).get(part)
    return current


def replacing_fields(
    type_: str,
    changed: Sequence[str],
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    replace_on_changes: Sequence[str] = (),
    unknown: Collection[str] = (),
) -> list[str]:
    """The changed paths that force a replacement, in the order given.

    `unknown` paths will only be known after apply (an id of a replaced resource): like the
    engine, a rule on them replaces whatever its condition, as the new value cannot be compared.
    """
    rules = [*rules_for(type_), *(Rule(p) for p in replace_on_changes if p != "*")]
    if "*" in replace_on_changes:
        return list(changed)
    forcing: list[str] = []
    for path in changed:
        for rule in rules:
            if not _related(path, rule.path):
                continue
            if path in unknown:
                forcing.append(path)
                break
            before, after = value_at(old, rule.path), value_at(new, rule.path)
            # A change above the rule's path (a whole block added or dropped) only counts when
            # the value at the rule's path really differs.
            if (rule.when or _differs)(before, after):
                forcing.append(path)
                break
    return forcing
