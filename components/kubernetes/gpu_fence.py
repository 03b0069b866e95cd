"""GpuFence: a GPU node whose hardware turns unhealthy stops receiving new pods at once.

A node whose GPU fails keeps its kubelet Ready, so the scheduler and Kueue keep placing work
there; on aws Karpenter acts only after its repair toleration (10 minutes). The fencer
(node_fencer.py, shipped in a ConfigMap and run by a one-replica Deployment on a stock Python
image) taints such a node `gpuplat.dev/gpu-unhealthy=<reason>:NoSchedule` and removes the taint
when the reason is gone. It acts on two signals:
- on both providers, GpuHealth's critical alerts (a fatal XID, a failed row remap, double-bit
  ECC, NVLink recovery errors) as kube-prometheus-stack's Prometheus reports them, polled;
- on aws also the EKS node monitoring agent's `AcceleratedHardwareReady` condition, watched,
  so it fences the moment the agent sets it False.
Running pods stay: the taint is NoSchedule, and a topology-aware workload is moved by Kueue's
node replacement, which acts on such a taint. docs/health.md has the whole path.

RBAC cannot narrow "patch nodes" to one taint, so a ValidatingAdmissionPolicy holds the
fencer's service account to changing nothing on a node but that taint, on a pool's node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from hashlib import sha256
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from components.conventions import POOL_LABEL
from gpuplat.catalog.labels import GPU_FENCER
from gpuplat.model import Platform

from .._common import child_opts
from ._common import meta, prefix, system_namespace
from .node_fencer import TAINT_KEY

# The Docker official image through ECR Public (no Docker Hub pull limits on EKS nodes).
PYTHON_IMAGE = "public.ecr.aws/docker/library/python:3.13.9-slim"
# The conditions the EKS node monitoring agent sets False on a GPU fault (docs/health.md).
AWS_CONDITIONS = ("AcceleratedHardwareReady",)
APP = GPU_FENCER
SCRIPT = Path(__file__).with_name("node_fencer.py")
_MOUNT = "/opt/gpu-fencer"


@dataclass(frozen=True)
class GpuFenceArgs:
    model: Platform
    provider: pulumi.ProviderResource
    namespace: pulumi.Resource  # the platform's system namespace (Autoscaling.namespace)
    conditions: Sequence[str] = AWS_CONDITIONS
    # The GpuHealth alerts that fence, and the Prometheus that evaluates them (empty: none).
    alerts: Sequence[str] = ()
    prometheus_url: str = ""
    depends_on: Sequence[pulumi.Resource] = field(default_factory=lambda: ())


def service_account_user(model: Platform) -> str:
    return f"system:serviceaccount:{system_namespace(model)}:{APP}"


def fence_validations() -> list[k8s.admissionregistration.v1.ValidationArgsDict]:
    """A node update by the fencer changes nothing but its own taint, on a pool's node."""
    def others(node: str) -> str:
        return f"(has({node}.spec.taints) ? {node}.spec.taints : []).filter(t, t.key != '{TAINT_KEY}')"

    def same(path: str) -> str:
        return (f"has(object.{path}) == has(oldObject.{path}) && "
                f"(!has(object.{path}) || object.{path} == oldObject.{path})")

    rest = " && ".join(same(p) for p in ("metadata.labels", "metadata.annotations", "spec.unschedulable"))
    return [
        {"expression": f"has(oldObject.metadata.labels) && '{POOL_LABEL}' in oldObject.metadata.labels",
         "message": f"the GPU fencer may change only the nodes of a pool ({POOL_LABEL})"},
        {"expression": f"{others('object')} == {others('oldObject')} && {rest}",
         "message": f"the GPU fencer may change only its own taint ({TAINT_KEY}) on a node"},
    ]


def fencer_env(args: GpuFenceArgs) -> list[k8s.core.v1.EnvVarArgsDict]:
    env: list[k8s.core.v1.EnvVarArgsDict] = [{"name": "FENCE_NODE_SELECTOR", "value": POOL_LABEL}]
    if args.conditions:
        env.append({"name": "FENCE_CONDITIONS", "value": ",".join(args.conditions)})
    if args.alerts:
        env.append({"name": "FENCE_ALERTS", "value": ",".join(args.alerts)})
        env.append({"name": "FENCE_PROMETHEUS_URL", "value": args.prometheus_url})
    return env


def fencer_pod_spec(env: list[k8s.core.v1.EnvVarArgsDict], config_map: str) -> k8s.core.v1.PodSpecArgsDict:
    return {
        "service_account_name": APP,
        "security_context": {"run_as_non_root": True, "run_as_user": 65532, "run_as_group": 65532,
                             "seccomp_profile": {"type": "RuntimeDefault"}},
        "containers": [{
            "name": "fencer",
            "image": PYTHON_IMAGE,
            "command": ["python3", "-u", "-B", f"{_MOUNT}/{SCRIPT.name}"],
            "env": env,
            "security_context": {"allow_privilege_escalation": False, "read_only_root_filesystem": True,
                                 "capabilities": {"drop": ["ALL"]}},
            "resources": {"requests": {"cpu": "10m", "memory": "48Mi"}, "limits": {"memory": "128Mi"}},
            "volume_mounts": [{"name": "script", "mount_path": _MOUNT, "read_only": True}],
        }],
        "volumes": [{"name": "script", "config_map": {"name": config_map}}],
    }


class GpuFence(pulumi.ComponentResource):
    deployment: k8s.apps.v1.Deployment

    def __init__(self, name: str, args: GpuFenceArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:GpuFence", name, None, opts)
        model, provider = args.model, args.provider
        namespace = system_namespace(model)
        cluster_name = f"{prefix(model)}-{APP}"
        after = [args.namespace, *args.depends_on]
        account = k8s.core.v1.ServiceAccount(
            f"{name}-sa", metadata=meta(APP, namespace), opts=child_opts(self, provider, after)
        )
        role = k8s.rbac.v1.ClusterRole(
            f"{name}-role",
            metadata=meta(cluster_name),
            rules=[{"api_groups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "patch"]}],
            opts=child_opts(self, provider, args.depends_on),
        )
        binding = k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-binding",
            metadata=meta(cluster_name),
            role_ref={"api_group": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_name},
            subjects=[{"kind": "ServiceAccount", "name": APP, "namespace": namespace}],
            opts=child_opts(self, provider, [role, account]),
        )
        events = _event_rights(self, name, model, provider, account)
        policy_binding = _fence_policy(self, name, model, provider, args.depends_on)
        source = SCRIPT.read_text()
        script = k8s.core.v1.ConfigMap(
            f"{name}-script",
            metadata=meta(APP, namespace),
            data={SCRIPT.name: source},
            opts=child_opts(self, provider, after),
        )
        labels = {"app.kubernetes.io/name": APP}
        self.deployment = k8s.apps.v1.Deployment(
            f"{name}-deployment",
            metadata=meta(APP, namespace, labels),
            spec={
                "replicas": 1,
                # Never two fencers at once: both would patch the same nodes.
                "strategy": {"type": "Recreate"},
                "selector": {"match_labels": labels},
                "template": {
                    "metadata": {"labels": labels,
                                 # A new script rolls the pod (a mounted ConfigMap alone would not restart it).
                                 "annotations": {"gpuplat.dev/script-sha256": sha256(source.encode()).hexdigest()}},
                    "spec": fencer_pod_spec(fencer_env(args), APP),
                },
            },
            opts=child_opts(self, provider, [binding, events, policy_binding, script]),
        )
        self.register_outputs({})


def _fence_policy(
    parent: pulumi.Resource, name: str, model: Platform, provider: pulumi.ProviderResource,
    depends_on: Sequence[pulumi.Resource],
) -> pulumi.Resource:
    """The admission policy holding the fencer's service account to its own taint, and its binding."""
    cluster_name = f"{prefix(model)}-{APP}"
    policy = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
        f"{name}-policy",
        metadata=meta(cluster_name),
        spec={
            "failure_policy": "Fail",
            "match_constraints": {"resource_rules": [
                {"api_groups": [""], "api_versions": ["v1"], "operations": ["UPDATE"], "resources": ["nodes"]},
            ]},
            "match_conditions": [{"name": "gpu-fencer",
                                  "expression": f"request.userInfo.username == '{service_account_user(model)}'"}],
            "validations": fence_validations(),
        },
        opts=child_opts(parent, provider, depends_on),
    )
    return k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
        f"{name}-policy-binding",
        metadata=meta(cluster_name),
        spec={"policy_name": cluster_name, "validation_actions": ["Deny"]},
        opts=child_opts(parent, provider, [policy]),
    )


def _event_rights(
    parent: pulumi.Resource, name: str, model: Platform, provider: pulumi.ProviderResource,
    account: pulumi.Resource,
) -> pulumi.Resource:
    """Creating Events in `default`, where Kubernetes records a node's, and nothing else there."""
    role_name = f"{prefix(model)}-{APP}-events"
    role = k8s.rbac.v1.Role(
        f"{name}-events-role",
        metadata=meta(role_name, "default"),
        rules=[{"api_groups": [""], "resources": ["events"], "verbs": ["create"]}],
        opts=child_opts(parent, provider),
    )
    return k8s.rbac.v1.RoleBinding(
        f"{name}-events-binding",
        metadata=meta(role_name, "default"),
        role_ref={"api_group": "rbac.authorization.k8s.io", "kind": "Role", "name": role_name},
        subjects=[{"kind": "ServiceAccount", "name": APP, "namespace": system_namespace(model)}],
        opts=child_opts(parent, provider, [role, account]),
    )
