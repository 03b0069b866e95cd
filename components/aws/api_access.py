"""Who may reach the cluster's Kubernetes API, from stack config.

The settings and what they mean are gpuplat/preflight/runner.py (`gpuplat check` judges the
same settings): `gpu-platform:apiAccessCidrs` and `gpu-platform:apiAccessSecurityGroupIds`.
Each becomes an HTTPS ingress rule on the cluster security group. On a public endpoint the
CIDRs also become the endpoint's `publicAccessCidrs`, so it is not open to the whole internet.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from gpuplat.model import Platform
from gpuplat.preflight.runner import ApiAccess, ApiAccessError, api_access

from .._common import child_opts
from ._common import tags

__all__ = ["ApiAccess", "ApiAccessError", "api_access", "api_ingress"]

HTTPS = 443


def api_ingress(
    parent: pulumi.Resource,
    name: str,
    model: Platform,
    cluster: str,
    cluster_security_group_id: pulumi.Input[str],
    access: ApiAccess,
) -> list[aws.vpc.SecurityGroupIngressRule]:
    """One HTTPS rule per CIDR and per security group, named after what it admits (stable names)."""
    sources = [(cidr.replace("/", "-"), "apiAccessCidrs", {"cidr_ipv4": cidr}) for cidr in access.cidrs]
    groups = access.security_group_ids
    sources += [(g, "apiAccessSecurityGroupIds", {"referenced_security_group_id": g}) for g in groups]
    return [
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-api-{suffix}",
            security_group_id=cluster_security_group_id,
            description=f"Kubernetes API from the deploying runner (gpu-platform:{setting})",
            ip_protocol="tcp",
            from_port=HTTPS,
            to_port=HTTPS,
            tags=tags(model, f"{cluster}-api-access"),
            opts=child_opts(parent),
            **source,
        )
        for suffix, setting, source in sources
    ]
