"""TenantAccess: EKS access entries that put each tenant's IAM principals into its Kubernetes group.

A tenant's RoleBinding grants `edit` in its namespace to the group `gpuplat:<tenant>`; on EKS
(authentication mode API) only an access entry can put an IAM identity into a group. One
STANDARD entry per principal ARN (EKS allows one entry per principal and cluster), listing the
group of every tenant that names it. No access policy is associated: the namespace's
RoleBinding is all the access the entry grants, so a principal sees nothing outside its
tenants' namespaces.

A principal that already has an entry (the cluster creator's, which EKS adds for
`bootstrap_cluster_creator_admin_permissions`, or one made by hand) cannot get a second one:
EKS refuses the create. Such an identity has its access already.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.conventions import TENANT_GROUP
from gpuplat.model import Platform

from .._common import child_opts
from ._common import tags


def principal_groups(model: Platform) -> dict[str, list[str]]:
    """Principal ARN -> the Kubernetes groups of the tenants naming it, in spec order."""
    groups: dict[str, list[str]] = {}
    for tenant in model.tenants:
        for arn in tenant.principals:
            groups.setdefault(arn, []).append(TENANT_GROUP.format(tenant=tenant.name))
    return groups


def principal_key(arn: str) -> str:
    """A stable resource-name suffix for an ARN, one per principal (a Pulumi name cannot hold
    the ARN's `::`): account and resource, e.g. 123456789012-role/ml/research-admins."""
    account, resource = arn.split(":")[4:6]  # arn:<partition>:iam::<account>:<role|user>/<path/name>
    return f"{account}-{resource}"


@dataclass(frozen=True)
class TenantAccessArgs:
    model: Platform
    cluster: str  # the cluster's name, for tags
    cluster_name: pulumi.Input[str]  # the EKS cluster's output, so entries wait for it


class TenantAccess(pulumi.ComponentResource):
    entries: Mapping[str, aws.eks.AccessEntry]  # by principal ARN

    def __init__(self, name: str, args: TenantAccessArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:TenantAccess", name, None, opts)
        model = args.model
        self.entries = {
            arn: aws.eks.AccessEntry(
                f"{name}-{principal_key(arn)}",
                cluster_name=args.cluster_name,
                principal_arn=arn,
                type="STANDARD",
                kubernetes_groups=groups,
                tags=tags(model, f"{args.cluster}-access-{principal_key(arn)}"),
                opts=child_opts(self),
            )
            for arn, groups in principal_groups(model).items()
        }
        self.register_outputs({"principals": sorted(self.entries)})
