"""Policies on what holds data: S3 buckets, FSx for Lustre, KMS keys, the stateful resources."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpuplat.preview.stateful import STATEFUL_TYPES, TENANT_TYPES, is_stateful, must_retain

from ._base import (
    COMPUTED,
    Context,
    Resource,
    as_list,
    expect,
    get_path,
    is_true,
    number,
    resource_rule,
    stack_rule,
    statements,
    type_tokens,
)

BUCKETS = type_tokens("aws:s3/", "bucket:Bucket bucketV2:BucketV2")
DIRECTORY_BUCKET = "aws:s3/directoryBucket:DirectoryBucket"
PUBLIC_ACCESS_BLOCK = type_tokens("aws:s3/", "bucketPublicAccessBlock:BucketPublicAccessBlock")
SSE_CONFIGS = type_tokens(
    "aws:s3/",
    "bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration "
    "bucketServerSideEncryptionConfigurationV2:BucketServerSideEncryptionConfigurationV2",
)
BUCKET_POLICY = type_tokens("aws:s3/", "bucketPolicy:BucketPolicy")
BUCKET_ACLS = type_tokens("aws:s3/", "bucketAcl:BucketAcl bucketAclV2:BucketAclV2")
PAB_FLAGS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")


def _attached(bucket: Resource, resources: Sequence[Resource], types: Sequence[str]) -> list[Resource]:
    """Resources of `types` configuring `bucket`: they depend on it, or name it literally."""
    name = bucket.props.get("bucket")
    named = name is not None and name != COMPUTED
    return [
        r
        for r in resources
        if r.type in types and (bucket.urn in r.depends_on or (named and r.props.get("bucket") == name))
    ]


@stack_rule("s3-public-access-block", "S3 buckets have a public access block with all four settings on")
def _s3_public_access_block(resources: Sequence[Resource], ctx: Context) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for bucket in (r for r in resources if r.type in BUCKETS):
        blocks = _attached(bucket, resources, PUBLIC_ACCESS_BLOCK)
        if not blocks:
            out.append((bucket.urn, "no BucketPublicAccessBlock references this bucket"))
        for block in blocks:
            off = [f for f in PAB_FLAGS if block.props.get(f) != COMPUTED and not is_true(block.props.get(f))]
            if off:
                out.append((bucket.urn, f"{block.urn.rpartition('::')[2]} leaves off {', '.join(off)}"))
    return out


def _kms_rule(rule: Any) -> bool:
    """SSE-KMS with a key, or not known yet (the benefit of the doubt, as everywhere here)."""
    default = get_path(rule, "applyServerSideEncryptionByDefault")
    algorithm, key = get_path(default, "sseAlgorithm"), get_path(default, "kmsMasterKeyId")
    return COMPUTED in (algorithm, key) or (algorithm in ("aws:kms", "aws:kms:dsse") and bool(key))


@stack_rule("s3-kms-encryption", "S3 buckets and directory buckets encrypt with a KMS key (SSE-KMS)")
def _s3_kms_encryption(resources: Sequence[Resource], ctx: Context) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for bucket in (r for r in resources if r.type in BUCKETS or r.type == DIRECTORY_BUCKET):
        configs = [bucket.props.get("serverSideEncryptionConfiguration")]  # inline, deprecated
        configs += [c.props for c in _attached(bucket, resources, SSE_CONFIGS)]
        rule_sets = [as_list(get_path(c, "rules")) + as_list(get_path(c, "rule")) for c in configs if c]
        if not rule_sets:
            out.append((bucket.urn, "no server-side encryption configuration references this bucket"))
        elif not any(rules and all(_kms_rule(rule) for rule in rules) for rules in rule_sets):
            out.append((bucket.urn, "server-side encryption is not aws:kms with a kmsMasterKeyId"))
    return out


@stack_rule("s3-tls-only", "S3 buckets have a bucket policy denying requests without TLS")
def _s3_tls_only(resources: Sequence[Resource], ctx: Context) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for bucket in (r for r in resources if r.type in BUCKETS):
        # The bucket's own (deprecated) inline policy or separate BucketPolicy resources.
        documents = [p.props.get("policy") for p in (bucket, *_attached(bucket, resources, BUCKET_POLICY))]
        if COMPUTED in documents:
            continue  # judged once the document is known
        secure = [
            str(get_path(s, "Condition", "Bool", "aws:SecureTransport"))
            for d in documents
            for s in statements(d)
            if s.get("Effect") == "Deny"
        ]
        if "false" not in map(str.lower, secure):
            out.append((bucket.urn, "no bucket policy denies requests with aws:SecureTransport false"))
    return out


@resource_rule("s3-no-public-acl", "mandatory", "S3 ACLs grant nothing to all users", *BUCKETS, *BUCKET_ACLS)
def _s3_no_public_acl(r: Resource, ctx: Context) -> list[str]:
    acl = r.props.get("acl")
    out = [f"canned ACL {acl} makes the bucket public"] if acl in ("public-read", "public-read-write") else []
    out += [f"canned ACL {acl} opens the bucket to every AWS account"] if acl == "authenticated-read" else []
    for grant in as_list(r.props.get("grants")) + as_list(get_path(r.props, "accessControlPolicy", "grants")):
        uri = get_path(grant, "uri") or get_path(grant, "grantee", "uri")
        if isinstance(uri, str) and uri.endswith(("/global/AllUsers", "/global/AuthenticatedUsers")):
            out.append(f"ACL grant to {uri}")
    return out


LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"

resource_rule("fsx-lustre-kms", "mandatory", "FSx for Lustre encrypts with a customer KMS key", LUSTRE)(
    lambda r, _: [] if r.props.get("kmsKeyId") else ["kmsKeyId is not set (the AWS-managed key would be used)"]
)


@resource_rule("fsx-lustre-persistent-2", "mandatory", "FSx for Lustre is PERSISTENT_2, in sizes AWS accepts", LUSTRE)
def _lustre_shape(r: Resource, ctx: Context) -> list[str]:
    out: list[str] = []
    deployment = r.props.get("deploymentType")
    throughput, capacity = r.props.get("perUnitStorageThroughput"), r.props.get("storageCapacity")
    if deployment not in (COMPUTED, "PERSISTENT_2"):
        out.append(f"deploymentType is {deployment or 'unset'}, not PERSISTENT_2")
    if throughput != COMPUTED and number(throughput) not in (125, 250, 500, 1000):
        out.append(f"perUnitStorageThroughput {throughput} is not 125, 250, 500 or 1000 MB/s/TiB")
    size = number(capacity) or 0
    if capacity != COMPUTED and not (size in (1200, 2400) or (size > 0 and size % 2400 == 0)):
        out.append(f"storageCapacity {capacity} GiB is not 1200, 2400 or a multiple of 2400")
    return out


KMS_KEY = "aws:kms/key:Key"
STATEFUL = tuple(sorted(STATEFUL_TYPES | TENANT_TYPES))


@resource_rule(
    "stateful-protect",
    "mandatory",
    "Stateful resources (EKS, FSx, buckets, KMS keys, tenant namespaces and claims) are protect=True",
    *STATEFUL,
)
def _protected(r: Resource, ctx: Context) -> list[str]:
    if r.options is None or not is_stateful(r.type, r.props) or r.options.get("protect"):
        return []
    return ["resource option protect is not set"]


@resource_rule(
    "stateful-retain-on-delete",
    "mandatory",
    "Stateful resources holding data (all but tenant claims) are retainOnDelete",
    *STATEFUL,
    crossguard=False,
)
def _retained(r: Resource, ctx: Context) -> list[str]:
    if r.options is None or not must_retain(r.type, r.props) or r.options.get("retainOnDelete"):
        return []
    return ["option retainOnDelete is not set"]


@resource_rule("kms-key-rotation", "mandatory", "Symmetric KMS keys rotate automatically", KMS_KEY)
def _kms_rotation(r: Resource, ctx: Context) -> list[str]:
    spec = r.props.get("customerMasterKeySpec") or r.props.get("keySpec") or "SYMMETRIC_DEFAULT"
    # AWS rotates only symmetric encryption keys; asymmetric and HMAC keys cannot be set to.
    return expect(r, "enableKeyRotation", [True]) if spec == "SYMMETRIC_DEFAULT" else []
