"""The AWS identity the Kubernetes side's Mountpoint S3 CSI driver mounts the warm and cold tiers with.

The driver runs with the node service account named in conventions; EKS Pod Identity gives
it a role that can read and write exactly the platform's buckets (the Mountpoint policy of
the AWS docs: ListBucket on the bucket, object read/write/delete below it, CreateSession
on S3 Express directory buckets) and use the storage key. FSx for Lustre needs no such
role: its volumes are static PVs that name the file system, and mounting is plain Lustre.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_aws as aws

from components.conventions import S3_CSI_NAMESPACE, S3_CSI_SERVICE_ACCOUNT
from gpuplat.model import Platform

from .._common import child_opts
from ._common import POLICY_VERSION, assume_role_policy, tags


def csi_policy(bucket_arns: Sequence[str], directory_bucket_arns: Sequence[str], key_arn: str) -> dict[str, Any]:
    statements: list[dict[str, Any]] = []
    if bucket_arns:
        statements += [
            {
                "Sid": "MountpointBucketAccess",
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": list(bucket_arns),
            },
            {
                "Sid": "MountpointObjectAccess",
                "Effect": "Allow",
                "Action": ["s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload", "s3:DeleteObject"],
                "Resource": [f"{arn}/*" for arn in bucket_arns],
            },
        ]
    if directory_bucket_arns:
        statements.append(
            {
                "Sid": "MountpointExpressSessions",
                "Effect": "Allow",
                "Action": "s3express:CreateSession",
                "Resource": list(directory_bucket_arns),
            }
        )
    statements.append(
        {
            "Sid": "StorageKey",
            "Effect": "Allow",
            "Action": ["kms:Decrypt", "kms:GenerateDataKey"],
            "Resource": key_arn,
        }
    )
    return {"Version": POLICY_VERSION, "Statement": statements}


def s3_csi_access(
    parent: pulumi.Resource,
    name: str,
    model: Platform,
    cluster: str,
    buckets: Sequence[pulumi.Output[str]],
    directory_buckets: Sequence[pulumi.Output[str]],
    key_arn: pulumi.Output[str],
    pod_identity_agent: pulumi.Resource,
) -> pulumi.Output[str]:
    """Role + policy + Pod Identity association; returns the role ARN."""
    role = aws.iam.Role(
        f"{name}-s3-csi",
        assume_role_policy=assume_role_policy("pods.eks.amazonaws.com", tag_session=True),
        description=f"Mountpoint S3 CSI driver of {cluster} (EKS Pod Identity)",
        tags=tags(model, f"{cluster}-s3-csi"),
        opts=child_opts(parent),
    )
    n = len(buckets)
    aws.iam.RolePolicy(
        f"{name}-s3-csi",
        role=role.name,
        policy=pulumi.Output.all(*buckets, *directory_buckets, key_arn).apply(
            lambda arns: json.dumps(csi_policy(arns[:n], arns[n:-1], arns[-1]))
        ),
        opts=child_opts(parent),
    )
    aws.eks.PodIdentityAssociation(
        f"{name}-s3-csi",
        cluster_name=cluster,
        namespace=S3_CSI_NAMESPACE,
        service_account=S3_CSI_SERVICE_ACCOUNT,
        role_arn=role.arn,
        tags=tags(model, f"{cluster}-s3-csi"),
        opts=child_opts(parent, depends_on=[pod_identity_agent]),
    )
    return role.arn
