# pyright: strict
"""Node label keys the platform writes itself, and those the node's other owners refuse.

One list for both ends: the components write these labels onto a pool's nodes
(components/conventions.pool_node_labels, through Karpenter on aws and the pool labeler on
provider kubernetes), and rule GP209 rejects a spec label with one of these keys, which the
platform would otherwise silently overwrite. The validator may not import components/, so the
names live here.

Sources:

- Karpenter NodePool CRD, aws/karpenter-provider-aws ``pkg/apis/crds/karpenter.sh_nodepools.yaml``
  at 1d927085 (chart 1.14.1): the CEL rules on ``template.metadata.labels`` restrict the
  ``karpenter.sh`` and ``karpenter.k8s.aws`` domains (subdomains included) and
  ``kubernetes.io/hostname``.
- NVIDIA GPU Operator v26.7.0: an operand runs on a node unless its
  ``nvidia.com/gpu.deploy.<operand>`` label is ``false``; the device plugin reads its config
  name from ``nvidia.com/device-plugin.config``, mig-manager its layout from
  ``nvidia.com/mig.config``.
- HAMi chart 2.10.0 (Project-HAMi/HAMi v2.10.0): ``devicePlugin.nvidiaNodeSelector`` defaults to
  ``{gpu: "on"}``; rendering the chart with any other selector keeps that key (Helm merges maps).
"""

from __future__ import annotations

PLATFORM_LABEL_PREFIX = "gpuplat.dev/"
POOL_LABEL = "gpuplat.dev/pool"
SHARING_LABEL = "gpuplat.dev/sharing"  # the pool's sharing mode; HAMi's device plugin selects on it
CPU_NODE_LABEL = "gpuplat.dev/cpu"  # "true" on the CPU NodePool's nodes (aws): tenants' CPU-only work
# The taint the GPU fencer (aws) puts on a node whose GPU condition is False, and its Deployment;
# components/kubernetes/node_fencer.py runs standalone and spells the taint itself.
GPU_FENCE_TAINT = "gpuplat.dev/gpu-unhealthy"
GPU_FENCER = "gpu-fencer"
FABRIC_LABEL = "gpuplat.dev/fabric"  # "true" on fabric pools: SR-IOV / network operator agents select on it
# The GPU Operator deploys an operand on a node unless its deploy label is already "false";
# HAMi brings its own device plugin to fractional pools, and two plugins must not advertise there.
DEPLOY_LABEL_PREFIX = "nvidia.com/gpu.deploy."
DEVICE_PLUGIN_DEPLOY_LABEL = DEPLOY_LABEL_PREFIX + "device-plugin"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"  # Karpenter's well-known label: spot | on-demand | reserved
HOSTNAME_LABEL = "kubernetes.io/hostname"
# Not a node label: it marks the objects that belong to one tenant (its Namespace, which Kueue
# and the Pod Security policy select on, and its claims), and the preview's stateful gate finds
# the tenant objects that hold data by it.
TENANT_LABEL = "gpuplat.dev/tenant"
# HAMi's device plugin DaemonSet selects `gpu=on` whatever else it is given: Helm merges the
# chart default `nvidiaNodeSelector: {gpu: "on"}` with ours, so fractional nodes must carry it.
HAMI_NODE_LABEL = "gpu"
HAMI_NODE_LABEL_VALUE = "on"

# Exact keys and key prefixes, each with why the spec may not set it (GP209's message).
_RESERVED_KEYS: dict[str, str] = {
    DEVICE_PLUGIN_CONFIG_LABEL: "the platform sets it to the pool's time-slicing / MPS device-plugin config",
    MIG_CONFIG_LABEL: "the platform sets it to the pool's MIG layout, which the GPU Operator applies",
    HOSTNAME_LABEL: "the kubelet sets it, and Karpenter's NodePool refuses it",
    HAMI_NODE_LABEL: "the platform sets gpu=on on fractional pools, where HAMi's device plugin selects it",
}
_RESERVED_PREFIXES: tuple[tuple[str, str], ...] = (
    (PLATFORM_LABEL_PREFIX, "the platform sets its own domain (pool, sharing mode, fabric membership)"),
    (DEPLOY_LABEL_PREFIX, "the platform sets which GPU Operator operands run on the pool"),
)
# Karpenter's CEL rule refuses a label whose part before the first "/" ends with one of these
# (plain string suffix, so subdomains and e.g. "my-karpenter.sh" too).
_KARPENTER_DOMAINS = ("karpenter.sh", "karpenter.k8s.aws")


def reserved_label(key: str) -> str | None:
    """Why a pool's spec may not set node label `key` (who sets it), or None when it is free."""
    if key in _RESERVED_KEYS:
        return _RESERVED_KEYS[key]
    for prefix, why in _RESERVED_PREFIXES:
        if key.startswith(prefix):
            return why
    if key.split("/", 1)[0].endswith(_KARPENTER_DOMAINS):
        return "Karpenter's NodePool refuses the domain (Karpenter sets these labels itself)"
    return None
