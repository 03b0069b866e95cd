"""GpuNodePool: one pool's Karpenter EC2NodeClass and one NodePool per market it gets nodes in.

Choices this component makes (the spec has no field for them):

* AMI: `al2023@v<date>`, the release gpuplat/catalog/eks.py pins for the Kubernetes minor
  (or the spec's `target.nodeAmi`). Karpenter resolves the alias to the EKS-optimized AL2023
  *NVIDIA* variant for GPU instance types (driver, fabric manager, EFA installer included).
  With `al2023@latest` every AMI EKS publishes would be drift, and Karpenter would replace
  production GPU nodes one by one without anyone reviewing it; a pin moves when the catalog
  is bumped, shows in the preview, and the disruption budgets below pace the roll.
* Reserved capacity: on-demand-reservation pools select the ODCRs Procurement creates (by
  their tags); capacity-block pools select the Capacity Blocks the spec names (each id a term,
  the tags one more; terms are ORed). A block is bought, never created here; when it ends EC2
  terminates its instances and the reserved NodePool has nothing to launch into until the
  next block with the tags exists. A block's instances are already placed together (EC2:
  "no need to use a cluster placement group with a Capacity Block", and AWS ParallelCluster
  refuses the combination), so a fabric pool's reserved NodePool gets its own node class,
  `<pool>-blocks`, without the placement group; its spot and on-demand NodePools keep the
  pool's class and placement group.
* Selectors use tags, not ids: subnets by the discovery tag (fabric pools add the zone tag,
  which leaves exactly the fabric zone's private subnet), the cluster security group by the
  `aws:eks:cluster-name` tag EKS puts on it, the EFA group by its own tag. Tags are known
  before anything exists, so a preview shows (and policy checks) the real node class instead
  of unknowns, and a replaced subnet or group is picked up without editing the CR.
* EFA (fabric pools): AWS's layout for multi-card instances. The primary ENA interface on
  card 0 device 0, then one `efa-only` interface per network card (card 0 device 1, card
  N device 0). That is one EFA per card, never two (Karpenter's CEL rule), and as many EFA
  devices as the instance has cards, all of its EFA bandwidth. With `storage.hot.efa` their user
  data also makes them Lustre EFA clients of the hot tier (lustre_client.py).
* Root volume: 200 GiB gp3, encrypted with the account's EBS key. Container images and
  scratch go to the instance-store RAID0; a customer key here would need kms:CreateGrant for
  Karpenter and EC2 in the key policy, with no gain for an OS disk holding no data.
* NodePools, their names, limits and weights come from the plan (gpuplat/plan/capacity.py):
  one per market the split gives nodes, reserved first; limited on `nvidia.com/gpu` and, on
  MIG / shared / fractional pools, on the units their nodes advertise, which is what Karpenter
  counts once the nodes are initialized.
* NodeOverlay (karpenter.sh/v1alpha1, feature gate `nodeOverlay`, which Karpenter's release
  turns on): MIG, time-sliced, MPS and HAMi pools advertise resources EC2 knows nothing of,
  so without it Karpenter finds no instance type for a pod asking for them and the pool never
  scales up (and packs time-sliced pools as if a node held only its GPUs). Alpha: the CRD and
  its semantics may change between Karpenter minors; the chart version pins both.
* Disruption: every GPU pool consolidates only empty nodes (`WhenEmpty`) after the spec's
  cooldown. Consolidating underutilized nodes would evict running jobs to repack them, and a
  GPU job (a training rank, a loaded model) loses its work when moved; the capacity floor
  (Autoscaling) keeps `nodes.min` nodes busy so they are never empty. Fabric pools disrupt
  one node at a time and never expire (`expireAfter: Never`): expiry is forceful in
  Karpenter v1 (no budget, no do-not-disrupt), while drift from a new AMI is graceful, so
  patches still roll. Other pools keep the 720h expiry, 10% at a time.
* User data: MIG pools turn MIG mode on before the kubelet starts (mig_boot.py says why);
  other pools keep the AMI's bootstrap as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.conventions import OWNER, PART_OF_LABEL, POOL_LABEL, TAG_POOL, pool_node_labels, pool_taints
from gpuplat.catalog import GPU_RESOURCE, instance_type
from gpuplat.catalog.eks import node_ami_alias
from gpuplat.catalog.footprint import GPU_ROOT_GIB
from gpuplat.model import GpuNodePool as PoolModel
from gpuplat.model import Market, Platform, ReservationKind
from gpuplat.plan import Plan
from gpuplat.plan.types import NodeOverlayPlan, NodePoolPlan

from .._common import child_opts
from ._common import DISCOVERY_TAG, EFA_TAG, ZONE_TAG
from .fabric import fabric_zone
from .lustre_client import lustre_efa_script, shell_parts
from .mig_boot import mig_boot_user_data
from .procurement import reservation_selector

NODE_CLASS_API = "karpenter.k8s.aws/v1"
NODE_POOL_API = "karpenter.sh/v1"
NODE_OVERLAY_API = "karpenter.sh/v1alpha1"
ROOT_VOLUME = f"{GPU_ROOT_GIB}Gi"
CLUSTER_SG_TAG = "aws:eks:cluster-name"  # set by EKS on the cluster security group
NODE_POOL_LABEL = "karpenter.sh/nodepool"  # set by Karpenter on every node it launches


def efa_interfaces(network_cards: int) -> list[dict[str, Any]]:
    interfaces: list[dict[str, Any]] = [{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}]
    for card in range(network_cards):
        interfaces.append({"networkCardIndex": card, "deviceIndex": 1 if card == 0 else 0, "interfaceType": "efa-only"})
    return interfaces


# Keys Karpenter sets itself; the EC2NodeClass CRD refuses them in spec.tags.
_KARPENTER_OWNED_TAGS = (
    "eks:eks-cluster-name",
    "karpenter.sh/nodepool",
    "karpenter.sh/nodeclaim",
    "karpenter.k8s.aws/ec2nodeclass",
)


def instance_tags(default_tags: Mapping[str, str], model: Platform, pool: str) -> dict[str, str]:
    """What Karpenter puts on a pool's instances, volumes and interfaces: the AWS provider's default
    tags (the stack's aws:defaultTags + metadata.tags), which reach only objects Pulumi creates,
    then the pool's own tag. Keys Karpenter owns are left to Karpenter."""
    merged = {**default_tags, **model.metadata.tags, TAG_POOL: pool}
    return {
        k: v for k, v in merged.items() if k not in _KARPENTER_OWNED_TAGS and not k.startswith("kubernetes.io/cluster")
    }


def pool_zones(model: Platform, plan: Plan, pool: PoolModel) -> list[str]:
    return [fabric_zone(plan)] if pool.fabric else list(model.target.zones)


def base_node_class_spec(
    model: Platform,
    role: pulumi.Input[str],
    subnet_tags: Mapping[str, str],
    security_groups: list[dict[str, Any]],
    tags: Mapping[str, str],
) -> dict[str, Any]:
    """What every node class of the platform has: the pinned AMI, the node role, IMDS and disks."""
    return {
        "amiSelectorTerms": [{"alias": node_ami_alias(model.target.kubernetes_version, model.target.node_ami)}],
        "role": role,
        "subnetSelectorTerms": [{"tags": dict(subnet_tags)}],
        "securityGroupSelectorTerms": security_groups,
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpProtocolIPv6": "disabled",
            # Pods get credentials from Pod Identity, never IMDS: with 2 hops any pod could read the
            # node role's. Mountpoint's pods then cannot detect region and bandwidth; the S3
            # volumes pass both as mount options (components/kubernetes/storage_classes.py).
            "httpPutResponseHopLimit": 1,
            "httpTokens": "required",
        },
        "blockDeviceMappings": [
            {
                "deviceName": "/dev/xvda",
                "rootVolume": True,
                "ebs": {"volumeSize": ROOT_VOLUME, "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True},
            }
        ],
        "instanceStorePolicy": "RAID0",
        "tags": dict(tags),
    }


def node_class_spec(
    model: Platform,
    plan: Plan,
    pool: PoolModel,
    cluster: str,
    role: pulumi.Input[str],
    placement_group: pulumi.Input[str] | None,
    default_tags: Mapping[str, str] | None = None,
    blocks: bool = False,
) -> dict[str, Any]:
    """The pool's EC2NodeClass; `blocks`: the class of a fabric pool's Capacity Block NodePool."""
    subnet_tags = {DISCOVERY_TAG: cluster}
    security_groups: list[dict[str, Any]] = [{"tags": {CLUSTER_SG_TAG: cluster}}]
    if pool.fabric:
        subnet_tags[ZONE_TAG] = fabric_zone(plan)
        security_groups.append({"tags": {EFA_TAG: cluster}})
    spec = base_node_class_spec(
        model, role, subnet_tags, security_groups, instance_tags(default_tags or {}, model, pool.name)
    )
    lustre: str | None = None
    if pool.fabric:
        itype = instance_type(pool.instance_type or "")
        if itype is None:
            raise ValueError(f"pool {pool.name!r}: {pool.instance_type!r} is not in the catalog")
        spec["networkInterfaces"] = efa_interfaces(itype.network_cards)
        if model.storage.hot is not None and model.storage.hot.efa:
            # The hot tier serves EFA only to nodes whose LNet runs on EFA (lustre_client.py).
            lustre = lustre_efa_script(itype.network_cards)
        if not blocks:
            if placement_group is None:
                raise ValueError(f"fabric pool {pool.name!r} needs its placement group")
            spec["placementGroupSelector"] = {"name": placement_group}
    mig = mig_boot_user_data(pool)
    if lustre is not None:
        # One archive, MIG mode first: cloud-init runs both before nodeadm starts the kubelet.
        spec["userData"] = shell_parts(*(s for s in (mig, lustre) if s is not None))
    elif mig is not None:
        spec["userData"] = mig  # a plain script: Karpenter wraps it as a part beside its NodeConfig
    reserved = plan.pool(pool.name).share(Market.RESERVED).nodes > 0
    if blocks or (reserved and not separate_block_class(plan, pool)):
        spec["capacityReservationSelectorTerms"] = reservation_terms(pool, cluster)
    return spec


def separate_block_class(plan: Plan, pool: PoolModel) -> bool:
    """A fabric pool whose reserved nodes launch into Capacity Blocks, outside its placement group."""
    blocks = pool.reservation.kind is ReservationKind.CAPACITY_BLOCK
    return pool.fabric and blocks and plan.pool(pool.name).share(Market.RESERVED).nodes > 0


def reservation_terms(pool: PoolModel, cluster: str) -> list[dict[str, Any]]:
    """Which capacity reservations the pool's reserved NodePool launches into (terms are ORed)."""
    reservation = pool.reservation
    if reservation.kind is ReservationKind.CAPACITY_BLOCK:
        terms: list[dict[str, Any]] = [{"id": i} for i in reservation.ids]
        if reservation.tags:
            terms.append({"tags": dict(reservation.tags)})
        return terms
    return [{"tags": reservation_selector(cluster, pool.name)}]


def node_pool_spec(
    model: Platform,
    plan: Plan,
    pool: PoolModel,
    planned: NodePoolPlan,
    node_class: str,
) -> dict[str, Any]:
    market = planned.market
    itype = pool.instance_type
    requirements = [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [itype]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [market.value]},
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": pool_zones(model, plan, pool)},
    ]
    cooldown = model.autoscaling.cooldown
    node_spec: dict[str, Any] = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": node_class},
        "requirements": requirements,
        "taints": pool_taints(pool, market),
    }
    disruption = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": cooldown, "budgets": [{"nodes": "10%"}]}
    if pool.fabric:
        disruption["budgets"] = [{"nodes": "1"}]
        node_spec["expireAfter"] = "Never"
    return {
        "template": {
            "metadata": {"labels": pool_node_labels(pool)},
            "spec": node_spec,
        },
        "disruption": disruption,
        "limits": {resource: str(n) for resource, n in (planned.limits or {GPU_RESOURCE: planned.gpus}).items()},
        "weight": planned.weight,
    }


def node_overlay_spec(pool: PoolModel, overlay: NodeOverlayPlan) -> dict[str, Any]:
    """What a node of the pool advertises once its device plugin runs, for Karpenter's simulation."""
    return {
        "requirements": [
            {"key": NODE_POOL_LABEL, "operator": "In", "values": list(overlay.node_pools)},
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [pool.instance_type]},
        ],
        "capacity": {resource: str(units) for resource, units in overlay.capacity.items()},
    }


@dataclass(frozen=True)
class GpuNodePoolArgs:
    model: Platform
    plan: Plan
    pool: str  # name of the pool in model.pools
    cluster_name: str
    node_role_name: pulumi.Input[str]
    placement_group_name: pulumi.Input[str] | None  # fabric pools
    depends_on: Sequence[pulumi.Resource]  # Karpenter's CRD and controller releases
    default_tags: Mapping[str, str] = field(default_factory=dict[str, str])  # the AWS provider's


class GpuNodePool(pulumi.ComponentResource):
    node_class_name: str
    node_pool_names: dict[Market, str]  # only the markets the plan gives nodes

    def __init__(self, name: str, args: GpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:GpuNodePool", name, None, opts)
        model, plan = args.model, args.plan
        pool = model.pools_by_name[args.pool]
        labels = {PART_OF_LABEL: OWNER, POOL_LABEL: pool.name}
        self.node_class_name = pool.name
        classes = self._node_classes(name, args, pool, labels)
        self.node_pool_names = {}
        for planned in plan.pool_node_pools(pool.name):
            class_name, class_resource = classes[planned.market]
            k8s.apiextensions.CustomResource(
                f"{name}-{planned.market.value}",
                api_version=NODE_POOL_API,
                kind="NodePool",
                metadata={"name": planned.name, "labels": labels},
                spec=node_pool_spec(model, plan, pool, planned, class_name),
                # After the node class: deleting a NodePool first lets Karpenter drain its nodes.
                opts=child_opts(self, depends_on=[*args.depends_on, class_resource]),
            )
            self.node_pool_names[planned.market] = planned.name
        for overlay in (o for o in plan.node_overlays if o.pool == pool.name):
            k8s.apiextensions.CustomResource(
                f"{name}-overlay",
                api_version=NODE_OVERLAY_API,
                kind="NodeOverlay",
                metadata={"name": overlay.name, "labels": labels},
                spec=node_overlay_spec(pool, overlay),
                opts=child_opts(self, depends_on=args.depends_on),
            )
        self.register_outputs(
            {
                "nodeClassName": self.node_class_name,
                "nodePoolNames": {m.value: n for m, n in self.node_pool_names.items()},
            }
        )

    def _node_classes(
        self, name: str, args: GpuNodePoolArgs, pool: PoolModel, labels: dict[str, str]
    ) -> dict[Market, tuple[str, pulumi.Resource]]:
        """The node class (name, resource) each market's NodePool uses: one, or a second for Capacity Blocks."""
        model, plan = args.model, args.plan
        node_class = k8s.apiextensions.CustomResource(
            f"{name}-nodeclass",
            api_version=NODE_CLASS_API,
            kind="EC2NodeClass",
            metadata={"name": self.node_class_name, "labels": labels},
            spec=node_class_spec(
                model,
                plan,
                pool,
                args.cluster_name,
                args.node_role_name,
                args.placement_group_name,
                args.default_tags,
            ),
            opts=child_opts(self, depends_on=args.depends_on),
        )
        classes: dict[Market, tuple[str, pulumi.Resource]] = {
            market: (self.node_class_name, node_class) for market in Market
        }
        if separate_block_class(plan, pool):
            block_class = k8s.apiextensions.CustomResource(
                f"{name}-nodeclass-blocks",
                api_version=NODE_CLASS_API,
                kind="EC2NodeClass",
                metadata={"name": f"{pool.name}-blocks", "labels": labels},
                spec=node_class_spec(
                    model, plan, pool, args.cluster_name, args.node_role_name, None, args.default_tags, blocks=True
                ),
                opts=child_opts(self, depends_on=args.depends_on),
            )
            classes[Market.RESERVED] = (f"{pool.name}-blocks", block_class)
        return classes
