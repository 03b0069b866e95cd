"""PoolLabels: the pool labels and taints on the existing nodes of a provider-kubernetes cluster.

On aws Karpenter writes `conventions.pool_node_labels` and `pool_taints` onto the nodes it
launches. An existing cluster's nodes are only known by `pool.nodeSelector`, and Pulumi can
manage a Node object only by name, so one small DaemonSet per pool, scheduled by that
selector, labels and taints the node it lands on (downward API NODE_NAME): a node joining the
pool later is labelled when its pod starts, and a spec change rolls the pods, which apply the
new values.

The work runs in init containers (kubectl needs no shell that way: the kubelet expands
`$(NODE_NAME)` in args) and a pause container keeps the pod, so the DaemonSet reports the pool
as done. Labels the platform may have set before and no longer wants (a MIG config after the
pool left MIG) are removed; taints are only ever added, because removing a taint that is not
there fails the pod, and an operator should decide when a node stops repelling pods. The
GPU Operator's device-plugin deploy label is set to "true" rather than removed outside HAMi
pools: removing it would briefly unschedule the device plugin until the operator re-adds it.

RBAC: get and patch on nodes, cluster-wide. RBAC cannot narrow that to "the node I run on";
the pods run unprivileged as non-root with a read-only root file system.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.conventions import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    DEVICE_PLUGIN_DEPLOY_LABEL,
    FABRIC_LABEL,
    MIG_CONFIG_LABEL,
    POOL_LABEL,
    pool_node_labels,
    pool_taints,
)
from gpuplat.model import GpuNodePool, Platform

from .._common import child_opts
from ._common import PAUSE_IMAGE, meta, prefix, system_namespace

# kubectl matching the cluster's minor version (kubectl supports one minor of skew either
# way); registry.k8s.io publishes an image per Kubernetes patch release, binary /bin/kubectl.
KUBECTL_IMAGE = "registry.k8s.io/kubectl:v{version}.0"
_APP = "pool-labeler"
# Labels only the platform writes; absent from a pool's wanted set means "remove".
_MANAGED_OPTIONAL = (MIG_CONFIG_LABEL, DEVICE_PLUGIN_CONFIG_LABEL, FABRIC_LABEL)
_RESTRICTED_CONTAINER: k8s.core.v1.SecurityContextArgsDict = {
    "allow_privilege_escalation": False,
    "read_only_root_filesystem": True,
    "capabilities": {"drop": ["ALL"]},
}


@dataclass(frozen=True)
class PoolLabelsArgs:
    model: Platform
    provider: pulumi.ProviderResource
    namespace: pulumi.Resource  # the platform's system namespace (Autoscaling.namespace)


def label_args(pool: GpuNodePool) -> list[str]:
    """`kubectl label` arguments: every wanted label, then removals of stale platform labels."""
    wanted = pool_node_labels(pool)
    wanted.setdefault(DEVICE_PLUGIN_DEPLOY_LABEL, "true")
    args = [f"{key}={value}" for key, value in sorted(wanted.items())]
    args += [f"{key}-" for key in _MANAGED_OPTIONAL if key not in wanted]
    return args


def taint_args(pool: GpuNodePool) -> list[str]:
    result: list[str] = []
    for taint in pool_taints(pool, None):
        value = f"={taint['value']}" if "value" in taint else ""
        result.append(f"{taint['key']}{value}:{taint['effect']}")
    return result


def _kubectl(name: str, image: str, verb: str, args: list[str]) -> k8s.core.v1.ContainerArgsDict:
    return {
        "name": name,
        "image": image,
        "command": ["/bin/kubectl", verb, "node", "$(NODE_NAME)", "--overwrite", *args],
        "env": [
            {"name": "NODE_NAME", "value_from": {"field_ref": {"field_path": "spec.nodeName"}}},
            # kubectl caches API discovery under $HOME; the root file system is read-only.
            {"name": "HOME", "value": "/tmp"},
        ],
        "security_context": _RESTRICTED_CONTAINER,
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
        "volume_mounts": [{"name": "tmp", "mount_path": "/tmp"}],
    }


def daemonset_spec(model: Platform, pool: GpuNodePool, service_account: str) -> k8s.apps.v1.DaemonSetSpecArgsDict:
    selector = {"app.kubernetes.io/name": _APP, POOL_LABEL: pool.name}
    kubectl = KUBECTL_IMAGE.format(version=model.target.kubernetes_version)
    init = [_kubectl("label", kubectl, "label", label_args(pool))]
    taints = taint_args(pool)
    if taints:
        init.append(_kubectl("taint", kubectl, "taint", taints))
    return {
        "selector": {"match_labels": selector},
        "update_strategy": {"type": "RollingUpdate", "rolling_update": {"max_unavailable": "25%"}},
        "template": {
            "metadata": {"labels": selector},
            "spec": {
                "service_account_name": service_account,
                "node_selector": dict(pool.node_selector),
                # The pod must reach every node of the pool, including ones it is about to taint.
                "tolerations": [{"operator": "Exists"}],
                "security_context": {
                    "run_as_non_root": True,
                    "run_as_user": 65532,
                    "run_as_group": 65532,
                    "seccomp_profile": {"type": "RuntimeDefault"},
                },
                "init_containers": init,
                "containers": [
                    {
                        "name": "pause",
                        "image": PAUSE_IMAGE,
                        "security_context": _RESTRICTED_CONTAINER,
                        "resources": {"requests": {"cpu": "1m", "memory": "8Mi"}, "limits": {"memory": "16Mi"}},
                    }
                ],
                "volumes": [{"name": "tmp", "empty_dir": {}}],
            },
        },
    }


class PoolLabels(pulumi.ComponentResource):
    namespace: str
    daemonsets: dict[str, k8s.apps.v1.DaemonSet]  # by pool

    def __init__(self, name: str, args: PoolLabelsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:PoolLabels", name, None, opts)
        model, provider = args.model, args.provider
        for pool in model.pools:
            if not pool.node_selector:
                # An empty selector would label every node of the cluster as this pool.
                raise ValueError(f"pool {pool.name}: provider kubernetes needs a nodeSelector")
        self.namespace = system_namespace(model)
        cluster_name = f"{prefix(model)}-{_APP}"

        namespace = args.namespace
        account = k8s.core.v1.ServiceAccount(
            f"{name}-sa",
            metadata=meta(_APP, self.namespace),
            opts=child_opts(self, provider, [namespace]),
        )
        role = k8s.rbac.v1.ClusterRole(
            f"{name}-role",
            metadata=meta(cluster_name),
            rules=[{"api_groups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}],
            opts=child_opts(self, provider),
        )
        binding = k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-binding",
            metadata=meta(cluster_name),
            role_ref={"api_group": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_name},
            subjects=[{"kind": "ServiceAccount", "name": _APP, "namespace": self.namespace}],
            opts=child_opts(self, provider, [role, account]),
        )
        self.daemonsets = {
            pool.name: k8s.apps.v1.DaemonSet(
                f"{name}-{pool.name}",
                metadata=meta(f"{_APP}-{pool.name}", self.namespace, {POOL_LABEL: pool.name}),
                spec=daemonset_spec(model, pool, _APP),
                opts=child_opts(self, provider, [binding]),
            )
            for pool in model.pools
        }
        self.register_outputs({"namespace": self.namespace})
