"""Scheduling: Kueue, its flavors, one ClusterQueue per tenant in one cohort, LocalQueues.

- Kueue (Helm, pinned). Its manager Configuration is one string in the chart values, so the
  chart's default is repeated here whole (tests compare it with the chart) plus these changes:
  - `resources.quotaCheckStrategy: IgnoreUndeclared`. Quotas are in GPUs; with the default
    (BlockUndeclared) every workload asking for CPU, memory, EFA or RDMA devices would be
    inadmissible unless every queue also declared quotas for those, which the platform has no
    basis to size. Nodes bound those resources anyway.
  - `metrics.enableClusterQueueResources: true`: without it Kueue exports no ClusterQueue
    quota, usage or pending-resource series, which the tenant dashboards' borrowing and
    waiting panels read (docs/dashboards.md). The chart's `enablePrometheus` has them scraped.
  - `manageJobsWithoutQueueName: true` with `managedJobsNamespaceSelector` on the label every
    tenant Namespace carries (Tenant). In a tenant namespace a job or pod that reaches Kueue
    without a queue name (none given, and no LocalQueue `default` to file it under, e.g.
    before that queue exists or after it was deleted) is held suspended instead of running
    outside every quota, pool allow-list and isolation. No other namespace is selected, so
    the platform's and the system's own pods, deployments and jobs are never gated (for the
    pod-based integrations Kueue ignores them even when they name a queue).
  - `kubeflow.org/pytorchjob` added to the frameworks: with pod integration on and PyTorchJob
    not among them, each of a PyTorchJob's pods would be admitted alone (no gang admission,
    partial starts holding GPUs). Kueue defers the integration until the CRD exists
    (jobframework/setup.go), so a cluster without the training operator is unaffected.
  - `waitForPodsReady` (timeout WAIT_FOR_PODS_READY): an admitted workload whose pods are not
    all ready in time (its market has no capacity for Karpenter: a spot shortage, a full
    reservation) is evicted, its quota released, and requeued with exponential backoff (60 s
    doubling to 1 h; after `scheduling.requeueLimit` requeues, if set, deactivated instead:
    backoffLimitCount, which counts every such eviction of the workload's life). Kueue 0.19.2
    starts the requeued workload's flavor search from the first flavor again (scheduler.go
    clears LastAssignment), so it moves to the next market only when the first no longer has
    quota for it; until then it retries the same market after each backoff, without holding
    quota in between. `blockAdmission` stays false: blocking would serialize every admission
    behind the slowest node launch.
    The timeout covers a GPU node's launch, driver and device-plugin start and image pull.
    `recoveryTimeout` (RECOVERY_TIMEOUT) covers a workload that was running: when a pod is lost
    with its node (a failed GPU node, fenced or replaced) and its replacement is not ready
    within it, the whole workload is evicted and requeued the same way, so a multi-node job
    does not hold its quota waiting on one rank (docs/health.md).
- ResourceFlavors, quotas and groups: see _quota.py. Spot flavors declare the spot node taint
  and carry its toleration, so every tenant whose ClusterQueue lists them runs there with a
  default job (no toleration of its own); fabric pools' flavors
  name the fabric Topology (FabricTopology) when `scheduling.topologyAware`.
- ClusterQueues (v1beta2: `cohortName`) admit only their tenant's namespace; a tenant can
  reclaim lent quota by preempting borrowers, and preempts its own lower-priority work.
- LocalQueue `default` in each tenant namespace: Kueue files every job of the namespace
  without a queue-name label into the queue named `default`, so no job bypasses the quota.
- `queueing: none`: nothing is installed.
- The manager of a fleet (components/kubernetes/fleet_manager.py) runs MultiKueue's incremental
  dispatcher one worker at a time (`stepSize: 1`): Kueue 0.19 nominates workers in the
  MultiKueueConfig's order, so each job goes to the first worker that admits it (docs/fleet.md).
  Its Kueue enables only BUILT_IN_FRAMEWORKS: MultiKueue watches the kind of every enabled framework
  with a MultiKueue adapter on each worker, and a worker that does not serve one of them (the
  platform installs no JobSet, Kubeflow, Ray, AppWrapper or LeaderWorkerSet operator) never
  connects ("no matches for kind", the e2e fleet target's finding).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from gpuplat.model import Platform, Tenant
from gpuplat.plan import Plan

from .._common import child_opts
from ._common import TENANT_LABEL, helm_release, meta, prefix
from ._quota import flavor_spec, resource_groups, tenant_flavors
from .observability import MONITORING_NAMESPACE

KUEUE_API = "kueue.x-k8s.io/v1beta2"  # served by chart 0.19.2 (v1beta1 still served, deprecated)
LOCAL_QUEUE = "default"
WAIT_FOR_PODS_READY = "30m"
RECOVERY_TIMEOUT = "10m"
PYTORCH_JOB = "kubeflow.org/pytorchjob"
INCREMENTAL_DISPATCHER = "kueue.x-k8s.io/multikueue-dispatcher-incremental"
# The frameworks of kinds every Kubernetes API server serves: all a fleet manager's Kueue enables.
BUILT_IN_FRAMEWORKS = ("batch/job", "pod", "deployment", "statefulset")
# Those with a MultiKueue adapter, and the (API group, resource) it watches and creates on every
# worker (Deployments have none).
FLEET_FRAMEWORKS: dict[str, tuple[str, str]] = {
    "batch/job": ("batch", "jobs"),
    "pod": ("", "pods"),
    "statefulset": ("apps", "statefulsets"),
}

# The chart's managerConfig.controllerManagerConfigYaml at 0.19.2, comments dropped.
_KUEUE_DEFAULT_CONFIG: dict[str, Any] = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
    "kind": "Configuration",
    "health": {"healthProbeBindAddress": ":8081"},
    "metrics": {"bindAddress": ":8443"},
    "webhook": {"port": 9443},
    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
    "controller": {
        "groupKindConcurrency": {
            "Job.batch": 5,
            "Pod": 5,
            "Workload.kueue.x-k8s.io": 10,
            "LocalQueue.kueue.x-k8s.io": 5,
            "ClusterQueue.kueue.x-k8s.io": 5,
            "ResourceFlavor.kueue.x-k8s.io": 1,
        }
    },
    "clientConnection": {"qps": 300, "burst": 500},
    "integrations": {
        "frameworks": [
            "batch/job",
            "kubeflow.org/mpijob",
            "ray.io/rayjob",
            "ray.io/rayservice",
            "ray.io/raycluster",
            "jobset.x-k8s.io/jobset",
            "workload.codeflare.dev/appwrapper",
            "trainer.kubeflow.org/trainjob",
            "pod",
            "deployment",
            "statefulset",
            "leaderworkerset.x-k8s.io/leaderworkerset",
        ]
    },
}


@dataclass(frozen=True)
class SchedulingArgs:
    model: Platform
    plan: Plan
    provider: pulumi.ProviderResource
    # LocalQueues live in tenant namespaces: the Tenant components (or their namespaces), by tenant.
    tenants: Mapping[str, pulumi.Resource] = field(default_factory=lambda: {})
    depends_on: Sequence[pulumi.Resource] = field(default_factory=lambda: ())
    fleet_manager: bool = False  # this cluster dispatches a fleet's work (MultiKueue manager)
    # The release that installs the monitoring.coreos.com CRDs (Observability.release): the Kueue
    # chart's ServiceMonitor needs them to install at all.
    monitoring: pulumi.Resource | None = None


def kueue_config(*, fleet_manager: bool = False, requeue_limit: int | None = None) -> dict[str, Any]:
    """The manager Configuration; `requeue_limit` is `scheduling.requeueLimit` (None: no limit)."""
    config = dict(_KUEUE_DEFAULT_CONFIG)
    frameworks = list(_KUEUE_DEFAULT_CONFIG["integrations"]["frameworks"])
    frameworks.insert(frameworks.index("kubeflow.org/mpijob") + 1, PYTORCH_JOB)
    config["integrations"] = {**_KUEUE_DEFAULT_CONFIG["integrations"], "frameworks": frameworks}
    config["resources"] = {"quotaCheckStrategy": "IgnoreUndeclared"}
    config["metrics"] = {**_KUEUE_DEFAULT_CONFIG["metrics"], "enableClusterQueueResources": True}
    config["waitForPodsReady"] = {
        "timeout": WAIT_FOR_PODS_READY,
        "recoveryTimeout": RECOVERY_TIMEOUT,
        "blockAdmission": False,
        "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 60, "backoffMaxSeconds": 3600},
    }
    if requeue_limit is not None:
        config["waitForPodsReady"]["requeuingStrategy"]["backoffLimitCount"] = requeue_limit
    config["manageJobsWithoutQueueName"] = True
    config["managedJobsNamespaceSelector"] = {"matchExpressions": [{"key": TENANT_LABEL, "operator": "Exists"}]}
    if fleet_manager:
        config["integrations"] = {"frameworks": [f for f in frameworks if f in BUILT_IN_FRAMEWORKS]}
        config["multiKueue"] = {
            "dispatcherName": INCREMENTAL_DISPATCHER,
            "incrementalDispatcherConfig": {"stepSize": 1},
        }
    return config


def kueue_values(*, fleet_manager: bool = False, requeue_limit: int | None = None) -> dict[str, Any]:
    text = yaml.safe_dump(kueue_config(fleet_manager=fleet_manager, requeue_limit=requeue_limit), sort_keys=False)
    return {
        "managerConfig": {"controllerManagerConfigYaml": text},
        # The chart's ServiceMonitor for the manager's metrics (HTTPS, the scraper's token), and
        # its RoleBinding naming the Prometheus namespace: the dashboards' queue panels read them.
        "enablePrometheus": True,
        "metrics": {"prometheusNamespace": MONITORING_NAMESPACE},
    }


def cluster_queue_name(model: Platform, tenant: str) -> str:
    return f"{prefix(model)}-{tenant}"


def cluster_queue_spec(model: Platform, tenant: Tenant, plan: Plan) -> dict[str, Any]:
    return {
        "cohortName": prefix(model),
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": tenant.name}},
        "queueingStrategy": "BestEffortFIFO",
        "preemption": {
            "reclaimWithinCohort": "Any",
            "withinClusterQueue": "LowerPriority",
            "borrowWithinCohort": {"policy": "Never"},
        },
        "resourceGroups": resource_groups(model, tenant, plan),
    }


class Scheduling(pulumi.ComponentResource):
    kueue: k8s.helm.v3.Release | None
    flavor_names: list[str]
    cluster_queues: dict[str, str]  # tenant -> ClusterQueue name

    def __init__(self, name: str, args: SchedulingArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:Scheduling", name, None, opts)
        model, provider = args.model, args.provider
        self.kueue, self.flavor_names, self.cluster_queues = None, [], {}
        if model.scheduling.queueing != "kueue":
            self.register_outputs({})
            return
        monitoring = [args.monitoring] if args.monitoring is not None else []
        values = kueue_values(fleet_manager=args.fleet_manager, requeue_limit=args.model.scheduling.requeue_limit)
        self.kueue = kueue = helm_release(
            self, name, "kueue", values,
            provider=provider, pod_security="baseline", depends_on=[*args.depends_on, *monitoring],
        )  # fmt: skip
        all_flavors = args.plan.flavors
        flavor_resources = {
            flavor.key: k8s.apiextensions.CustomResource(
                f"{name}-flavor-{flavor.key}",
                api_version=KUEUE_API,
                kind="ResourceFlavor",
                metadata=meta(flavor.name),
                spec=flavor_spec(model, flavor),
                opts=child_opts(self, provider, [kueue]),
            )
            for flavor in all_flavors
        }
        self.flavor_names = [f.name for f in all_flavors]
        for tenant in model.tenants:
            queue = cluster_queue_name(model, tenant.name)
            self.cluster_queues[tenant.name] = queue
            # A ClusterQueue stays inactive until every flavor it lists exists, and only those:
            # depending on the flavors the tenant may use, not on all of them, keeps the graph
            # linear in tenants x allowed pools.
            listed = [flavor_resources[f.key] for f in tenant_flavors(model, tenant, args.plan)]
            cluster_queue = k8s.apiextensions.CustomResource(
                f"{name}-cq-{tenant.name}",
                api_version=KUEUE_API,
                kind="ClusterQueue",
                metadata=meta(queue),
                spec=cluster_queue_spec(model, tenant, args.plan),
                opts=child_opts(self, provider, [kueue, *listed]),
            )
            namespace = args.tenants.get(tenant.name)
            k8s.apiextensions.CustomResource(
                f"{name}-lq-{tenant.name}",
                api_version=KUEUE_API,
                kind="LocalQueue",
                metadata=meta(LOCAL_QUEUE, tenant.name),
                spec={"clusterQueue": queue},
                opts=child_opts(self, provider, [kueue, cluster_queue, *([namespace] if namespace else [])]),
            )
        self.register_outputs({"flavors": self.flavor_names, "clusterQueues": self.cluster_queues})
