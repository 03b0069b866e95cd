"""Fabric: what EFA-connected training nodes need besides their node class.

Per fabric pool a cluster placement group in the fabric zone (one spine domain, lowest
latency; a placement group has no zone argument, the subnets and NodePool zone requirement
put its instances there), the EFA security group (EFA's OS-bypass traffic must be allowed
to and from the group itself, on every protocol), and the AWS EFA device plugin that
advertises `vpc.amazonaws.com/efa` to pods.

The device plugin runs on fabric nodes only (the fabric label; non-fabric pools launch
without EFA interfaces, and the chart's own affinity already requires an EFA-capable
type), and tolerates every taint a fabric node can carry, or it would never run there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from components.conventions import FABRIC_LABEL, TAG_POOL, pool_taints
from gpuplat.model import Platform
from gpuplat.plan import Plan

from .._common import child_opts
from ..kubernetes._common import helm_release
from ._common import EFA_TAG, PLACEMENT_GROUP_NAME_MAX, physical_name, region_of, tags

# Amazon EKS add-on images live in account 602401143452 except in these opt-in/isolated
# regions (EKS user guide, "View Amazon container image registries for Amazon EKS add-ons").
_EKS_ECR_ACCOUNT = {
    "af-south-1": "877085696533",
    "ap-east-1": "800184023465",
    "eu-south-1": "590381155156",
    "me-south-1": "558608220178",
    "cn-north-1": "918309763551",
    "cn-northwest-1": "961992271922",
    "us-gov-east-1": "151742754352",
    "us-gov-west-1": "013241004608",
}


def efa_plugin_image(region: str) -> str:
    account = _EKS_ECR_ACCOUNT.get(region, "602401143452")
    suffix = ".com.cn" if region.startswith("cn-") else ".com"
    return f"{account}.dkr.ecr.{region}.amazonaws{suffix}/eks/aws-efa-k8s-device-plugin"


def fabric_zone(plan: Plan) -> str:
    """Where fabric capacity, FSx and the warm tier live: the plan's choice (gpuplat/plan/zones.py)."""
    if plan.fabric_zone is None:  # the planner sets it on every aws spec with zones
        raise ValueError("the plan has no fabric zone; provider aws needs target.zones")
    return plan.fabric_zone


def efa_plugin_values(model: Platform) -> dict[str, Any]:
    """The EFA device plugin on fabric nodes only, tolerating every taint a fabric node can carry."""
    tolerations: dict[tuple[str, str], dict[str, str]] = {}
    for pool in model.fabric_pools:
        for market in pool.markets:
            for taint in pool_taints(pool, market):
                key = (taint["key"], taint["effect"])
                tolerations[key] = {"key": key[0], "operator": "Exists", "effect": key[1]}
    return {
        "image": {"repository": efa_plugin_image(region_of(model))},
        "nodeSelector": {FABRIC_LABEL: "true"},
        "tolerations": [tolerations[key] for key in sorted(tolerations)],
    }


@dataclass(frozen=True)
class FabricArgs:
    model: Platform
    fabric_zone: str  # Plan.fabric_zone (fabric_zone(plan))
    cluster_name: str
    vpc_id: pulumi.Input[str]
    depends_on: Sequence[pulumi.Resource]  # the plugin's DaemonSet needs a working cluster


class Fabric(pulumi.ComponentResource):
    zone: str
    placement_group_names: dict[str, pulumi.Output[str]]  # by fabric pool
    placement_group_arns: dict[str, pulumi.Output[str]]
    efa_security_group_id: pulumi.Output[str]

    def __init__(self, name: str, args: FabricArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:Fabric", name, None, opts)
        model, cluster = args.model, args.cluster_name
        self.zone = zone = args.fabric_zone
        self.placement_group_names, self.placement_group_arns = {}, {}
        for pool in model.fabric_pools:
            group = aws.ec2.PlacementGroup(
                f"{name}-pg-{pool.name}-{zone}",
                # A fixed name: the node class selects it by name, known before it exists.
                name=physical_name(f"{cluster}-{pool.name}-{zone}", PLACEMENT_GROUP_NAME_MAX, lowercase=False),
                strategy="cluster",
                tags=tags(model, f"{cluster}-{pool.name}-{zone}", {TAG_POOL: pool.name}),
                opts=child_opts(self),
            )
            self.placement_group_names[pool.name] = group.name
            self.placement_group_arns[pool.name] = group.arn
        self.efa_security_group_id = self._efa_group(name, args).id
        helm_release(
            self,
            name,
            "aws-efa-k8s-device-plugin",
            efa_plugin_values(model),
            depends_on=args.depends_on,
            suffix="efa-device-plugin",
        )
        self.register_outputs(
            {
                "zone": self.zone,
                "placementGroupNames": self.placement_group_names,
                "placementGroupArns": self.placement_group_arns,
                "efaSecurityGroupId": self.efa_security_group_id,
            }
        )

    def _efa_group(self, name: str, args: FabricArgs) -> aws.ec2.SecurityGroup:
        """EFA's OS-bypass traffic: every protocol to and from the group itself."""
        model, cluster = args.model, args.cluster_name
        efa = aws.ec2.SecurityGroup(
            f"{name}-efa",
            vpc_id=args.vpc_id,
            description="EFA: all traffic within the group",
            tags=tags(model, f"{cluster}-efa", {EFA_TAG: cluster}),
            opts=child_opts(self),
        )
        for direction, rule in (("in", aws.vpc.SecurityGroupIngressRule), ("out", aws.vpc.SecurityGroupEgressRule)):
            rule(
                f"{name}-efa-{direction}",
                security_group_id=efa.id,
                referenced_security_group_id=efa.id,
                ip_protocol="-1",
                description="EFA peers",
                tags=tags(model, f"{cluster}-efa-{direction}"),
                opts=child_opts(self),
            )
        return efa
