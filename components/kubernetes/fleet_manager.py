"""FleetManager: the fleet's queue on the manager and Kueue's MultiKueue objects behind it.

- Per worker, in dispatch order: a StackReference to the worker's stack, whose secret output
  (FLEET_KUBECONFIG_OUTPUT, the credentials FleetWorker exports) becomes a Secret in Kueue's
  namespace under the key MultiKueue reads (`kubeconfig`), and a MultiKueueCluster naming it.
  The value stays a Pulumi secret end to end: never in a plan, a preview or the state in clear.
- A MultiKueueConfig listing the workers in the fleet's order (Kueue's incremental dispatcher,
  configured in Scheduling, tries them one at a time in that order) and the AdmissionCheck
  (controller kueue.x-k8s.io/multikueue) pointing at it.
- Per tenant with a worker to go to: a ResourceFlavor-backed ClusterQueue carrying the admission
  check, sized to the sum of the tenant's nominal quotas on its workers (gpuplat/fleet/quota.py),
  and the fleet LocalQueue in the tenant's namespace. The tenant's `default` queue is untouched:
  what is submitted there still runs on the manager's own GPUs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpuplat.catalog import CHARTS
from gpuplat.model import Platform
from gpuplat.model.fleet import MULTIKUEUE_CONTROLLER, FleetMember
from gpuplat.plan.fleet_types import FleetPlan

from .._common import child_opts
from ._common import meta
from .scheduling import KUEUE_API

FLEET_KUBECONFIG_OUTPUT = "multikueueKubeconfig"
KUBECONFIG_KEY = "kubeconfig"  # the Secret key MultiKueue reads


@dataclass(frozen=True)
class FleetManagerArgs:
    model: Platform
    fleet: FleetPlan
    provider: pulumi.ProviderResource
    kueue: pulumi.Resource | None
    namespaces: Mapping[str, pulumi.Resource] = field(default_factory=lambda: {})


def stack_reference_name(member: FleetMember) -> str:
    """A member's fully qualified stack: `org/project/stack` as written, or this project's."""
    if "/" in member.stack:
        return member.stack
    return f"{pulumi.get_organization()}/{pulumi.get_project()}/{member.stack}"


def cluster_name(fleet: str, member: str) -> str:
    return f"{fleet}-{member}"


def kubeconfig_secret_name(fleet: str, member: str) -> str:
    return f"{fleet}-{member}-kubeconfig"


def multikueue_cluster_spec(secret: str) -> dict[str, Any]:
    return {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": secret}}}


def multikueue_config_spec(fleet: FleetPlan) -> dict[str, Any]:
    workers = sorted((m for m in fleet.members if m.position is not None), key=lambda m: m.position or 0)
    return {"clusters": [cluster_name(fleet.name, m.name) for m in workers]}


def admission_check_spec(fleet: FleetPlan) -> dict[str, Any]:
    return {
        "controllerName": MULTIKUEUE_CONTROLLER,
        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": fleet.name},
    }


def fleet_queue_name(fleet: str, tenant: str) -> str:
    return f"{fleet}-fleet-{tenant}"


def fleet_cluster_queue_spec(fleet: FleetPlan, tenant: str, quota: Mapping[str, int]) -> dict[str, Any]:
    """The manager's queue of a tenant: admits up to the workers' combined quota, then hands each
    admitted workload to MultiKueue, which runs it on a worker."""
    return {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": tenant}},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": [
            {
                "coveredResources": sorted(quota),
                "flavors": [
                    {
                        "name": fleet.name,
                        "resources": [{"name": r, "nominalQuota": str(quota[r])} for r in sorted(quota)],
                    }
                ],
            }
        ],
        "admissionChecksStrategy": {"admissionChecks": [{"name": fleet.name}]},
    }


class FleetManager(pulumi.ComponentResource):
    cluster_queues: dict[str, str]  # tenant -> the fleet ClusterQueue's name

    def __init__(self, name: str, args: FleetManagerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:FleetManager", name, None, opts)
        self._kueue: list[pulumi.Resource] = [args.kueue] if args.kueue is not None else []
        clusters = self._clusters(name, args)
        config = k8s.apiextensions.CustomResource(
            f"{name}-config",
            api_version=KUEUE_API,
            kind="MultiKueueConfig",
            metadata=meta(args.fleet.name),
            spec=multikueue_config_spec(args.fleet),
            opts=child_opts(self, args.provider, [*self._kueue, *clusters]),
        )
        check = k8s.apiextensions.CustomResource(
            f"{name}-check",
            api_version=KUEUE_API,
            kind="AdmissionCheck",
            metadata=meta(args.fleet.name),
            spec=admission_check_spec(args.fleet),
            opts=child_opts(self, args.provider, [*self._kueue, config]),
        )
        self.cluster_queues = self._queues(name, args, check)
        self.register_outputs({"clusterQueues": self.cluster_queues})

    def _clusters(self, name: str, args: FleetManagerArgs) -> list[pulumi.Resource]:
        """Per worker in dispatch order: its stack's credentials as a Secret, and its MultiKueueCluster."""
        fleet, provider = args.fleet, args.provider
        namespace = CHARTS["kueue"].namespace
        members = {m.name: m for m in args.model.fleet.members} if args.model.fleet is not None else {}
        clusters: list[pulumi.Resource] = []
        for member in sorted((m for m in fleet.members if m.position is not None), key=lambda m: m.position or 0):
            reference = pulumi.StackReference(
                f"{name}-ref-{member.name}",
                stack_name=stack_reference_name(members[member.name]),
                opts=pulumi.ResourceOptions(parent=self),
            )
            secret_name = kubeconfig_secret_name(fleet.name, member.name)
            secret = k8s.core.v1.Secret(
                f"{name}-kubeconfig-{member.name}",
                metadata=meta(secret_name, namespace),
                type="Opaque",
                string_data={KUBECONFIG_KEY: pulumi.Output.secret(reference.require_output(FLEET_KUBECONFIG_OUTPUT))},
                opts=child_opts(self, provider, self._kueue),
            )
            clusters.append(
                k8s.apiextensions.CustomResource(
                    f"{name}-cluster-{member.name}",
                    api_version=KUEUE_API,
                    kind="MultiKueueCluster",
                    metadata=meta(cluster_name(fleet.name, member.name)),
                    spec=multikueue_cluster_spec(secret_name),
                    opts=child_opts(self, provider, [*self._kueue, secret]),
                )
            )
        return clusters

    def _queues(self, name: str, args: FleetManagerArgs, check: pulumi.Resource) -> dict[str, str]:
        """The flavor the fleet quotas are counted in, and per tenant its fleet queues."""
        fleet, provider = args.fleet, args.provider
        flavor = k8s.apiextensions.CustomResource(
            f"{name}-flavor",
            api_version=KUEUE_API,
            kind="ResourceFlavor",
            metadata=meta(fleet.name),
            spec={},  # quota accounting only: the manager runs no fleet pod itself
            opts=child_opts(self, provider, self._kueue),
        )
        queues: dict[str, str] = {}
        for reach in fleet.tenants:
            if not reach.combined or reach.tenant not in args.namespaces:
                continue
            queue = queues[reach.tenant] = fleet_queue_name(fleet.name, reach.tenant)
            cluster_queue = k8s.apiextensions.CustomResource(
                f"{name}-cq-{reach.tenant}",
                api_version=KUEUE_API,
                kind="ClusterQueue",
                metadata=meta(queue),
                spec=fleet_cluster_queue_spec(fleet, reach.tenant, reach.combined),
                opts=child_opts(self, provider, [*self._kueue, flavor, check]),
            )
            k8s.apiextensions.CustomResource(
                f"{name}-lq-{reach.tenant}",
                api_version=KUEUE_API,
                kind="LocalQueue",
                metadata=meta(fleet.queue, reach.tenant),
                spec={"clusterQueue": queue},
                opts=child_opts(self, provider, [*self._kueue, cluster_queue, args.namespaces[reach.tenant]]),
            )
        return queues
