"""StorageTiers: hot FSx for Lustre, warm S3 Express One Zone, cold S3, under one KMS key.

Hot and warm sit in the plan's fabric zone (gpuplat/plan/zones.py, also without fabric
pools): training nodes read and write them without crossing a zone. Everything written to the hot tier is
exported to the cold bucket (a data repository association on `/`, NEW/CHANGED/DELETED),
so a checkpoint survives the file system. The cold lifecycle ages the tenants' prefixes through
the spec's storage classes and leaves the exports in S3 Standard (cold_lifecycle.py).

Backups: FSx takes daily automatic backups only of file systems not linked to a data
repository, so with a cold tier the export is the copy and `backupRetentionDays` is 0 (rule);
without one the default keeps 7 days. EFA (`storage.hot.efa`) is fixed at creation: it is set
only when the spec opts in, and adds the all-traffic self rule EFA needs on the Lustre group.

The hot tier is up to two FSx for Lustre file systems, because FSx throughput belongs to a
file system and nothing inside one divides it: `<name>-hot` at the spec's size serves the
critical tenants (priority high or critical), `<name>-hot-standard` at the plan's size
serves the others, sized so the critical one keeps `criticalIopsShare` of the two's
aggregate throughput (gpuplat/plan/storage.py). Same subnet, security group, key and
settings; the standard one exports to `hot-standard/` in the cold bucket, the critical one
to `hot/`. No standard tenant, no second file system.

The file systems, both buckets and the key are stateful: protect=True and
retain_on_delete=True, so neither a bad diff nor a `pulumi destroy` loses data.

Key policy: the account administers the key (the default policy), and S3, S3 Express and
FSx may use it on behalf of principals of this account only. That is what the FSx service
role needs to export into a KMS-encrypted bucket, the same shape as the AWS-managed aws/s3
key; who may read the data is still decided by IAM and the bucket policies.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from gpuplat.catalog import fsx
from gpuplat.model import Platform
from gpuplat.plan.types import StoragePlan

from .._common import child_opts, stateful
from ._common import POLICY_VERSION, partition, region_of, tags
from .cold_lifecycle import cold_lifecycle
from .lustre_options import backup_and_efa, efa_rules
from .storage_access import s3_csi_access
from .warm_tier import warm_bucket

LUSTRE_PORTS = ((988, 988), (1018, 1023))  # LNet, and the Lustre client/server range
EXPORT_EVENTS = ["NEW", "CHANGED", "DELETED"]


def key_policy(region: str, account: str) -> dict[str, Any]:
    part = partition(region)
    return {
        "Version": POLICY_VERSION,
        "Statement": [
            {
                "Sid": "AccountAdministers",
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:{part}:iam::{account}:root"},
                "Action": "kms:*",
                "Resource": "*",
            },
            {
                "Sid": "StorageServicesOfThisAccount",
                "Effect": "Allow",
                "Principal": {"AWS": "*"},
                "Action": [
                    "kms:Encrypt",
                    "kms:Decrypt",
                    "kms:ReEncrypt*",
                    "kms:GenerateDataKey*",
                    "kms:DescribeKey",
                    "kms:CreateGrant",
                ],
                "Resource": "*",
                "Condition": {
                    "StringEquals": {
                        "kms:CallerAccount": account,
                        "kms:ViaService": [
                            f"s3.{region}.amazonaws.com",
                            f"s3express.{region}.amazonaws.com",
                            f"fsx.{region}.amazonaws.com",
                        ],
                    }
                },
            },
        ],
    }


def tls_only_policy(bucket_arn: str) -> dict[str, Any]:
    return {
        "Version": POLICY_VERSION,
        "Statement": [
            {
                "Sid": "DenyInsecureTransport",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:*",
                "Resource": [bucket_arn, f"{bucket_arn}/*"],
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            }
        ],
    }


@dataclass(frozen=True)
class StorageTiersArgs:
    model: Platform
    storage: StoragePlan  # Plan.storage
    fabric_zone: str  # Plan.fabric_zone (fabric.fabric_zone)
    cluster_name: str
    vpc_id: pulumi.Input[str]
    subnet_ids: Mapping[str, pulumi.Input[str]]  # private subnets by zone
    account_id: pulumi.Input[str]
    # Grants the Kubernetes side's S3 CSI driver access to the buckets (storage_access.py).
    pod_identity_agent: pulumi.Resource | None = None
    # The warm bucket keeps the name it had before names carried the account id (existing stacks).
    warm_bucket_legacy_name: bool = False
    # The fabric nodes' EFA group: EFA clients of an EFA-enabled hot tier (storage.hot.efa).
    efa_security_group_id: pulumi.Input[str] | None = None


class StorageTiers(pulumi.ComponentResource):
    kms_key_arn: pulumi.Output[str]
    file_system_id: pulumi.Output[str] | None
    dns_name: pulumi.Output[str] | None
    mount_name: pulumi.Output[str] | None
    # The standard tenants' file system (None when every tenant is critical).
    standard_file_system_id: pulumi.Output[str] | None
    standard_dns_name: pulumi.Output[str] | None
    standard_mount_name: pulumi.Output[str] | None
    warm_bucket: pulumi.Output[str] | None
    cold_bucket: pulumi.Output[str] | None
    s3_csi_role_arn: pulumi.Output[str] | None

    def __init__(self, name: str, args: StorageTiersArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:StorageTiers", name, None, opts)
        model, cluster, zone = args.model, args.cluster_name, args.fabric_zone
        self.file_system_id = self.dns_name = self.mount_name = None
        self.standard_file_system_id = self.standard_dns_name = self.standard_mount_name = None
        self.warm_bucket = self.cold_bucket = self.s3_csi_role_arn = None
        bucket_arns: list[pulumi.Output[str]] = []
        directory_bucket_arns: list[pulumi.Output[str]] = []
        key = self._key(name, args)
        self.kms_key_arn = key.arn
        cold_bucket = self._cold(name, model, cluster, key) if model.storage.cold is not None else None
        if cold_bucket is not None:
            self.cold_bucket = cold_bucket.bucket
            bucket_arns.append(cold_bucket.arn)
        if model.storage.warm is not None:
            warm = warm_bucket(
                self, name, model, cluster, zone, args.account_id, legacy_name=args.warm_bucket_legacy_name
            )
            self._sse(name, "warm", warm.bucket, key)
            self.warm_bucket = warm.bucket
            directory_bucket_arns.append(warm.arn)
        if args.pod_identity_agent is not None and (bucket_arns or directory_bucket_arns):
            self.s3_csi_role_arn = s3_csi_access(
                self, name, model, cluster, bucket_arns, directory_bucket_arns, key.arn, args.pod_identity_agent
            )
        hot = args.storage.hot
        if hot is not None:
            if hot.throughput_per_tib is None:  # the planner sets it on provider aws
                raise ValueError("the hot tier needs a throughput per TiB on provider aws")
            self._hot(name, args, zone, key, cold_bucket)
        self.register_outputs(
            {
                "kmsKeyArn": self.kms_key_arn,
                "fileSystemId": self.file_system_id,
                "dnsName": self.dns_name,
                "mountName": self.mount_name,
                "standardFileSystemId": self.standard_file_system_id,
                "standardDnsName": self.standard_dns_name,
                "standardMountName": self.standard_mount_name,
                "warmBucket": self.warm_bucket,
                "coldBucket": self.cold_bucket,
                "s3CsiRoleArn": self.s3_csi_role_arn,
            }
        )

    def _key(self, name: str, args: StorageTiersArgs) -> aws.kms.Key:
        region = region_of(args.model)
        return aws.kms.Key(
            f"{name}-key",
            description=f"Storage tiers of {args.cluster_name}",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            policy=pulumi.Output.from_input(args.account_id).apply(lambda a: json.dumps(key_policy(region, a))),
            tags=tags(args.model, f"{args.cluster_name}-storage"),
            opts=stateful(self),
        )

    def _sse(self, name: str, suffix: str, bucket: pulumi.Input[str], key: aws.kms.Key) -> None:
        aws.s3.BucketServerSideEncryptionConfiguration(
            f"{name}-{suffix}-sse",
            bucket=bucket,
            rules=[
                aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                    apply_server_side_encryption_by_default=aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
                        sse_algorithm="aws:kms", kms_master_key_id=key.arn
                    ),
                    bucket_key_enabled=True,  # one KMS call per object batch, not per object
                )
            ],
            opts=child_opts(self),
        )

    def _cold(self, name: str, model: Platform, cluster: str, key: aws.kms.Key) -> aws.s3.Bucket:
        """The cold bucket: versioned, KMS-encrypted, private, owner-enforced, TLS only, aged by lifecycle."""
        bucket = aws.s3.Bucket(f"{name}-cold", tags=tags(model, f"{cluster}-cold"), opts=stateful(self))
        self._sse(name, "cold", bucket.id, key)
        aws.s3.BucketVersioning(
            f"{name}-cold-versioning",
            bucket=bucket.id,
            versioning_configuration=aws.s3.BucketVersioningVersioningConfigurationArgs(status="Enabled"),
            opts=child_opts(self),
        )
        block = aws.s3.BucketPublicAccessBlock(
            f"{name}-cold-public-access",
            bucket=bucket.id,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
            opts=child_opts(self),
        )
        aws.s3.BucketOwnershipControls(
            f"{name}-cold-ownership",
            bucket=bucket.id,
            rule=aws.s3.BucketOwnershipControlsRuleArgs(object_ownership="BucketOwnerEnforced"),
            opts=child_opts(self),
        )
        aws.s3.BucketPolicy(
            f"{name}-cold-tls-only",
            bucket=bucket.id,
            policy=bucket.arn.apply(lambda arn: json.dumps(tls_only_policy(arn))),
            opts=child_opts(self, depends_on=[block]),  # S3 rejects policies while the block is being set
        )
        cold_lifecycle(self, name, model, bucket.id)
        return bucket

    def _hot(
        self,
        name: str,
        args: StorageTiersArgs,
        zone: str,
        key: aws.kms.Key,
        cold_bucket: aws.s3.Bucket | None,
    ) -> None:
        hot = args.storage.hot
        assert hot is not None and hot.throughput_per_tib is not None
        group = self._lustre_group(name, args)
        suffix = fsx.COLD_EXPORT_PREFIXES["critical"]  # "hot": the file system's name since the start
        fs = self._lustre(name, suffix, args, hot.capacity_gib, hot.throughput_per_tib, zone, key, group, cold_bucket)
        self.file_system_id, self.dns_name, self.mount_name = fs.id, fs.dns_name, fs.mount_name
        if hot.standard is not None:
            std = hot.standard
            suffix = fsx.COLD_EXPORT_PREFIXES["standard"]
            fs = self._lustre(
                name, suffix, args, std.capacity_gib, std.throughput_per_tib, zone, key, group, cold_bucket
            )
            self.standard_file_system_id, self.standard_dns_name = fs.id, fs.dns_name
            self.standard_mount_name = fs.mount_name

    def _lustre_group(self, name: str, args: StorageTiersArgs) -> aws.ec2.SecurityGroup:
        model, cluster = args.model, args.cluster_name
        cidr = model.network.vpc_cidr
        group = aws.ec2.SecurityGroup(
            f"{name}-lustre",
            vpc_id=args.vpc_id,
            description="FSx for Lustre: LNet and Lustre ports from the VPC",
            tags=tags(model, f"{cluster}-lustre"),
            opts=child_opts(self),
        )
        for low, high in LUSTRE_PORTS:
            # Clients anywhere in the VPC, and the file servers among themselves.
            for source, extra in (("vpc", {"cidr_ipv4": cidr}), ("self", {"referenced_security_group_id": group.id})):
                aws.vpc.SecurityGroupIngressRule(
                    f"{name}-lustre-{low}-{source}",
                    security_group_id=group.id,
                    ip_protocol="tcp",
                    from_port=low,
                    to_port=high,
                    description=f"Lustre {low}-{high} from {source}",
                    tags=tags(model, f"{cluster}-lustre-{low}-{source}"),
                    opts=child_opts(self),
                    **extra,
                )
        if model.storage.hot is not None and model.storage.hot.efa:
            efa_rules(self, name, model, cluster, group, args.efa_security_group_id)
        aws.vpc.SecurityGroupEgressRule(
            f"{name}-lustre-out",
            security_group_id=group.id,
            cidr_ipv4=cidr,
            ip_protocol="-1",
            description="Lustre servers to clients and peers",
            tags=tags(model, f"{cluster}-lustre-out"),
            opts=child_opts(self),
        )
        return group

    def _lustre(
        self,
        name: str,
        suffix: str,
        args: StorageTiersArgs,
        capacity_gib: int,
        throughput_per_tib: int,
        zone: str,
        key: aws.kms.Key,
        group: aws.ec2.SecurityGroup,
        cold_bucket: aws.s3.Bucket | None,
    ) -> aws.fsx.LustreFileSystem:
        """One hot file system `<name>-<suffix>`, exporting to `<suffix>/` in the cold bucket."""
        model, cluster = args.model, args.cluster_name
        fs = aws.fsx.LustreFileSystem(
            f"{name}-{suffix}",
            deployment_type="PERSISTENT_2",
            storage_type="SSD",
            storage_capacity=capacity_gib,
            per_unit_storage_throughput=throughput_per_tib,
            subnet_ids=args.subnet_ids[zone],  # one subnet: v7 takes a string
            security_group_ids=[group.id],
            kms_key_id=key.arn,
            data_compression_type="LZ4",  # checkpoints compress well; cheap on Lustre servers
            metadata_configuration=aws.fsx.LustreFileSystemMetadataConfigurationArgs(mode="AUTOMATIC"),
            file_system_type_version="2.15",
            copy_tags_to_backups=True,
            **backup_and_efa(model),
            tags=tags(model, f"{cluster}-{suffix}"),
            opts=stateful(self),
        )
        if cold_bucket is not None:
            aws.fsx.DataRepositoryAssociation(
                f"{name}-{suffix}-export",
                file_system_id=fs.id,
                file_system_path="/",
                data_repository_path=cold_bucket.bucket.apply(lambda b: f"s3://{b}/{suffix}/"),
                batch_import_meta_data_on_create=False,
                s3=aws.fsx.DataRepositoryAssociationS3Args(
                    auto_export_policy=aws.fsx.DataRepositoryAssociationS3AutoExportPolicyArgs(events=EXPORT_EVENTS),
                ),
                tags=tags(model, f"{cluster}-{suffix}-export"),
                opts=child_opts(self),
            )
        return fs
