"""GpuSharing: the NVIDIA GPU Operator with the pools' sharing configs, and HAMi for fractional pools.

- MIG strategy: the catalog's MIG_STRATEGY, `mixed`: the plan, quotas and flavors name each
  MIG profile (nvidia.com/mig-<profile>) whatever the mix of pools, so adding a pool never
  renames a resource; nodes pick their layout by `nvidia.com/mig.config`. It is set in each
  device-plugin config, not in the ClusterPolicy: the operator passes a ClusterPolicy strategy
  to every device plugin as MIG_STRATEGY, which wins over the config file, and the plugin
  refuses MPS under `mixed`; so MPS pools' configs say `none` (_gpu_configs).
- Time-slicing / MPS: one device-plugin config per pool, picked by
  `nvidia.com/device-plugin.config=<pool>`; exclusive and MIG nodes get `default`.
- Custom MIG layouts: a mig-parted ConfigMap (see _gpu_configs.mig_parted_config).
- Driver and container toolkit: on aws the EKS AL2023 NVIDIA AMI ships both, so the operator
  must not install them again; on provider kubernetes the operator installs them, and on an
  RDMA fabric through two NVIDIADrivers: GPUDirect RDMA on fabric nodes only (fabric_driver_spec). A node
  whose driver is already on the host is detected by the operator, which then skips its
  driver pod there, so this default is safe on mixed fleets too.
- Fractional pools: HAMi (scheduler extender + its own device plugin) on the nodes labelled
  `gpuplat.dev/sharing=fractional` and `gpu=on` (the chart's own selector), where the GPU
  Operator's device plugin is switched off by `nvidia.com/gpu.deploy.device-plugin=false`
  (conventions.pool_node_labels). HAMi advertises `conventions.HAMI_GPU_RESOURCE`, not
  nvidia.com/gpu; the reason is noted there.
- DCGM exporter: on, but its ServiceMonitor is Autoscaling's (one with honorLabels and the
  pool label), so the operator's own is off: exactly one scrapes the exporter. Its counter
  list is the platform's (gpuplat/catalog/dcgm.py: the operator's default plus the ECC and
  NVLink error counters GpuHealth alerts on), a ConfigMap in the operator's namespace that
  the ClusterPolicy names; the exporter pods wait for it to be mounted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from components.conventions import (
    FABRIC_LABEL,
    HAMI_GPU_RESOURCE,
    HAMI_NODE_LABEL,
    HAMI_NODE_LABEL_VALUE,
    SHARING_LABEL,
)
from gpuplat.catalog import CHARTS, HAMI_CORES_RESOURCE, HAMI_MEMORY_RESOURCE, MIG_STRATEGY, gpu_model
from gpuplat.catalog.charts import (
    GPU_DRIVER_IMAGE,
    GPU_DRIVER_KERNEL_MODULE_TYPE,
    GPU_DRIVER_REPOSITORY,
    GPU_DRIVER_VERSION,
)
from gpuplat.catalog.dcgm import METRICS_CONFIG_KEY, metrics_csv
from gpuplat.model import GpuNodePool, Platform, Provider, SharingMode

from .._common import child_opts
from ._common import gpu_node_tolerations, helm_release, meta
from ._gpu_configs import (
    DEFAULT_DEVICE_PLUGIN_CONFIG,
    DEFAULT_MIG_CONFIG,
    DEVICE_PLUGIN_CONFIGMAP,
    MIG_PARTED_CONFIGMAP,
    device_plugin_configs,
    mig_parted_data,
)

# NFD's worker keeps its chart default toleration of control-plane nodes beside ours.
_CONTROL_PLANE_TOLERATION = {
    "key": "node-role.kubernetes.io/control-plane",
    "operator": "Equal",
    "value": "",
    "effect": "NoSchedule",
}
NVIDIA_DRIVER_API = "nvidia.com/v1alpha1"
FABRIC_DRIVER = "gpuplat-fabric"  # cluster-scoped, like the chart's own `default`
# HAMi's default registry is a mirror in mainland China; the upstream image is the same.
_KUBE_SCHEDULER_IMAGE = {"registry": "registry.k8s.io", "repository": "kube-scheduler"}
DCGM_METRICS_CONFIGMAP = "gpuplat-dcgm-metrics"


@dataclass(frozen=True)
class GpuSharingArgs:
    model: Platform
    provider: pulumi.ProviderResource
    depends_on: Sequence[pulumi.Resource] = field(default_factory=lambda: ())  # e.g. a ready cluster


def gpu_operator_values(model: Platform) -> dict[str, Any]:
    on_aws = model.target.provider is Provider.AWS
    tolerations = gpu_node_tolerations(model)
    driver: dict[str, Any] = {"enabled": not on_aws}
    if model.rdma_fabric:
        # Drivers per node group (NVIDIADriver): GPUDirect RDMA only on fabric nodes (fabric_driver_spec).
        driver["nvidiaDriverCRD"] = {"enabled": True, "deployDefaultCR": True}
        driver["rdma"] = {"enabled": False, "useHostMofed": False}
    values: dict[str, Any] = {
        # Empty: the chart then renders no spec.mig.strategy and each node's device-plugin
        # config decides (the chart's default, single, would also override every config).
        "mig": {"strategy": ""},
        "driver": driver,
        "toolkit": {"enabled": not on_aws},
        # Operands must reach spot and custom-tainted GPU nodes too, or those nodes never
        # advertise a GPU.
        "daemonsets": {"tolerations": tolerations},
        "node-feature-discovery": {"worker": {"tolerations": [_CONTROL_PLANE_TOLERATION, *tolerations]}},
        "devicePlugin": {
            "config": {
                "create": True,
                "name": DEVICE_PLUGIN_CONFIGMAP,
                "default": DEFAULT_DEVICE_PLUGIN_CONFIG,
                "data": device_plugin_configs(model),
            }
        },
        # The chart copies `config` into the ClusterPolicy, whose schema keeps only `name`.
        "dcgmExporter": {"serviceMonitor": {"enabled": False}, "config": {"name": DCGM_METRICS_CONFIGMAP}},
    }
    mig_data = mig_parted_data(model)
    if mig_data is not None:
        values["migManager"] = {
            "config": {"create": True, "name": MIG_PARTED_CONFIGMAP, "default": DEFAULT_MIG_CONFIG, "data": mig_data}
        }
    return values


def fabric_driver_spec(model: Platform) -> dict[str, Any]:
    """The NVIDIADriver of fabric nodes: the chart's driver with GPUDirect RDMA (peermem).

    GPUDirect RDMA builds nvidia-peermem against the network operator's DOCA-OFED driver
    container, and with `useHostMofed: false` the driver pod waits for that container to report
    ready before it starts. The network operator runs it only on fabric nodes (FabricTopology),
    so a ClusterPolicy-wide `driver.rdma` would leave every other GPU node waiting forever: no
    driver, no GPU. So the chart's default NVIDIADriver (the fallback for GPU nodes no other
    NVIDIADriver selects) has RDMA off, and this one, for the nodes labelled as fabric nodes,
    has it on (gpu-operator `internal/state/driver.go` reads `rdma` per NVIDIADriver).
    """
    return {
        "driverType": "gpu",
        "default": False,
        "repository": GPU_DRIVER_REPOSITORY,
        "image": GPU_DRIVER_IMAGE,
        "version": GPU_DRIVER_VERSION,
        "kernelModuleType": GPU_DRIVER_KERNEL_MODULE_TYPE,
        "nodeSelector": {FABRIC_LABEL: "true"},
        "rdma": {"enabled": True, "useHostMofed": False},
        "tolerations": gpu_node_tolerations(model, model.fabric_pools),
    }


def hami_device_config(model: Platform, pools: Sequence[GpuNodePool]) -> str:
    """HAMi's scheduler device config: the chart's default NVIDIA section with our resource names
    and defaults a pod gets when it asks for a vGPU without memory or cores.

    The chart hard-codes `defaultMemory: 0` (a pod without `nvidia.com/gpumem` reserves the
    whole GPU's memory, so a fractional GPU serves one pod at a time) and offers no value for
    it except replacing the whole file, hence the file. The default share is one `replicas`-th
    of the smallest fractional GPU's memory and of its cores, so `replicas` pods that ask only
    for one vGPU fit on one GPU, as the plan counts them.
    """
    split = max(p.sharing.replicas or 1 for p in pools)
    memory_mib = min(int((gpu.memory_gib if (gpu := gpu_model(p.gpu_model)) else 0) * 1024) for p in pools)
    nvidia = {
        "resourceCountName": HAMI_GPU_RESOURCE,
        "resourceMemoryName": HAMI_MEMORY_RESOURCE,
        "resourceMemoryPercentageName": "nvidia.com/gpumem-percentage",
        "resourceCoreName": HAMI_CORES_RESOURCE,
        "resourcePriorityName": "nvidia.com/priority",
        "overwriteEnv": False,
        "defaultMemory": memory_mib // split,
        "defaultCores": 100 // split,
        "defaultGPUNum": 1,
        "preConfiguredDeviceMemory": 0,
        "memoryFactor": 1,
        "deviceSplitCount": split,
        "deviceMemoryScaling": 1,
        "deviceCoreScaling": 1,
        "enableNumaTopology": False,
        "gpuCorePolicy": "default",
        "libCudaLogLevel": 1,
        "runtimeClassName": _hami_runtime_class(model),
    }
    return yaml.safe_dump({"nvidia": nvidia}, sort_keys=False)


def _hami_runtime_class(model: Platform) -> str:
    # On provider kubernetes the operator installs the toolkit and its `nvidia` runtime class.
    return "nvidia" if model.target.provider is Provider.KUBERNETES else ""


def hami_values(model: Platform) -> dict[str, Any] | None:
    """HAMi's values, or None without fractional pools.

    `deviceSplitCount` is chart-wide: with several fractional pools of different `replicas`
    the largest applies (HAMi's per-node overrides are keyed by node name, which an
    autoscaled pool does not have in advance).
    """
    pools = [p for p in model.pools if p.sharing.mode is SharingMode.FRACTIONAL]
    if not pools:
        return None
    policy = model.scheduling.gpu_scheduler_policy
    device_plugin: dict[str, Any] = {
        "deviceSplitCount": max(p.sharing.replicas or 1 for p in pools),
        # Written out whole: Helm would merge the chart's default `gpu: "on"` into any selector.
        "nvidiaNodeSelector": {HAMI_NODE_LABEL: HAMI_NODE_LABEL_VALUE, SHARING_LABEL: SharingMode.FRACTIONAL.value},
        "tolerations": gpu_node_tolerations(model, pools),
    }
    if model.target.provider is Provider.KUBERNETES:
        # The operator installs the toolkit here: wait for it, and run pods with its runtime.
        device_plugin["gpuOperatorToolkitReady"] = {"enabled": True}
        device_plugin["runtimeClassName"] = _hami_runtime_class(model)
    return {
        "resourceName": HAMI_GPU_RESOURCE,
        "resourceMem": HAMI_MEMORY_RESOURCE,
        "resourceCores": HAMI_CORES_RESOURCE,
        "device-config": {"content": hami_device_config(model, pools)},
        "scheduler": {
            # The spec's policy both picks the node (least / most used first) and the GPU on it.
            "defaultSchedulerPolicy": {"nodeSchedulerPolicy": policy, "gpuSchedulerPolicy": policy},
            "kubeScheduler": {"image": dict(_KUBE_SCHEDULER_IMAGE)},
        },
        "devicePlugin": device_plugin,
    }


class GpuSharing(pulumi.ComponentResource):
    mig_strategy: str
    gpu_operator: k8s.helm.v3.Release
    hami: k8s.helm.v3.Release | None

    def __init__(self, name: str, args: GpuSharingArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:GpuSharing", name, None, opts)
        model = args.model
        self.mig_strategy = MIG_STRATEGY
        self.gpu_operator = helm_release(
            self,
            name,
            "gpu-operator",
            gpu_operator_values(model),
            provider=args.provider,
            pod_security="privileged",  # driver, toolkit, MIG manager and exporters use the host
            depends_on=args.depends_on,
        )
        k8s.core.v1.ConfigMap(
            f"{name}-dcgm-metrics",
            metadata=meta(DCGM_METRICS_CONFIGMAP, CHARTS["gpu-operator"].namespace),
            data={METRICS_CONFIG_KEY: metrics_csv()},
            opts=child_opts(self, args.provider, [self.gpu_operator]),  # the release makes the namespace
        )
        if model.rdma_fabric:
            k8s.apiextensions.CustomResource(
                f"{name}-fabric-driver",
                api_version=NVIDIA_DRIVER_API,
                kind="NVIDIADriver",
                metadata=meta(FABRIC_DRIVER),
                spec=fabric_driver_spec(model),
                opts=child_opts(self, args.provider, [self.gpu_operator]),  # the chart brings the CRD
            )
        values = hami_values(model)
        self.hami = (
            helm_release(
                self,
                name,
                "hami",
                values,
                provider=args.provider,
                pod_security="privileged",
                depends_on=args.depends_on,
            )
            if values is not None
            else None
        )
        self.register_outputs({"migStrategy": self.mig_strategy})
