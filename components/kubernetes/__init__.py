"""Kubernetes components, both providers (the Kubernetes column of the README's "What gets provisioned").

The root (components/platform.py, through side.py) constructs each with `(name, XArgs(...), opts)`;
every Args carries the model, the Kubernetes provider, which every child uses, and `depends_on`;
the plan only where the component reads it (components/conventions.py: how components are wired).
"""

from .autoscaling import Autoscaling, AutoscalingArgs
from .fabric_topology import FabricTopology, FabricTopologyArgs
from .gpu_sharing import GpuSharing, GpuSharingArgs
from .observability import Observability, ObservabilityArgs
from .pod_security import TenantPodSecurity, TenantPodSecurityArgs
from .pool_labels import PoolLabels, PoolLabelsArgs
from .scheduling import Scheduling, SchedulingArgs
from .side import KubernetesSide, build_kubernetes_side
from .storage_classes import AwsStorageRefs, StorageClasses, StorageClassesArgs
from .tenant import Tenant, TenantArgs

__all__ = [
    "Autoscaling",
    "AutoscalingArgs",
    "AwsStorageRefs",
    "FabricTopology",
    "FabricTopologyArgs",
    "GpuSharing",
    "GpuSharingArgs",
    "KubernetesSide",
    "Observability",
    "ObservabilityArgs",
    "PoolLabels",
    "PoolLabelsArgs",
    "Scheduling",
    "SchedulingArgs",
    "StorageClasses",
    "StorageClassesArgs",
    "Tenant",
    "TenantArgs",
    "TenantPodSecurity",
    "TenantPodSecurityArgs",
    "build_kubernetes_side",
]
