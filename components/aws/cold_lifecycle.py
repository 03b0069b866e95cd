"""The cold bucket's lifecycle: tenants' data ages through the spec's storage classes, the hot
tier's exports do not.

The hot file systems export everything to `hot/` and `hot-standard/` in the cold bucket (a data
repository association): that copy is what a checkpoint survives on, and FSx cannot read an
object back from GLACIER or DEEP_ARCHIVE (it would need a restore first, hours later). S3
lifecycle filters only include (a prefix, tags, sizes), never exclude, so the tiering is one
rule per tenant prefix (`<tenant>/`, where Mountpoint writes the tenant's cold data) instead of
one rule over the whole bucket. Objects outside tenant prefixes and the exports stay in S3
Standard; noncurrent versions and unfinished uploads expire bucket-wide (no storage class
change, so the exports lose nothing they would need).

S3 takes at most 1000 rules in a configuration: one for versions, the rest for tenants.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from gpuplat.model import Platform

from .._common import child_opts

NONCURRENT_DAYS = 30  # how long an overwritten or deleted cold object stays recoverable
ABORT_MULTIPART_DAYS = 7
MAX_RULES = 1000  # S3's limit per lifecycle configuration


def _tiering(model: Platform, tenant: str) -> aws.s3.BucketLifecycleConfigurationRuleArgs:
    cold = model.storage.cold
    assert cold is not None
    return aws.s3.BucketLifecycleConfigurationRuleArgs(
        id=f"tiering-{tenant}",
        status="Enabled",
        filter=aws.s3.BucketLifecycleConfigurationRuleFilterArgs(prefix=f"{tenant}/"),
        transitions=[
            aws.s3.BucketLifecycleConfigurationRuleTransitionArgs(days=t.after_days, storage_class=t.storage_class)
            for t in cold.transitions
        ],
        expiration=aws.s3.BucketLifecycleConfigurationRuleExpirationArgs(days=cold.expire_after_days)
        if cold.expire_after_days is not None
        else None,
    )


def lifecycle_rules(model: Platform) -> list[aws.s3.BucketLifecycleConfigurationRuleArgs]:
    cold = model.storage.cold
    assert cold is not None
    rules = [
        aws.s3.BucketLifecycleConfigurationRuleArgs(
            id="versions",
            status="Enabled",
            filter=aws.s3.BucketLifecycleConfigurationRuleFilterArgs(prefix=""),
            noncurrent_version_expiration=aws.s3.BucketLifecycleConfigurationRuleNoncurrentVersionExpirationArgs(
                noncurrent_days=NONCURRENT_DAYS
            ),
            abort_incomplete_multipart_upload=aws.s3.BucketLifecycleConfigurationRuleAbortIncompleteMultipartUploadArgs(
                days_after_initiation=ABORT_MULTIPART_DAYS
            ),
        )
    ]
    if cold.transitions or cold.expire_after_days is not None:
        rules.extend(_tiering(model, name) for name in sorted(t.name for t in model.tenants))  # order means nothing
    if len(rules) > MAX_RULES:
        raise ValueError(
            f"the cold bucket would need {len(rules)} lifecycle rules (one per tenant), more than S3's {MAX_RULES}"
        )
    return rules


def cold_lifecycle(parent: pulumi.Resource, name: str, model: Platform, bucket: pulumi.Input[str]) -> None:
    aws.s3.BucketLifecycleConfiguration(
        f"{name}-cold-lifecycle", bucket=bucket, rules=lifecycle_rules(model), opts=child_opts(parent)
    )
