"""Who may reach the cluster's Kubernetes API, from stack config.

A private endpoint answers only inside the VPC, and the EKS cluster security group admits
only itself: the machine that runs `pulumi up` (which applies every Kubernetes object through
that endpoint) needs its own way in. The stack names it, because only the stack knows where it
runs: `gpu-platform:apiAccessCidrs` (CIDRs, e.g. a VPN or a CI runner subnet peered to the VPC)
and `gpu-platform:apiAccessSecurityGroupIds` (security groups of runners inside the VPC). Each
becomes an HTTPS ingress rule on the cluster security group. On a public endpoint the CIDRs
also become the endpoint's `publicAccessCidrs`, so it is not open to the whole internet.
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from gpuplat.model import Platform

from .._common import child_opts
from ._common import tags

HTTPS = 443
_SECURITY_GROUP = re.compile(r"^sg-[0-9a-f]{8}([0-9a-f]{9})?$")


class ApiAccessError(ValueError):
    """A stack setting that no security group rule could carry."""


@dataclass(frozen=True)
class ApiAccess:
    cidrs: tuple[str, ...] = ()
    security_group_ids: tuple[str, ...] = ()


def _values(raw: str | None) -> list[str]:
    """A JSON list or a comma-separated string, as `pulumi config set` stores either."""
    if raw is None or not raw.strip():
        return []
    if raw.lstrip().startswith("["):
        parsed = json.loads(raw)
        if not isinstance(parsed, list) or not all(isinstance(v, str) for v in parsed):
            raise ApiAccessError(f"expected a list of strings, got {raw}")
        return [v.strip() for v in parsed]
    return [v.strip() for v in raw.split(",") if v.strip()]


def api_access(cidrs: str | None, security_group_ids: str | None) -> ApiAccess:
    """Parse and check the two stack settings; a bad value stops the program with a sentence."""
    checked: list[str] = []
    for value in _values(cidrs):
        try:
            network = ipaddress.ip_network(value, strict=True)
        except ValueError as err:
            raise ApiAccessError(f"gpu-platform:apiAccessCidrs: {value} is not a CIDR block ({err})") from err
        if network.version != 4:
            raise ApiAccessError(f"gpu-platform:apiAccessCidrs: {value} is IPv6; the cluster's VPC is IPv4 only")
        checked.append(str(network))
    groups = _values(security_group_ids)
    for group in groups:
        if not _SECURITY_GROUP.match(group):
            raise ApiAccessError(f"gpu-platform:apiAccessSecurityGroupIds: {group} is not a security group id (sg-...)")
    return ApiAccess(tuple(dict.fromkeys(checked)), tuple(dict.fromkeys(groups)))


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
