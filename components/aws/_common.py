"""What every AWS component shares: physical names, tags, trust policies (child options: ../_common.py).

Logical (Pulumi) names come from the component's `name`; physical names (the EKS cluster,
placement groups, the directory bucket) also carry the stack, because dev, staging and prod
of one spec may live in one account and region, where these names must be unique.

A Pulumi stack name may hold characters and lengths AWS names do not (`Prod_x`, dots, up to
100 characters), so every physical name goes through `physical_name`: a name AWS accepts
as it is stays as it is (no rename, so no replacement of a live cluster), anything else is
cleaned and cut, with a hash of the original so two stacks never clean to the same name.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping

import pulumi

from gpuplat.catalog.regions import partition_of
from gpuplat.model import Platform

DISCOVERY_TAG = "karpenter.sh/discovery"  # Karpenter's documented subnet/SG discovery tag
ZONE_TAG = "gpuplat:zone"  # on private subnets: lets a node class pick one zone's subnet by tag
EFA_TAG = "gpuplat:efa"  # on the EFA security group, value = cluster name

POLICY_VERSION = "2012-10-17"

# AWS name limits (service quotas / API references of CreateCluster, CreateBucket,
# CreatePlacementGroup). Auto-named resources (roles, queues, security groups) are named by
# Pulumi from the logical name, which holds no stack; tests check those against theirs.
EKS_CLUSTER_NAME_MAX = 100  # [A-Za-z0-9][A-Za-z0-9_-]*
BUCKET_NAME_MAX = 63  # [a-z0-9-], also for directory buckets including "--<az id>--x-s3"
PLACEMENT_GROUP_NAME_MAX = 255
DIRECTORY_BUCKET_SUFFIX = "--x-s3"
_HASH_CHARS = 6


def physical_name(raw: str, limit: int, *, lowercase: bool = True) -> str:
    """`raw` as a name AWS accepts: [a-z0-9-] (with `lowercase=False`: [A-Za-z0-9_-], the EKS
    and placement-group alphabet), at most `limit` characters, starting with a letter or
    digit (lowercase names also end with one). Valid names come back unchanged; others are
    cleaned, cut, and end in a short hash of `raw`, deterministic across runs."""
    if lowercase:
        # "--" separates the parts of a directory bucket name (base--zone-id--x-s3).
        clean = re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9-]", "-", raw.lower())).strip("-")
    else:
        clean = re.sub(r"[^A-Za-z0-9_-]", "-", raw).lstrip("-_")
    if clean == raw and len(raw) <= limit:
        return raw
    digest = hashlib.sha256(raw.encode()).hexdigest()[:_HASH_CHARS]
    head = clean[: limit - _HASH_CHARS - 1].rstrip("-_")
    return f"{head}-{digest}" if head else digest


def cluster_name(model: Platform) -> str:
    """The EKS cluster's name; also the prefix of the other physical names and the value of
    the discovery tags, so one stack's objects are told apart from another's."""
    return physical_name(f"{model.metadata.name}-{pulumi.get_stack()}", EKS_CLUSTER_NAME_MAX, lowercase=False)


def directory_bucket_name(cluster: str, suffix: str, zone_id: str, account: str | None) -> str:
    """`<base>--<zone id>--x-s3`, the form S3 Express requires, within the 63 characters.

    A directory bucket's name is unique per zone across *all* AWS accounts, and the base would
    otherwise be only `<platform>-<stack>-<suffix>`, which any other account may already hold (the
    create then fails) or take first. So the base carries the deploying account's id:
    `<platform>-<stack>-<suffix>-<account id>`. `account=None` gives the name stacks created
    before that had, which they keep by setting `gpu-platform:warmBucketLegacyName` (a new name
    is a new, empty bucket: a replacement the stateful gate refuses)."""
    tail = f"--{zone_id}{DIRECTORY_BUCKET_SUFFIX}"
    base = f"{cluster}-{suffix}" if account is None else f"{cluster}-{suffix}-{account}"
    return physical_name(base, BUCKET_NAME_MAX - len(tail)) + tail


def partition(region: str) -> str:
    return partition_of(region)


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


def assume_role_policy(service: str, *, tag_session: bool = False) -> str:
    # EKS Pod Identity and EKS itself tag the session; their trust policies must allow it.
    actions = ["sts:AssumeRole", "sts:TagSession"] if tag_session else ["sts:AssumeRole"]
    return json.dumps(
        {
            "Version": POLICY_VERSION,
            "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": actions}],
        }
    )
