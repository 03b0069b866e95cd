# pyright: strict
"""Versioned facts the compiler plans with: GPUs and MIG, instance types, prices, sharing
modes, Helm charts. Pure data and small pure functions; no Pulumi, no YAML.

Each module names its sources (upstream file, commit or tag, date) in its docstring.
"""

from . import fsx
from .charts import CHARTS, KUBERNETES_NAMESPACES, MOUNTPOINT_NAMESPACE, Chart, platform_namespaces
from .gpus import (
    GPUS,
    MIG_COMPUTE_SLICES,
    MIG_MEMORY_SLICES,
    GpuModel,
    MigProfile,
    gpu_model,
    mig_layout_problems,
    mig_placement,
)
from .instances import INSTANCE_TYPES, InstanceType, instance_type
from .labels import reserved_label
from .prices import (
    ESTIMATED_PRICES,
    HOURS_PER_MONTH,
    ON_DEMAND_HOURLY_USD,
    PRICES_AS_OF,
    PRICES_SOURCE,
    RESERVED_ASSUMPTION,
    RESERVED_ASSUMPTION_SOURCE,
    RESERVED_DISCOUNT,
    SPOT_DISCOUNT,
)
from .sharing import (
    GPU_RESOURCE,
    HAMI_CORES_RESOURCE,
    HAMI_GPU_RESOURCE,
    HAMI_MEMORY_RESOURCE,
    MIG_STRATEGY,
    REPLICAS_MAX,
    REPLICAS_MIN,
    REPLICATED_GPU_RESOURCE,
    SHARING_MODES,
    SHARING_OVERHEAD,
    SHARING_RESOURCE,
    mig_resource_name,
)

__all__ = [
    "CHARTS",
    "ESTIMATED_PRICES",
    "GPUS",
    "GPU_RESOURCE",
    "HAMI_CORES_RESOURCE",
    "HAMI_GPU_RESOURCE",
    "HAMI_MEMORY_RESOURCE",
    "HOURS_PER_MONTH",
    "INSTANCE_TYPES",
    "KUBERNETES_NAMESPACES",
    "MIG_COMPUTE_SLICES",
    "MIG_MEMORY_SLICES",
    "MIG_STRATEGY",
    "MOUNTPOINT_NAMESPACE",
    "ON_DEMAND_HOURLY_USD",
    "PRICES_AS_OF",
    "PRICES_SOURCE",
    "REPLICAS_MAX",
    "REPLICAS_MIN",
    "REPLICATED_GPU_RESOURCE",
    "RESERVED_ASSUMPTION",
    "RESERVED_ASSUMPTION_SOURCE",
    "RESERVED_DISCOUNT",
    "SHARING_MODES",
    "SHARING_OVERHEAD",
    "SHARING_RESOURCE",
    "SPOT_DISCOUNT",
    "Chart",
    "GpuModel",
    "InstanceType",
    "MigProfile",
    "fsx",
    "gpu_model",
    "instance_type",
    "mig_layout_problems",
    "mig_placement",
    "mig_resource_name",
    "platform_namespaces",
    "reserved_label",
]
