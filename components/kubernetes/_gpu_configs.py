"""The two config files the GPU Operator reads: device-plugin configs and the mig-parted config.

Formats: the k8s-device-plugin config (`version: v1`, per-node selection by the
`nvidia.com/device-plugin.config` label) and the mig-parted config (`version: v1`, selected by
`nvidia.com/mig.config`). Both are rendered as YAML text, the form the operator mounts.
"""

from __future__ import annotations

from typing import Any

import yaml

from components.conventions import device_plugin_config_name, mig_config_name
from gpuplat.catalog import GPU_RESOURCE, MIG_STRATEGY, GpuModel, gpu_model
from gpuplat.model import Platform, SharingMode

DEVICE_PLUGIN_CONFIGMAP = "gpuplat-device-plugin-config"
MIG_PARTED_CONFIGMAP = "gpuplat-mig-parted-config"
# Nodes without a device-plugin.config label (exclusive and MIG pools) get this entry.
DEFAULT_DEVICE_PLUGIN_CONFIG = "default"
# What the GPU Operator applies to a node without an nvidia.com/mig.config label.
DEFAULT_MIG_CONFIG = "all-disabled"
# MPS pools' device plugin: MPS shares whole GPUs and the plugin refuses it under `mixed`.
MIG_STRATEGY_MPS = "none"


def _dump(document: dict[str, Any]) -> str:
    return yaml.safe_dump(document, sort_keys=False, default_flow_style=False)


def device_plugin_configs(model: Platform) -> dict[str, str]:
    """ConfigMap data: the `default` entry plus one entry per time-slicing / MPS pool.

    Each entry's `flags.migStrategy` is the strategy of the nodes it configures (the
    ClusterPolicy sets none, see gpu_sharing.gpu_operator_values): MIG_STRATEGY everywhere but
    on MPS pools, where the device plugin refuses it ("using --mig-strategy=mixed is not
    supported with MPS", k8s-device-plugin `validateFlags`) and MPS shares whole GPUs anyway.
    """
    flags = {"migStrategy": MIG_STRATEGY}
    data = {DEFAULT_DEVICE_PLUGIN_CONFIG: _dump({"version": "v1", "flags": flags})}
    for pool in model.pools:
        key = device_plugin_config_name(pool)
        if key is None:
            continue
        if key == DEFAULT_DEVICE_PLUGIN_CONFIG:
            raise ValueError(f"pool {pool.name}: the name is reserved for the device plugin's default config")
        # Time-slicing and MPS are mutually exclusive per config (FORMATS a): one or the other.
        strategy = "mps" if pool.sharing.mode is SharingMode.MPS else "timeSlicing"
        resources = [{"name": GPU_RESOURCE, "replicas": pool.sharing.replicas}]
        # renameByDefault: the replicas are advertised as nvidia.com/gpu.shared, so whole-GPU
        # jobs, quotas and Karpenter never mistake a replica for a GPU.
        sharing = {strategy: {"renameByDefault": True, "resources": resources}}
        pool_flags = {"migStrategy": MIG_STRATEGY_MPS} if pool.sharing.mode is SharingMode.MPS else flags
        data[key] = _dump({"version": "v1", "flags": pool_flags, "sharing": sharing})
    return data


def _mig_entry(gpu: GpuModel, devices: dict[str, int]) -> dict[str, Any]:
    # device-filter keeps a layout off a GPU it was not validated for; counts differ per GPU.
    return {
        "device-filter": list(gpu.pci_device_ids),
        "devices": "all",
        "mig-enabled": True,
        "mig-devices": dict(devices),
    }


def mig_parted_config(model: Platform) -> dict[str, Any] | None:
    """The mig-parted config, or None when no pool has a custom layout.

    Without a custom layout the GPU Operator's MIG manager derives its configs from the
    hardware, named profiles included, and needs nothing from us. With one, our ConfigMap
    replaces that set entirely, so it also carries every named profile a pool uses (per GPU
    model, with the catalog's counts) and the operator's default, all-disabled.
    """
    mig_pools = [p for p in model.pools if p.sharing.mode is SharingMode.MIG]
    if not any(p.sharing.layout is not None for p in mig_pools):
        return None
    configs: dict[str, list[dict[str, Any]]] = {
        DEFAULT_MIG_CONFIG: [{"devices": "all", "mig-enabled": False}],
    }
    for pool in mig_pools:
        name = mig_config_name(pool)
        gpu = gpu_model(pool.gpu_model)
        if name is None or gpu is None:
            continue
        if pool.sharing.layout is not None:
            configs[name] = [_mig_entry(gpu, dict(pool.sharing.layout))]
            continue
        if name == DEFAULT_MIG_CONFIG:
            continue
        layout = gpu.named_mig_configs()[name]
        entries = configs.setdefault(name, [])
        if any(e.get("device-filter") == list(gpu.pci_device_ids) for e in entries):
            continue  # another pool with the same GPU already added it
        # all-enabled has an empty layout: MIG mode on, no instances.
        entries.append(_mig_entry(gpu, layout))
    return {"version": "v1", "mig-configs": configs}


def mig_parted_data(model: Platform) -> dict[str, str] | None:
    config = mig_parted_config(model)
    return None if config is None else {"config.yaml": _dump(config)}
