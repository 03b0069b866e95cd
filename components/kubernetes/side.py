"""The Kubernetes side in one call: what GpuPlatform's hook constructs, in dependency order.

Observability first (its release brings the monitoring CRDs Autoscaling's objects need), then
the GPU stack, the admission policy of tenants that may use a fabric pool (TenantPodSecurity,
before their namespaces relax Pod Security), the tenants (their namespaces hold queues and
claims) and the policy keeping each to its own PriorityClasses (TenantPriorityScope),
Scheduling (Kueue, whose CRDs FabricTopology's Topology needs), storage and autoscaling;
PoolLabels only on provider kubernetes, where no Karpenter labels the nodes; last the
dashboards and the usage rules they read, the GPU health alerts (GpuHealth) and the fence on its
critical alerts and, on aws, on the node monitoring agent's GPU condition (GpuFence). Names are `<name>-<part>` and
`<name>-tenant-<tenant>`, so adding a tenant adds a component and renames nothing.

The platform's system namespace is Autoscaling's (its capacity floor runs there on both
providers); PoolLabels runs there too. It used to be PoolLabels' own child, hence the alias.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi

from gpuplat.model import Platform, Provider
from gpuplat.plan import Plan

from .autoscaling import Autoscaling, AutoscalingArgs
from .dashboards import Dashboards, DashboardsArgs
from .fabric_topology import FabricTopology, FabricTopologyArgs
from .fleet_manager import FleetManager, FleetManagerArgs
from .fleet_worker import FleetWorker, FleetWorkerArgs
from .gpu_fence import GpuFence, GpuFenceArgs
from .gpu_health import FENCING_ALERTS, GpuHealth, GpuHealthArgs
from .gpu_sharing import GpuSharing, GpuSharingArgs
from .observability import PROMETHEUS_URL, Observability, ObservabilityArgs
from .pod_security import TenantPodSecurity, TenantPodSecurityArgs, needs_ipc_lock
from .pool_labels import PoolLabels, PoolLabelsArgs
from .priority_scope import TenantPriorityScope, TenantPriorityScopeArgs
from .scheduling import Scheduling, SchedulingArgs
from .storage_classes import AwsStorageRefs, StorageClasses, StorageClassesArgs
from .tenant import Tenant, TenantArgs


@dataclass(frozen=True)
class KubernetesSide:
    observability: Observability
    gpu_sharing: GpuSharing
    tenants: dict[str, Tenant]
    pod_security: TenantPodSecurity | None
    scheduling: Scheduling
    fabric_topology: FabricTopology
    storage_classes: StorageClasses
    autoscaling: Autoscaling
    pool_labels: PoolLabels | None
    priority_scope: TenantPriorityScope
    dashboards: Dashboards
    gpu_health: GpuHealth
    gpu_fence: GpuFence | None = None
    fleet_manager: FleetManager | None = None
    fleet_worker: FleetWorker | None = None


def build_kubernetes_side(
    parent: pulumi.Resource | None,
    name: str,
    model: Platform,
    plan: Plan,
    provider: pulumi.ProviderResource,
    *,
    storage: AwsStorageRefs | None = None,
    depends_on: Sequence[pulumi.Resource] = (),
    api_server: pulumi.Input[str] | None = None,
) -> KubernetesSide:
    """Build every Kubernetes-side component under `parent`.

    `storage`: the AWS storage tiers' references (aws; None on provider kubernetes).
    `depends_on`: what must exist before anything is installed (aws: the cluster's system nodes
    and add-ons).
    `api_server`: the cluster's API server URL (aws: the EKS endpoint), for a fleet worker's
    credentials when its fleet entry names no `server`.
    """
    opts = pulumi.ResourceOptions(parent=parent)
    ready = list(depends_on)
    observability = Observability(f"{name}-observability", ObservabilityArgs(model, provider, ready), opts)
    gpu_sharing = GpuSharing(f"{name}-gpu-sharing", GpuSharingArgs(model, provider, ready), opts)
    pod_security, tenants = _tenants(name, model, plan, provider, ready, opts)
    scope_args = TenantPriorityScopeArgs(model, provider, ready)
    priority_scope = TenantPriorityScope(f"{name}-priority-scope", scope_args, opts)
    namespaces: dict[str, pulumi.Resource] = {t: c.namespace for t, c in tenants.items()}
    manager = fleet_role(model) == "manager"
    scheduling_args = SchedulingArgs(model, plan, provider, namespaces, ready, manager, observability.release)
    scheduling = Scheduling(f"{name}-scheduling", scheduling_args, opts)
    fabric_args = FabricTopologyArgs(
        model, provider, scheduling.kueue, ready, gpu_operator=gpu_sharing.gpu_operator, namespaces=namespaces
    )
    fabric_topology = FabricTopology(f"{name}-fabric-topology", fabric_args, opts)
    storage_classes = StorageClasses(
        f"{name}-storage-classes", StorageClassesArgs(model, plan, provider, storage, namespaces, ready), opts
    )
    # Where the system namespace was before Autoscaling owned it: keep it, do not recreate it.
    old_namespace = pulumi.Alias(
        name=f"{name}-pool-labels-ns",
        parent=pulumi.create_urn(f"{name}-pool-labels", "gpuplat:index:PoolLabels", parent=parent),
    )
    autoscaling = Autoscaling(
        f"{name}-autoscaling",
        AutoscalingArgs(model, plan, provider, observability.release, ready, namespace_aliases=[old_namespace]),
        opts,
    )
    pool_labels, gpu_fence = _node_agents(name, model, provider, autoscaling, ready, opts)
    monitoring = observability.release
    dashboards = Dashboards(f"{name}-dashboards", DashboardsArgs(model, plan, provider, monitoring, ready), opts)
    gpu_health = GpuHealth(f"{name}-gpu-health", GpuHealthArgs(model, provider, monitoring, ready), opts)
    manager, worker = _fleet(name, model, plan, provider, scheduling, namespaces, ready, api_server, opts)
    return KubernetesSide(
        observability, gpu_sharing, tenants, pod_security, scheduling, fabric_topology, storage_classes,
        autoscaling, pool_labels, priority_scope, dashboards, gpu_health, gpu_fence, manager, worker,
    )  # fmt: skip


def fleet_role(model: Platform) -> str | None:
    """'manager' or 'worker' when the spec has a fleet, by this stack's name; None without one."""
    if model.fleet is None:
        return None
    found = model.fleet.role_of(pulumi.get_stack(), pulumi.get_project())
    if found is None:
        stacks = ", ".join(m.stack for m in model.fleet.members)
        raise pulumi.RunError(
            f"stack {pulumi.get_stack()} is not a member of fleet {model.fleet.name} (member stacks: {stacks}); "
            "deploy this spec as one of them"
        )
    return found[0]


def _fleet(
    name: str,
    model: Platform,
    plan: Plan,
    provider: pulumi.ProviderResource,
    scheduling: Scheduling,
    namespaces: dict[str, pulumi.Resource],
    ready: list[pulumi.Resource],
    api_server: pulumi.Input[str] | None,
    opts: pulumi.ResourceOptions,
) -> tuple[FleetManager | None, FleetWorker | None]:
    """The fleet's part on this stack: the manager's queue and MultiKueue objects, or a worker's
    queues and credentials (docs/fleet.md)."""
    if model.fleet is None or plan.cluster_fleet is None:
        return None, None
    found = model.fleet.role_of(pulumi.get_stack(), pulumi.get_project())
    assert found is not None, "fleet_role refused a stack that is no member"
    role, member = found
    if role == "manager":
        args = FleetManagerArgs(model, plan.cluster_fleet, provider, scheduling.kueue, namespaces)
        return FleetManager(f"{name}-fleet", args, opts), None
    server = member.server or api_server
    if server is None:
        raise pulumi.RunError(f"fleet member {member.name} needs `server`: the URL the manager reaches its API at")
    args = FleetWorkerArgs(model, member.name, provider, server, scheduling.kueue, namespaces, ready)
    return None, FleetWorker(f"{name}-fleet", args, opts)


def _tenants(
    name: str,
    model: Platform,
    plan: Plan,
    provider: pulumi.ProviderResource,
    ready: list[pulumi.Resource],
    opts: pulumi.ResourceOptions,
) -> tuple[TenantPodSecurity | None, dict[str, Tenant]]:
    """The tenants, the fabric ones after the admission policy that lets them relax Pod Security."""
    fabric_tenants = {t.name for t in model.tenants if needs_ipc_lock(model, t)}
    pod_security = (
        TenantPodSecurity(f"{name}-pod-security", TenantPodSecurityArgs(model, provider, ready), opts)
        if fabric_tenants
        else None
    )
    relaxed = [*ready, *(pod_security.ready if pod_security is not None else [])]
    tenants = {
        t.name: Tenant(
            f"{name}-tenant-{t.name}",
            TenantArgs(model, plan, provider, t, relaxed if t.name in fabric_tenants else ready),
            opts,
        )
        for t in model.tenants
    }
    return pod_security, tenants


def _node_agents(
    name: str, model: Platform, provider: pulumi.ProviderResource, autoscaling: Autoscaling,
    ready: Sequence[pulumi.Resource], opts: pulumi.ResourceOptions,
) -> tuple[PoolLabels | None, GpuFence | None]:
    """What acts on nodes, in the system namespace: on provider kubernetes the pool labelers (no
    Karpenter labels the nodes); on both the GPU fence, on the GpuHealth alerts that say a GPU
    cannot be trusted and, on aws, on the EKS node monitoring agent's GPU condition."""
    alerts = {"alerts": FENCING_ALERTS, "prometheus_url": PROMETHEUS_URL}
    if model.target.provider is Provider.KUBERNETES:
        labels = PoolLabels(f"{name}-pool-labels", PoolLabelsArgs(model, provider, autoscaling.namespace), opts)
        fence_args = GpuFenceArgs(model, provider, autoscaling.namespace, conditions=(), depends_on=ready, **alerts)
        return labels, GpuFence(f"{name}-gpu-fence", fence_args, opts)
    fence_args = GpuFenceArgs(model, provider, autoscaling.namespace, depends_on=ready, **alerts)
    return None, GpuFence(f"{name}-gpu-fence", fence_args, opts)
