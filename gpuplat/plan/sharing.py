"""Sharing capacity: the schedulable units a node of each pool offers, and its GPU-equivalents.

- exclusive: `nvidia.com/gpu` x1 per GPU.
- mig: the per-GPU devices of the named config (`gpu.named_mig_configs()[profile]`) or of
  the custom layout, each advertised as `nvidia.com/mig-<profile>` (mixed strategy). A node
  offers per resource `count x gpus_per_node`; `resource` is the profile with the most units
  (ties: the larger profile, then the name), `resources` lists them all. `all-disabled`
  leaves whole GPUs (`nvidia.com/gpu` x1); `all-enabled` has no devices, so no units.
- mps / time-slicing: `nvidia.com/gpu.shared` x replicas per GPU (device-plugin replicas,
  renamed so a replica is never taken for a whole GPU).
- fractional: HAMi's vGPU count `nvidia.com/gpu.fractional` x replicas (tasks) per GPU.

GPU-equivalents per node = gpus_per_node x used x (1 - overhead), the overhead being the
catalog assumption or the pool's `sharing.overhead` (already resolved in the model), and
`used` the share of the GPU's compute the units can reach: 1, except for MIG, where it is the
compute slices the layout's instances hold out of the 7 (all-4g.40gb uses 4/7 of an H100:
the other three slices idle, so the node is worth 8 x 4/7 x 0.985 = 4.50 GPUs).
"""

from __future__ import annotations

from gpuplat.catalog.gpus import MIG_COMPUTE_SLICES
from gpuplat.catalog.sharing import GPU_RESOURCE, SHARING_RESOURCE, mig_resource_name
from gpuplat.model import GpuNodePool, SharingMode, gpu_of
from gpuplat.plan.types import SharingUnits


def mig_devices(pool: GpuNodePool) -> dict[str, int]:
    """MIG instances per GPU by profile name (empty when MIG is on without instances)."""
    if pool.sharing.layout is not None:
        return {name: n for name, n in pool.sharing.layout.items() if n > 0}
    profile = pool.sharing.profile or ""
    return dict(gpu_of(pool).named_mig_configs().get(profile, {}))


def sharing_units(pool: GpuNodePool) -> SharingUnits:
    sharing, gpus = pool.sharing, pool.gpus_per_node
    overhead = sharing.overhead
    equivalents = gpus * (1 - overhead)
    if sharing.mode is SharingMode.MIG:
        devices = mig_devices(pool)
        if not devices and sharing.profile == "all-disabled":
            return SharingUnits(GPU_RESOURCE, 1, gpus, overhead, equivalents, {}, {GPU_RESOURCE: gpus})
        gpu = gpu_of(pool)

        def rank(item: tuple[str, int]) -> tuple[int, int, str]:
            profile = gpu.mig_profile(item[0])
            return (-item[1], -(profile.compute_slices if profile else 0), item[0])

        ordered = sorted(devices.items(), key=rank)
        resources = {mig_resource_name(name): n * gpus for name, n in ordered}
        per_gpu = sum(devices.values())
        major = next(iter(resources), "")
        slices = sum(n * (p.compute_slices if (p := gpu.mig_profile(name)) else 0) for name, n in devices.items())
        used = min(slices, MIG_COMPUTE_SLICES) / MIG_COMPUTE_SLICES
        return SharingUnits(major, per_gpu, per_gpu * gpus, overhead, equivalents * used, devices, resources)
    per_gpu = 1 if sharing.mode is SharingMode.EXCLUSIVE else sharing.replicas or 1
    resource = SHARING_RESOURCE[sharing.mode.value]
    return SharingUnits(resource, per_gpu, per_gpu * gpus, overhead, equivalents, None, {resource: per_gpu * gpus})
