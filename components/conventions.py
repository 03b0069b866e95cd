"""Names, labels and taints shared by the AWS and Kubernetes sides (no pulumi here).

Karpenter NodePools (aws) write these labels onto the nodes they launch, the pool labeler
(provider kubernetes) writes them onto existing nodes; the GPU Operator, Kueue flavors,
recording rules and tenants select on them. One place, so the two sides cannot drift.
"""

from __future__ import annotations

from gpuplat.model import GpuNodePool, Market, Platform, SharingMode

POOL_LABEL = "gpuplat.dev/pool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"  # Karpenter's well-known label: spot | on-demand | reserved
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
GPU_TAINT_KEY = "nvidia.com/gpu"  # GPU nodes repel pods that do not ask for GPUs
SPOT_TAINT_KEY = "gpuplat.dev/spot"  # only preemptible work tolerates spot nodes
TAG_POOL = "gpuplat:pool"  # AWS tag linking reservations / placement groups to a pool


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
    """Labels every node of the pool carries (besides Karpenter's own)."""
    labels = dict(pool.labels)
    labels[POOL_LABEL] = pool.name
    dp = device_plugin_config_name(pool)
    if dp is not None:
        labels[DEVICE_PLUGIN_CONFIG_LABEL] = dp
    mig = mig_config_name(pool)
    if mig is not None:
        labels[MIG_CONFIG_LABEL] = mig
    return labels


def pool_taints(pool: GpuNodePool, market: Market | None) -> list[dict[str, str]]:
    """Kubernetes taints (dict form, as in NodePool specs) of the pool's nodes in `market`."""
    taints = [{"key": GPU_TAINT_KEY, "value": "true", "effect": "NoSchedule"}]
    if market is Market.SPOT:
        taints.append({"key": SPOT_TAINT_KEY, "value": "true", "effect": "NoSchedule"})
    for t in pool.taints:
        taint = {"key": t.key, "effect": t.effect}
        if t.value is not None:
            taint["value"] = t.value
        taints.append(taint)
    return taints
