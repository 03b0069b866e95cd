"""CpuNodePool: where tenants' CPU-only pods go (data preparation, notebooks, tooling) on aws.

Every GPU NodePool is tainted, so without this Karpenter provisions nothing for a pod that asks
for no GPU: it could only squeeze onto the system node group, next to Karpenter, Kueue and
Prometheus. This pool gives such pods nodes of their own.

- One EC2NodeClass and one NodePool, both `gpuplat.cpu`: the dot keeps the names apart from any
  GPU pool's (pool names are DNS labels; GPU NodePools are `<pool>-<market>`, node classes
  `<pool>` and `<pool>-blocks`).
- Instances: current general, compute and memory families (c, m, r; generation 6 or later),
  x86, on-demand, any zone of the target. Karpenter picks the cheapest type that fits the
  pending pods; the AMI alias is the GPU pools' (Karpenter resolves the standard AL2023
  variant for non-GPU types), so both roll together.
- Not tainted: a pod needs nothing to land here. Nodes carry `gpuplat.dev/cpu=true`;
  `nodeSelector: {gpuplat.dev/cpu: "true"}` keeps a pod off the system nodes for certain
  (without it the scheduler may still place it on a system node with room).
- Limits: `cpu_limit` vCPUs (a tenth of the GPU fleet's vCPUs at max size, at least 32), so
  CPU work cannot outgrow the fleet it feeds (the spec has no field for it yet), and no GPU.
- Disruption as on GPU pools: only empty nodes, after the autoscaling cooldown (a data
  preparation job loses its work when moved).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.conventions import OWNER, PART_OF_LABEL
from gpuplat.catalog import GPU_RESOURCE, instance_type
from gpuplat.catalog.labels import CPU_NODE_LABEL
from gpuplat.model import Platform

from .._common import child_opts
from ._common import DISCOVERY_TAG
from .gpu_node_pool import (
    CLUSTER_SG_TAG,
    NODE_CLASS_API,
    NODE_POOL_API,
    base_node_class_spec,
    instance_tags,
)

CPU_NODE_POOL = "gpuplat.cpu"
CPU_SHARE_OF_GPU_VCPUS = 0.10
MIN_CPU_LIMIT = 32
INSTANCE_CATEGORIES = ["c", "m", "r"]
MIN_GENERATION = "5"  # Gt: 6 and later (Nitro, current prices)


def cpu_limit(model: Platform) -> int:
    """vCPUs the CPU NodePool may hold: a tenth of the GPU fleet's at max size, at least 32."""
    fleet = 0
    for pool in model.pools:
        itype = instance_type(pool.instance_type or "")
        if itype is not None:
            fleet += itype.vcpus * pool.nodes.max
    return max(MIN_CPU_LIMIT, math.ceil(fleet * CPU_SHARE_OF_GPU_VCPUS))


def cpu_node_class_spec(
    model: Platform, cluster: str, role: pulumi.Input[str], default_tags: Mapping[str, str]
) -> dict[str, Any]:
    security_groups: list[dict[str, Any]] = [{"tags": {CLUSTER_SG_TAG: cluster}}]
    tags = instance_tags(default_tags, model, CPU_NODE_POOL)
    return base_node_class_spec(model, role, {DISCOVERY_TAG: cluster}, security_groups, tags)


def cpu_node_pool_spec(model: Platform) -> dict[str, Any]:
    requirements = [
        {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": INSTANCE_CATEGORIES},
        {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": [MIN_GENERATION]},
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": list(model.target.zones)},
    ]
    return {
        "template": {
            "metadata": {"labels": {CPU_NODE_LABEL: "true"}},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": CPU_NODE_POOL},
                "requirements": requirements,
            },
        },
        "disruption": {
            "consolidationPolicy": "WhenEmpty",
            "consolidateAfter": model.autoscaling.cooldown,
            "budgets": [{"nodes": "10%"}],
        },
        # No GPU ever: the families have none, and the limit says so to Karpenter and to policy.
        "limits": {"cpu": str(cpu_limit(model)), GPU_RESOURCE: "0"},
        # Below every GPU NodePool's: a pod both could take never prefers a CPU node's pool.
        "weight": 1,
    }


@dataclass(frozen=True)
class CpuNodePoolArgs:
    model: Platform
    cluster_name: str
    node_role_name: pulumi.Input[str]
    depends_on: Sequence[pulumi.Resource]  # Karpenter's CRD and controller releases
    default_tags: Mapping[str, str] = field(default_factory=dict[str, str])


class CpuNodePool(pulumi.ComponentResource):
    node_pool_name: str

    def __init__(self, name: str, args: CpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:CpuNodePool", name, None, opts)
        labels = {PART_OF_LABEL: OWNER}
        node_class = k8s.apiextensions.CustomResource(
            f"{name}-nodeclass",
            api_version=NODE_CLASS_API,
            kind="EC2NodeClass",
            metadata={"name": CPU_NODE_POOL, "labels": labels},
            spec=cpu_node_class_spec(args.model, args.cluster_name, args.node_role_name, args.default_tags),
            opts=child_opts(self, depends_on=args.depends_on),
        )
        k8s.apiextensions.CustomResource(
            f"{name}-nodepool",
            api_version=NODE_POOL_API,
            kind="NodePool",
            metadata={"name": CPU_NODE_POOL, "labels": labels},
            spec=cpu_node_pool_spec(args.model),
            opts=child_opts(self, depends_on=[*args.depends_on, node_class]),
        )
        self.node_pool_name = CPU_NODE_POOL
        self.register_outputs({"nodePoolName": self.node_pool_name})
