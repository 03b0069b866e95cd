"""What every AWS component shares: physical names, tags, and the options of stateful resources.

Logical (Pulumi) names come from the component's `name`; physical names (the EKS cluster,
placement groups, the directory bucket) also carry the stack, because dev, staging and prod
of one spec may live in one account and region, where these names must be unique.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpuplat.catalog import Chart
from gpuplat.model import Platform

DISCOVERY_TAG = "karpenter.sh/discovery"  # Karpenter's documented subnet/SG discovery tag
ZONE_TAG = "gpuplat:zone"  # on private subnets: lets a node class pick one zone's subnet by tag
EFA_TAG = "gpuplat:efa"  # on the EFA security group, value = cluster name

POLICY_VERSION = "2012-10-17"


def cluster_name(model: Platform) -> str:
    return f"{model.metadata.name}-{pulumi.get_stack()}"


def partition(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def region_of(model: Platform) -> str:
    # Validation requires a region on provider aws; this is only the last line of defence.
    if model.target.region is None:
        raise ValueError("target.region is required on provider aws")
    return model.target.region


def tags(model: Platform, name: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """metadata.tags on every taggable object, plus a readable Name."""
    result = dict(model.metadata.tags)
    result.update(extra or {})
    result["Name"] = name
    return result


def own(parent: pulumi.Resource, depends_on: Sequence[pulumi.Resource] | None = None) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(parent=parent, depends_on=depends_on)


def stateful(parent: pulumi.Resource, depends_on: Sequence[pulumi.Resource] | None = None) -> pulumi.ResourceOptions:
    """Data or identity that must outlive a bad diff: Pulumi refuses to delete it, and a
    `pulumi destroy` or removal from the program leaves it in the account."""
    return pulumi.ResourceOptions(parent=parent, protect=True, retain_on_delete=True, depends_on=depends_on)


def assume_role_policy(service: str, *, tag_session: bool = False) -> str:
    # EKS Pod Identity and EKS itself tag the session; their trust policies must allow it.
    actions = ["sts:AssumeRole", "sts:TagSession"] if tag_session else ["sts:AssumeRole"]
    return json.dumps(
        {
            "Version": POLICY_VERSION,
            "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": actions}],
        }
    )


def helm_release(
    name: str, chart: Chart, values: dict[str, Any], opts: pulumi.ResourceOptions, **extra: Any
) -> k8s.helm.v3.Release:
    """A pinned Helm release of a catalog chart (OCI charts take no repository options)."""
    repo = chart.release_repo
    return k8s.helm.v3.Release(
        name,
        name=chart.chart,
        chart=chart.release_chart,
        version=chart.version,
        namespace=chart.namespace,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=repo) if repo is not None else None,
        values=values,
        max_history=10,
        opts=opts,
        **extra,
    )
