"""FSx for Lustre options the spec turns on: daily automatic backups and EFA.

Only what the spec asks for is emitted: an argument left unset leaves an existing file system
as it is. `efaEnabled` forces a new file system (set at creation, pulumi-aws: "must be set at
creation ... cannot be changed"), so it appears only with `storage.hot.efa: true`, which the
spec documents as a before-the-first-deploy choice, and `gpuplat preview` refuses the
replacement of an existing one. EFA needs PERSISTENT_2 with a metadata configuration (both
always set here) and a security group that admits all traffic within itself.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_aws as aws

from gpuplat.model import Platform

from .._common import child_opts
from ._common import tags


def backup_and_efa(model: Platform) -> dict[str, Any]:
    """Only what the spec turns on: an unset argument leaves an existing file system as it is
    (efaEnabled forces a new file system, so it never appears unless asked for)."""
    hot = model.storage.hot
    extra: dict[str, Any] = {}
    if hot is None:
        return extra
    if hot.backup_retention_days > 0:
        extra["automatic_backup_retention_days"] = hot.backup_retention_days
        extra["daily_automatic_backup_start_time"] = hot.backup_start_time
    if hot.efa:
        extra["efa_enabled"] = True
    return extra


def efa_rules(
    parent: pulumi.Resource,
    name: str,
    model: Platform,
    cluster: str,
    group: aws.ec2.SecurityGroup,
    clients: pulumi.Input[str] | None,
) -> None:
    """EFA traffic, every protocol: within the file servers' group, and (FSx: "and the security group
    of the clients if clients reside in a different security group") to and from the fabric nodes'
    EFA group, in both groups' rules."""
    pairs: list[tuple[str, pulumi.Input[str], pulumi.Input[str]]] = [("self", group.id, group.id)]
    if clients is not None:
        pairs += [("clients", group.id, clients), ("servers", clients, group.id)]
    kinds = (("in", aws.vpc.SecurityGroupIngressRule), ("out", aws.vpc.SecurityGroupEgressRule))
    for label, owner, peer in pairs:
        for direction, rule_type in kinds:
            rule_type(
                f"{name}-lustre-efa-{label}-{direction}",
                security_group_id=owner,
                referenced_security_group_id=peer,
                ip_protocol="-1",
                description=f"EFA between FSx for Lustre and its clients ({label})",
                tags=tags(model, f"{cluster}-lustre-efa-{label}-{direction}"),
                opts=child_opts(parent),
            )
