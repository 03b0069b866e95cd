"""Tenant: one team's namespace with its quota, defaults, network fence, access and priority.

- Namespace named after the tenant, protected and retained on delete (it holds the tenant's
  work); Pod Security `baseline` enforced (GPU jobs need no host
  access; many ML images still run as root, which `restricted` would refuse), `restricted`
  warned and audited. A tenant that may use a fabric pool needs IPC_LOCK for RDMA, which
  `baseline` refuses: its namespace enforces `privileged` and the platform's
  ValidatingAdmissionPolicy holds it to baseline plus IPC_LOCK (TenantPodSecurity); the
  namespace is created only once that policy is bound.
- ResourceQuota on GPU resources, a backstop for pods Kueue does not manage, and a cap across
  flavors on those it does (a ClusterQueue limits each flavor, not their sum): per resource
  the most units the tenant's `gpus` GPUs yield on its allowed pools, filled from the pool
  with the most units per GPU, each pool up to its capacity (`_quota.quota_ceilings`); 0 for
  GPU resources of pools the tenant may not use. A tenant without a time-sliced or MPS pool
  thus gets exactly `gpus` nvidia.com/gpu. Kueue's per-flavor quotas are the exact ones
  (Scheduling). Residual gap: a namespace quota counts units of a resource, not the nodes that
  advertise them, and exclusive, time-sliced and MPS GPUs are all nvidia.com/gpu. A tenant
  allowed a shared pool with `replicas` r gets up to `gpus` x r units, and a pod that escapes
  Kueue (a kind Kueue does not integrate, or while Kueue's webhook is bypassed) can spend
  them on whole GPUs of any pool: dev's `product` (8 GPUs, time-slicing x4) could hold 32
  exclusive GPUs. Nor can a quota enforce the pool allow-list or hard isolation; only
  Kueue's flavors do (`manageJobsWithoutQueueName` in tenant namespaces, Scheduling). Other
  namespaces have neither a quota nor Kueue: RBAC must keep tenants out of them.
- LimitRange: default CPU / memory requests for containers that set none, and no default
  limits: a default limit below what a container requests gets the pod rejected.
- NetworkPolicies: deny all ingress and egress, then allow DNS to the cluster DNS, all
  traffic within the namespace (distributed jobs talk to each other: NCCL bootstrap, Ray,
  rendezvous), HTTPS out (object stores, AWS APIs, the Kubernetes API), scraping from the
  monitoring namespace and, on aws, the node's Pod Identity agent. FSx and S3 CSI mounts are
  made by node-level clients, outside pod policies.
- RoleBinding of the `edit` ClusterRole to the group `gpuplat:<tenant>`: on aws the EKS
  access entries of the tenant's `principals` (TenantAccess) map IAM roles and users into it,
  on provider kubernetes the cluster's identity provider does.
- PriorityClass `<platform>-tenant-<tenant>` at the tenant's priority; pods pick it with
  `priorityClassName`, Kueue orders and preempts workloads by it. The values stay below the
  storage QoS class `<platform>-critical` (StorageClasses), which outranks every tenant.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from components.conventions import TENANT_GROUP
from gpuplat.model import Platform, Provider
from gpuplat.model import Tenant as TenantSpec
from gpuplat.plan import Plan

from .._common import child_opts
from ._common import PSA_ENFORCE, TENANT_LABEL, meta, platform_resources, prefix, reserved_namespaces
from ._quota import quota_ceilings
from .observability import MONITORING_NAMESPACE
from .pod_security import enforce_level

TENANT_PRIORITY = {"low": 1_000, "normal": 10_000, "high": 100_000, "critical": 500_000}
# Requests only. A `default` limit is set on every container that names no limit, also on one
# that requests more: a job asking for 32 CPUs and 512Gi without limits would get the default
# limit below its request and the API server would reject the pod (requests must not exceed
# limits). No `max` / `min` either: a GPU node's CPU and memory are the tenant's to size per
# job, and the GPU ResourceQuota and Kueue already bound what a tenant can hold. A container
# that sets neither gets these requests, so the scheduler still reserves something for it.
_CONTAINER_DEFAULTS: k8s.core.v1.LimitRangeItemArgsDict = {
    "type": "Container",
    "default_request": {"cpu": "500m", "memory": "1Gi"},
}


@dataclass(frozen=True)
class TenantArgs:
    model: Platform
    plan: Plan
    provider: pulumi.ProviderResource
    tenant: TenantSpec
    depends_on: Sequence[pulumi.Resource] = field(default_factory=lambda: ())


def priority_class_name(model: Platform, tenant: str) -> str:
    return f"{prefix(model)}-tenant-{tenant}"


def quota_hard(model: Platform, plan: Plan, tenant: TenantSpec) -> dict[str, str]:
    ceilings = quota_ceilings(model, tenant, plan, platform_resources(plan))
    return {f"requests.{resource}": str(n) for resource, n in ceilings.items()}


# Where the EKS Pod Identity agent listens on every node (link-local, IPv4 and IPv6 clusters).
POD_IDENTITY_AGENT = ("169.254.170.23/32", "fd00:ec2::23/128")
_EVERYWHERE = ("0.0.0.0/0", "::/0")


def _ports(protocol: str, *numbers: int) -> list[k8s.networking.v1.NetworkPolicyPortArgsDict]:
    return [{"protocol": protocol, "port": n} for n in numbers]


def network_policies(model: Platform) -> dict[str, k8s.networking.v1.NetworkPolicySpecArgsDict]:
    """Default deny, then only what a training or inference job needs; every policy selects all pods.

    Enforced on EKS by the VPC CNI's network policy agent (enabled on the add-on, Cluster), on
    provider kubernetes by whatever CNI the cluster runs.
    """
    everything: k8s.networking.v1.NetworkPolicyPeerArgsDict = {"pod_selector": {}}
    dns: k8s.networking.v1.NetworkPolicyPeerArgsDict = {
        "namespace_selector": {"match_labels": {"kubernetes.io/metadata.name": "kube-system"}},
        "pod_selector": {"match_labels": {"k8s-app": "kube-dns"}},
    }
    monitoring: k8s.networking.v1.NetworkPolicyPeerArgsDict = {
        "namespace_selector": {"match_labels": {"kubernetes.io/metadata.name": MONITORING_NAMESPACE}}
    }
    policies: dict[str, k8s.networking.v1.NetworkPolicySpecArgsDict] = {
        "default-deny": {"pod_selector": {}, "policy_types": ["Ingress", "Egress"]},
        "allow-dns": {
            "pod_selector": {},
            "policy_types": ["Egress"],
            "egress": [{"to": [dns], "ports": [*_ports("UDP", 53), *_ports("TCP", 53)]}],
        },
        "allow-same-namespace": {
            "pod_selector": {},
            "policy_types": ["Ingress", "Egress"],
            "ingress": [{"from_": [everything]}],
            "egress": [{"to": [everything]}],
        },
        # Object stores (S3, or an on-prem S3 API), AWS APIs, registries, model hubs and the
        # Kubernetes API speak HTTPS. Any address, not only outside the VPC: the VPC CNI gives
        # pods VPC addresses, so the interface endpoints (STS, ECR) and the API server's
        # endpoints share the pods' subnets. Other tenants' pods stay closed: their own
        # default-deny admits no ingress from another namespace.
        "allow-https-egress": {
            "pod_selector": {},
            "policy_types": ["Egress"],
            "egress": [{"to": [{"ip_block": {"cidr": cidr}} for cidr in _EVERYWHERE], "ports": _ports("TCP", 443)}],
        },
        # Prometheus scrapes the tenant's ServiceMonitors and PodMonitors on whatever port they
        # name; only pods of the monitoring namespace may connect, and only inwards.
        "allow-metrics-scrape": {
            "pod_selector": {},
            "policy_types": ["Ingress"],
            "ingress": [{"from_": [monitoring]}],
        },
    }
    if model.target.provider is Provider.AWS:
        # The AWS SDKs get Pod Identity credentials from the node's agent over plain HTTP.
        policies["allow-pod-identity"] = {
            "pod_selector": {},
            "policy_types": ["Egress"],
            "egress": [
                {"to": [{"ip_block": {"cidr": cidr}} for cidr in POD_IDENTITY_AGENT], "ports": _ports("TCP", 80)}
            ],
        }
    return policies


def namespace_labels(model: Platform, tenant: TenantSpec) -> dict[str, str]:
    """The tenant label and Pod Security: enforced at the tenant's level, warned and audited at restricted."""
    return {
        TENANT_LABEL: tenant.name,
        PSA_ENFORCE: enforce_level(model, tenant),
        "pod-security.kubernetes.io/warn": "restricted",
        "pod-security.kubernetes.io/audit": "restricted",
    }


class Tenant(pulumi.ComponentResource):
    namespace: k8s.core.v1.Namespace
    priority_class: str

    def __init__(self, name: str, args: TenantArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:Tenant", name, None, opts)
        model, tenant, provider = args.model, args.tenant, args.provider
        ns = tenant.name
        if ns in reserved_namespaces(model):
            # Two owners of one namespace would fight over it (and its Pod Security level).
            raise ValueError(f"tenant {ns}: the name is a namespace Kubernetes or the platform already uses")
        self.namespace = k8s.core.v1.Namespace(
            f"{name}-ns",
            metadata=meta(ns, labels=namespace_labels(model, tenant)),
            # Deleting a namespace deletes everything in it (the tenant's jobs, secrets and the
            # claims it made itself, with their volumes): Pulumi refuses to, and a tenant dropped
            # from the spec leaves its namespace in the cluster until an operator deletes it.
            opts=pulumi.ResourceOptions.merge(
                child_opts(self, provider, args.depends_on),
                pulumi.ResourceOptions(protect=True, retain_on_delete=True),
            ),
        )
        self._inside(name, args)
        self.priority_class = priority_class_name(model, tenant.name)
        k8s.scheduling.v1.PriorityClass(
            f"{name}-priority",
            metadata=meta(self.priority_class, labels={TENANT_LABEL: tenant.name}),
            value=TENANT_PRIORITY[tenant.priority],
            preemption_policy="PreemptLowerPriority",
            global_default=False,
            description=f"GPU work of tenant {tenant.name} (priority {tenant.priority})",
            opts=child_opts(self, provider, args.depends_on),
        )
        self.register_outputs({"namespace": ns, "priorityClass": self.priority_class})

    def _inside(self, name: str, args: TenantArgs) -> None:
        """What lives in the namespace: quota, container defaults, network policies, the edit binding."""
        model, tenant, ns = args.model, args.tenant, args.tenant.name
        inside = child_opts(self, args.provider, [self.namespace])
        k8s.core.v1.ResourceQuota(
            f"{name}-quota",
            metadata=meta("gpu-quota", ns),
            spec={"hard": quota_hard(model, args.plan, tenant)},
            opts=inside,
        )
        k8s.core.v1.LimitRange(
            f"{name}-limits",
            metadata=meta("container-defaults", ns),
            spec={"limits": [_CONTAINER_DEFAULTS]},
            opts=inside,
        )
        for policy, spec in network_policies(model).items():
            k8s.networking.v1.NetworkPolicy(
                f"{name}-netpol-{policy}", metadata=meta(policy, ns), spec=spec, opts=inside
            )
        k8s.rbac.v1.RoleBinding(
            f"{name}-edit",
            metadata=meta("gpuplat-edit", ns),
            role_ref={"api_group": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
            subjects=[
                {"api_group": "rbac.authorization.k8s.io", "kind": "Group", "name": TENANT_GROUP.format(tenant=ns)}
            ],
            opts=inside,
        )
