# pyright: strict
"""GPU sharing modes: capacity overheads and the Kubernetes resources they advertise.

Sources:

- Resource names: NVIDIA/k8s-device-plugin at 1b826acc (= v0.20.0, 2026-08-19):
  time-slicing and MPS replicate ``nvidia.com/gpu``, advertised as ``nvidia.com/gpu.shared``
  with ``renameByDefault`` (``api/config/v1``); with
  ``migStrategy: mixed`` each MIG profile becomes ``nvidia.com/mig-<profile>`` with '+'
  replaced by '.' (``internal/rm/rm.go``).
- HAMi resource names: the ``resourceName`` / ``resourceMem`` / ``resourceCores`` defaults
  of the hami chart 2.10.0 (Project-HAMi/HAMi tag v2.10.0, 4707fb02).
- Replica bounds: the device plugin rejects ``replicas`` < 2; 48 is
  the number of client CUDA contexts per GPU the NVIDIA MPS documentation gives for Volta
  and later, and the platform applies the same bound to time-slicing and HAMi.
- Overheads are planning assumptions of this platform (MIG < 2 %, MPS 5-8 %,
  time-slicing 15-20 % of a GPU's capacity), taken at the middle of each range. A spec overrides
  them per pool (``sharing.overhead``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from gpuplat.vocabulary import SharingMode

SHARING_MODES: tuple[str, ...] = tuple(m.value for m in SharingMode)

# Fraction of a GPU's throughput lost to sharing it.
SHARING_OVERHEAD: Mapping[str, float] = MappingProxyType(
    {
        "exclusive": 0.0,
        # Hardware partitions; what is lost is mostly SMs no profile combination can use.
        "mig": 0.015,
        # One shared CUDA context, so little switching, but clients contend for bandwidth.
        "mps": 0.065,
        # Context switches between processes, each with its full context and memory.
        "time-slicing": 0.175,
        # HAMi enforces core and memory limits by intercepting CUDA calls; no published
        # measurement to lean on, so an assumption between MPS and time-slicing.
        "fractional": 0.10,
    }
)

GPU_RESOURCE = "nvidia.com/gpu"
HAMI_MEMORY_RESOURCE = "nvidia.com/gpumem"  # MiB per vGPU; in HAMi's config, not for jobs to request
HAMI_CORES_RESOURCE = "nvidia.com/gpucores"  # percent of the GPU's SMs
# Time-sliced and MPS GPUs. The device plugin advertises replicated GPUs under their own name
# (`renameByDefault: true` in its sharing config appends ".shared"), so a job asking for whole
# GPUs (nvidia.com/gpu) is never placed on a replica, and quotas never count replicas as GPUs.
REPLICATED_GPU_RESOURCE = "nvidia.com/gpu.shared"
# HAMi's vGPU count on fractional pools. Not nvidia.com/gpu: HAMi's webhook sends every pod that
# asks for its resource to hami-scheduler, which only places pods on HAMi nodes, so sharing the
# name would strand whole-GPU pods; not REPLICATED_GPU_RESOURCE either, which time-sliced and MPS
# nodes advertise. The nvidia.com/gpu prefix keeps the GPU Operator's validator, which looks for
# resources with that prefix, satisfied.
HAMI_GPU_RESOURCE = "nvidia.com/gpu.fractional"

# The schedulable unit of each mode. MIG is absent on purpose: under the mixed strategy
# the resource depends on the profile, so use mig_resource_name().
SHARING_RESOURCE: Mapping[str, str] = MappingProxyType(
    {
        "exclusive": GPU_RESOURCE,
        "mps": REPLICATED_GPU_RESOURCE,
        "time-slicing": REPLICATED_GPU_RESOURCE,
        # HAMi's vGPU count, the only resource a fractional job asks for (memory and cores
        # come from HAMi's defaults: Karpenter would never initialize a node for the others).
        "fractional": HAMI_GPU_RESOURCE,
    }
)

# Mixed, because one cluster (and with custom layouts one GPU) carries several profiles,
# and the single strategy can only expose one profile per node, as nvidia.com/gpu.
MIG_STRATEGY = "mixed"

REPLICAS_MIN = 2
REPLICAS_MAX = 48


def mig_resource_name(profile: str) -> str:
    """The resource a MIG profile is advertised as under the mixed strategy."""
    # Resource names may not contain '+', so the device plugin turns 1g.10gb+me into
    # nvidia.com/mig-1g.10gb.me.
    return "nvidia.com/mig-" + profile.replace("+", ".")
