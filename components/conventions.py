"""Names, labels and taints shared by the AWS and Kubernetes sides (no pulumi here), and how
components are wired.

Karpenter NodePools (aws) write these labels onto the nodes they launch, the pool labeler
(provider kubernetes) writes them onto existing nodes; the GPU Operator, Kueue flavors,
recording rules and tenants select on them. One place, so the two sides cannot drift.

How every component is wired (both sides):

- Constructor `Component(name, ComponentArgs(...), opts)`. `opts` comes from the parent and sets
  `parent`; the root (platform.py) adds `providers=` on the AWS-side components, the Kubernetes
  side's builder (kubernetes/side.py) adds nothing.
- The provider: an AWS-side component's children inherit the providers of its `opts` (the spec
  region's AWS provider, plus the Kubernetes provider where it makes Kubernetes objects: Karpenter,
  Fabric, GpuNodePool). A Kubernetes-side component gets the Kubernetes provider as
  `Args.provider`. Either way each child is created with one helper,
  `child_opts(self, provider, depends_on)` (components/_common.py), `provider` None on the AWS
  side; `stateful(self, depends_on)` for data and identities.
- Dependencies: `Args.depends_on` (what must exist first: the cluster's system nodes and add-ons,
  Karpenter's releases); a dependency with a meaning of its own has its own field (`kueue`,
  `gpu_operator`, `monitoring`, `pod_identity_agent`). What a component offers others to wait
  for is an attribute (`Cluster.ready`, `Karpenter.releases`, `TenantPodSecurity.ready`).
- Helm: every chart goes through `helm_release` (kubernetes/_common.py): the catalog's pinned
  chart, release `<name>-<key>` (or `<name>-<suffix>`), its namespace created by the platform
  with a Pod Security label, by Helm, or already there.
- Args carry the model and only the plan records the component reads (`Plan.reservations`,
  `Plan.storage`, the fabric zone); a component that reads nothing of the plan gets none.
- Spec builders: what a resource is made of comes from pure functions returning its Args or
  dicts (`cluster_args`, `node_pool_spec`, `controller_values`, ...), testable without Pulumi;
  `__init__` only creates resources from them, in dependency order.
"""

from __future__ import annotations

from gpuplat.catalog import HAMI_GPU_RESOURCE as HAMI_GPU_RESOURCE

# The label keys live in the catalog because rule GP209 (gpuplat/, which may not import
# components/) rejects spec labels the platform would overwrite.
from gpuplat.catalog.labels import CAPACITY_TYPE_LABEL as CAPACITY_TYPE_LABEL
from gpuplat.catalog.labels import DEVICE_PLUGIN_CONFIG_LABEL as DEVICE_PLUGIN_CONFIG_LABEL
from gpuplat.catalog.labels import DEVICE_PLUGIN_DEPLOY_LABEL as DEVICE_PLUGIN_DEPLOY_LABEL
from gpuplat.catalog.labels import FABRIC_LABEL as FABRIC_LABEL
from gpuplat.catalog.labels import HAMI_NODE_LABEL as HAMI_NODE_LABEL
from gpuplat.catalog.labels import HAMI_NODE_LABEL_VALUE as HAMI_NODE_LABEL_VALUE
from gpuplat.catalog.labels import MIG_CONFIG_LABEL as MIG_CONFIG_LABEL
from gpuplat.catalog.labels import POOL_LABEL as POOL_LABEL
from gpuplat.catalog.labels import SHARING_LABEL as SHARING_LABEL
from gpuplat.model import GpuNodePool, Market, Platform, SharingMode

GPU_TAINT_KEY = "nvidia.com/gpu"  # GPU nodes repel pods that do not ask for GPUs
SPOT_TAINT_KEY = "gpuplat.dev/spot"  # keeps pods off spot nodes unless a spot Kueue flavor admitted them
TAG_POOL = "gpuplat:pool"  # AWS tag linking reservations / placement groups to a pool
# The Mountpoint S3 CSI driver's node service account (the Kubernetes side installs the chart
# with this name); the AWS side grants it S3 access through an EKS Pod Identity association.
S3_CSI_NAMESPACE = "kube-system"
S3_CSI_SERVICE_ACCOUNT = "s3-csi-driver-sa"
# The Kubernetes group a tenant's RoleBinding grants `edit` in its namespace; EKS access entries
# (aws) or the cluster's identity provider (kubernetes) put people into it.
TENANT_GROUP = "gpuplat:{tenant}"
# The ownership label of every Kubernetes object the platform creates, Karpenter's included
# (kubernetes/_common.py `meta`, aws/gpu_node_pool.py): the platform is the application they
# are part of; Pulumi, not gpuplat, is what manages them.
PART_OF_LABEL = "app.kubernetes.io/part-of"
OWNER = "gpuplat"


def resource_prefix(model: Platform) -> str:
    return model.metadata.name


def mig_config_name(pool: GpuNodePool) -> str | None:
    """Value of nvidia.com/mig.config: a GPU Operator default config, or our custom one."""
    if pool.sharing.mode is not SharingMode.MIG:
        return None
    if pool.sharing.profile:
        return pool.sharing.profile
    return f"gpuplat-{pool.name}"


def device_plugin_config_name(pool: GpuNodePool) -> str | None:
    """Key of the pool's entry in the device-plugin ConfigMap (time-slicing / MPS pools)."""
    if pool.sharing.mode in (SharingMode.MPS, SharingMode.TIME_SLICING):
        return pool.name
    return None


def pool_node_labels(pool: GpuNodePool) -> dict[str, str]:
    """Labels every node of the pool carries (besides Karpenter's own).

    Every key added here besides the spec's own `labels` must be one that
    catalog.labels.reserved_label refuses, so that GP209 stops a spec label the platform
    would overwrite.
    """
    labels = dict(pool.labels)
    labels[POOL_LABEL] = pool.name
    labels[SHARING_LABEL] = pool.sharing.mode.value
    if pool.fabric:
        labels[FABRIC_LABEL] = "true"
    if pool.sharing.mode is SharingMode.FRACTIONAL:
        labels[DEVICE_PLUGIN_DEPLOY_LABEL] = "false"
        labels[HAMI_NODE_LABEL] = HAMI_NODE_LABEL_VALUE
    dp = device_plugin_config_name(pool)
    if dp is not None:
        labels[DEVICE_PLUGIN_CONFIG_LABEL] = dp
    mig = mig_config_name(pool)
    if mig is not None:
        labels[MIG_CONFIG_LABEL] = mig
    return labels


def pool_taints(pool: GpuNodePool, market: Market | None) -> list[dict[str, str]]:
    """Kubernetes taints (dict form, as in NodePool specs) of the pool's nodes in `market`."""
    defaults = [{"key": GPU_TAINT_KEY, "value": "true", "effect": "NoSchedule"}]
    if market is Market.SPOT:
        defaults.append({"key": SPOT_TAINT_KEY, "value": "true", "effect": "NoSchedule"})
    # A node holds one taint per key and effect: a spec taint replaces a default with the same pair.
    own = {(t.key, t.effect) for t in pool.taints}
    taints = [t for t in defaults if (t["key"], t["effect"]) not in own]
    for t in pool.taints:
        taint = {"key": t.key, "effect": t.effect}
        if t.value is not None:
            taint["value"] = t.value
        taints.append(taint)
    return taints
