"""What the Kubernetes components share: options, names, chart installs, tolerations, units.

Every object here is cluster infrastructure the platform owns, so names are fixed (no Pulumi
autonaming suffix): other objects and users refer to them by name (a flavor by its
ClusterQueue, a ClusterQueue by its LocalQueue, a ConfigMap by the GPU Operator).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pulumi
import pulumi_kubernetes as k8s

from components._common import child_opts
from components.conventions import GPU_TAINT_KEY, OWNER, PART_OF_LABEL, SPOT_TAINT_KEY, pool_taints
from gpuplat.catalog import CHARTS, KUBERNETES_NAMESPACES, platform_namespaces
from gpuplat.catalog.charts import LOCAL_CHARTS_KEY, LOCAL_CHARTS_NAMESPACE, local_chart
from gpuplat.catalog.labels import TENANT_LABEL as _TENANT_LABEL
from gpuplat.model import GpuNodePool, Market, Platform, Provider
from gpuplat.plan import Plan
from gpuplat.plan.capacity import unit_resources

PART_OF = {PART_OF_LABEL: OWNER}
# On each tenant's Namespace (Tenant); Kueue manages unlabelled jobs only where it is (Scheduling).
TENANT_LABEL = _TENANT_LABEL
PSA_ENFORCE = "pod-security.kubernetes.io/enforce"
# The pause image of the platform's placeholder containers (pool labelers, capacity floor).
PAUSE_IMAGE = "registry.k8s.io/pause:3.10.2"
# Namespaces the platform must never create or own.
_SYSTEM_NAMESPACES = frozenset({"kube-system", "kube-public", "default"})


def meta(
    name: str,
    namespace: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> k8s.meta.v1.ObjectMetaArgsDict:
    result: k8s.meta.v1.ObjectMetaArgsDict = {"name": name, "labels": {**PART_OF, **(labels or {})}}
    if namespace is not None:
        result["namespace"] = namespace
    if annotations:
        result["annotations"] = dict(annotations)
    return result


def prefix(model: Platform) -> str:
    return model.metadata.name


def system_namespace(model: Platform) -> str:
    """Where the platform's own workloads (the pool labelers) run; one of platform_namespaces()."""
    return f"{prefix(model)}-system"


def reserved_namespaces(model: Platform) -> frozenset[str]:
    """Namespaces a tenant may not be named after: Kubernetes' own and the platform's (rule GP285)."""
    return KUBERNETES_NAMESPACES | platform_namespaces(prefix(model))


# Who creates a release's namespace: the platform, as a Namespace object carrying the Pod
# Security label its pods need (the default; none for Kubernetes' own namespaces), Helm
# (`create_namespace`), or nobody because another release already made it.
NamespaceOwner = Literal["platform", "helm", "existing"]


def local_charts() -> str | None:
    """The stack setting `gpuplat:localCharts`, made absolute: a directory holding one chart per
    catalog key (DIR/kueue, DIR/hami, ...) to install from instead of the charts' repositories,
    for a cluster that cannot reach them (docs/charts.md). Relative to the project directory,
    where Pulumi runs the program; absolute, because Helm resolves a local chart against the
    provider's working directory, not the program's."""
    configured = pulumi.Config(LOCAL_CHARTS_NAMESPACE).get(LOCAL_CHARTS_KEY)
    return str(Path(configured).resolve()) if configured else None


def helm_release(
    parent: pulumi.Resource,
    name: str,
    key: str,
    values: Mapping[str, Any],
    *,
    provider: pulumi.ProviderResource | None = None,
    depends_on: Sequence[pulumi.Resource] | None = None,
    pod_security: str | None = None,
    namespace: NamespaceOwner = "platform",
    suffix: str | None = None,
    **extra: Any,
) -> k8s.helm.v3.Release:
    """The pinned catalog chart `key` as release `<name>-<suffix or key>` (the one Helm helper):
    from its repository, or from `gpuplat:localCharts`/<key> when that stack setting is set.

    With `namespace="platform"` the namespace is ours rather than Helm's (`create_namespace`),
    so it carries the Pod Security label its node agents need and Pulumi shows and diffs it like
    any other object. `extra`: further `helm.v3.Release` arguments (`skip_crds`).
    """
    chart = CHARTS[key]
    deps = list(depends_on or [])
    if namespace == "platform" and chart.namespace not in _SYSTEM_NAMESPACES:
        labels = {PSA_ENFORCE: pod_security} if pod_security else {}
        ns = k8s.core.v1.Namespace(
            f"{name}-ns-{key}",
            metadata=meta(chart.namespace, labels=labels),
            opts=child_opts(parent, provider),
        )
        deps.append(ns)
    local = local_charts()
    repo = None if local else chart.release_repo
    return k8s.helm.v3.Release(
        f"{name}-{suffix or key}",
        name=key,
        chart=local_chart(local, key) if local else chart.release_chart,
        version=chart.version,
        namespace=chart.namespace,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=repo) if repo is not None else None,
        values=dict(values),
        max_history=10,
        create_namespace=True if namespace == "helm" else None,
        opts=child_opts(parent, provider, deps),
        **extra,
    )


def toleration(taint: Mapping[str, str]) -> dict[str, str]:
    if "value" in taint:
        return {"key": taint["key"], "operator": "Equal", "value": taint["value"], "effect": taint["effect"]}
    return {"key": taint["key"], "operator": "Exists", "effect": taint["effect"]}


def _unique(items: Iterable[dict[str, str]]) -> list[dict[str, str]]:
    seen: set[tuple[tuple[str, str], ...]] = set()
    result: list[dict[str, str]] = []
    for item in items:
        key = tuple(sorted(item.items()))
        if key not in seen:
            seen.add(key)
            result.append(item)
    return result


def gpu_node_tolerations(model: Platform, pools: Iterable[GpuNodePool] | None = None) -> list[dict[str, str]]:
    """Tolerations a node agent needs to run on every node of `pools` (default: all), any market.

    The GPU and spot taints are tolerated by key whatever their value, so an agent keeps
    running if a spec taint redefines one of them.
    """
    selected = list(model.pools if pools is None else pools)
    tolerations = [{"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]
    if model.target.provider is Provider.AWS and any(Market.SPOT in p.markets for p in selected):
        tolerations.append({"key": SPOT_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"})
    for pool in selected:
        tolerations.extend(
            toleration(t) for t in pool_taints(pool, None) if (t["key"], t["effect"]) != (GPU_TAINT_KEY, "NoSchedule")
        )
    return _unique(tolerations)


def platform_resources(plan: Plan) -> list[str]:
    """Every GPU resource the platform's nodes advertise, in a stable order."""
    names: list[str] = []
    for pool in plan.pools:
        for resource in unit_resources(pool):
            if resource not in names:
                names.append(resource)
    return names


def topology_name(model: Platform) -> str:
    return f"{prefix(model)}-fabric"


# What the platform's own admission policies judge: every pod created in a tenant namespace.
POD_CREATE: k8s.admissionregistration.v1.MatchResourcesArgsDict = {
    "resource_rules": [{"api_groups": [""], "api_versions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]
}
TENANT_NAMESPACES: k8s.admissionregistration.v1.MatchResourcesArgsDict = {
    "namespace_selector": {"match_expressions": [{"key": TENANT_LABEL, "operator": "Exists"}]}
}


def deny_tenant_pods(
    parent: pulumi.Resource,
    name: str,
    policy: str,
    provider: pulumi.ProviderResource,
    depends_on: Sequence[pulumi.Resource],
    variables: Sequence[k8s.admissionregistration.v1.VariableArgsDict],
    validations: Sequence[k8s.admissionregistration.v1.ValidationArgsDict],
) -> None:
    """A ValidatingAdmissionPolicy on pod creation and its binding to the tenant namespaces, denying."""
    vap = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
        f"{name}-policy",
        metadata=meta(policy),
        spec={
            "failure_policy": "Fail",
            "match_constraints": POD_CREATE,
            "variables": list(variables),
            "validations": list(validations),
        },
        opts=child_opts(parent, provider, depends_on),
    )
    k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
        f"{name}-binding",
        metadata=meta(policy),
        spec={"policy_name": policy, "validation_actions": ["Deny"], "match_resources": TENANT_NAMESPACES},
        opts=child_opts(parent, provider, [vap]),
    )
