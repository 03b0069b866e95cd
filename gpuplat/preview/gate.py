"""Changes the provider would accept in a preview and AWS or Karpenter would make painful or refuse.

Blocked (the preview fails, `--allow-replace` or not: it accepts losing data, it cannot make
AWS do what it refuses, and the `up` would fail halfway, after everything before the cluster
was applied):

- an EKS cluster whose Kubernetes version goes down, or up by more than one minor. AWS's
  UpdateClusterVersion only upgrades, one minor at a time ("Once you upgrade a cluster, you
  can't downgrade to a previous version"; "you can update only one minor version at a time",
  docs.aws.amazon.com/eks/latest/userguide/update-cluster.html). The provider shows both as an
  in-place update of `version`.
- an EKS cluster whose subnets or security groups move to another VPC, because the stack's
  VPC is replaced (a new `network.vpcCidr`) or deleted. UpdateClusterConfig takes only
  subnets of the cluster's own VPC ("these subnets must be in the same VPC as the original
  subnets", docs.aws.amazon.com/eks/latest/userguide/network-reqs.html), and the provider
  shows `vpcConfig.subnetIds` as an in-place update.

Warned (allowed, said in the text and the pull-request comment): a deleted or replaced Karpenter
NodePool. Its NodeClaims are owned by it and go with it, and Karpenter's termination finalizer
cordons and drains each node before terminating it: the GPU jobs running there are evicted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

from .changes import Change, FieldChange
from .data_loss import losses, released
from .records import RecordedResource

EKS = "aws:eks/cluster:Cluster"
VPC = "aws:ec2/vpc:Vpc"


def is_node_pool(type_: str) -> bool:
    return type_.startswith("kubernetes:karpenter.sh/") and type_.endswith(":NodePool")


def _minor(value: Any) -> tuple[int, int] | None:
    parts = str(value).split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        return None
    return int(parts[0]), int(parts[1])


def _field(change: Change, path: str) -> FieldChange | None:
    return next((f for f in change.fields if f.path == path), None)


def version_blocker(change: Change) -> str | None:
    """Why EKS cannot apply this cluster's version change, or None."""
    field = _field(change, "version")
    if field is None:
        return None
    before, after = _minor(field.old), _minor(field.new)
    if before is None or after is None:
        return None
    if after < before:
        return (
            f"Kubernetes version {field.old} -> {field.new} is a downgrade, and EKS cannot downgrade a cluster: "
            f"once upgraded it stays on {field.old} or newer (keep target.kubernetesVersion at {field.old})"
        )
    if after[0] == before[0] and after[1] > before[1] + 1:
        step = f"{before[0]}.{before[1] + 1}"
        return (
            f"Kubernetes version {field.old} -> {field.new} skips minors, and EKS upgrades one minor at a time: "
            f"go to {step} first, then on"
        )
    return None


def _vpc_move(vpc: Change) -> str:
    cidr = _field(vpc, "cidrBlock")
    if vpc.op == "replace" and cidr is not None:
        return f"VPC {vpc.name} is replaced (cidrBlock {cidr.old} -> {cidr.new})"
    return f"VPC {vpc.name} is {'replaced' if vpc.op == 'replace' else 'deleted'}"


def vpc_blocker(change: Change, vpcs: Sequence[Change]) -> str | None:
    """Why EKS cannot move this cluster's control plane onto the changed network, or None."""
    moved = [f.path for f in change.fields if f.path.startswith("vpcConfig.") and f.path.endswith("Ids")]
    if not moved or not vpcs:
        return None
    reasons = "; ".join(_vpc_move(v) for v in vpcs)
    return (
        f"{', '.join(moved)} would move the cluster to another VPC ({reasons}), and EKS keeps a cluster in the "
        "VPC it was created in: keep network.vpcCidr, or build a new cluster and move the workloads deliberately"
    )


def _node_pool_name(resource: RecordedResource | None, fallback: str) -> str:
    metadata = resource.inputs.get("metadata") if resource is not None else None
    name = cast("Mapping[str, Any]", metadata).get("name") if isinstance(metadata, Mapping) else None
    return name if isinstance(name, str) and name else fallback


def annotate(
    changes: list[Change], base: Mapping[str, RecordedResource], head: Mapping[str, RecordedResource]
) -> list[Change]:
    """`changes` with `blocked` set on what AWS refuses, `drains` on deleted or replaced NodePools,
    `destroys` on updates that delete data and `releases` on reservations given back (data_loss.py)."""
    vpcs = [c for c in changes if c.type == VPC and c.op in ("replace", "delete")]
    out: list[Change] = []
    for c in changes:
        if c.type == EKS and c.op == "update":  # a replaced cluster is a new one: created where it is asked
            blocked = [b for b in (version_blocker(c), vpc_blocker(c, vpcs)) if b]
            c = replace(c, blocked=tuple(blocked))
        if is_node_pool(c.type) and c.op in ("delete", "replace"):
            resource = base.get(c.previous_urn or c.urn) or head.get(c.urn)
            c = replace(c, drains=_node_pool_name(resource, c.name))
        old, new = base.get(c.previous_urn or c.urn), head.get(c.urn)
        old_inputs, new_inputs = (old.inputs if old else None), (new.inputs if new else None)
        c = replace(
            c, destroys=losses(c.type, c.op, old_inputs, new_inputs), releases=released(c.type, c.op, old_inputs)
        )
        out.append(c)
    return out
