"""The kubectl init containers of pods bound to nodes, carried out as their containers would.

kwok runs no container. On provider kubernetes the platform labels and taints an existing
cluster's nodes with a DaemonSet per pool whose init containers run `kubectl label node
$(NODE_NAME) ...` and `kubectl taint node ...` (components/kubernetes/pool_labels.py). The real
DaemonSet controller and scheduler decide which nodes get such a pod (its nodeSelector, affinity
and tolerations); for each pod they bound, this runs each init container's own command, with
`$(VAR)` expanded from the container's environment as the kubelet expands it, as the pod's
service account (so the emitted RBAC is what lets it through), in order, stopping at the first
that fails, which is retried on the next pass as the kubelet restarts a failed init container.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from e2e.cluster import Cluster, service_account_identity

_FIELDS = {"spec.nodeName": lambda pod: pod["spec"].get("nodeName", ""),
           "spec.serviceAccountName": lambda pod: pod["spec"].get("serviceAccountName", "default"),
           "metadata.name": lambda pod: pod["metadata"]["name"],
           "metadata.namespace": lambda pod: pod["metadata"]["namespace"]}


def _is_kubectl(container: Mapping[str, Any]) -> bool:
    command = list(container.get("command") or [])
    return bool(command) and command[0].rsplit("/", 1)[-1] == "kubectl"


def kubectl_pods(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods bound to a node whose init containers are all kubectl commands."""
    return [p for p in pods if p["spec"].get("nodeName") and p["spec"].get("initContainers")
            and all(_is_kubectl(c) for c in p["spec"]["initContainers"])]


def environment(container: Mapping[str, Any], pod: Mapping[str, Any]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in container.get("env") or []:
        if "value" in item:
            env[item["name"]] = str(item["value"])
            continue
        path = ((item.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath", "")
        if path in _FIELDS:
            env[item["name"]] = _FIELDS[path](pod)
    return env


def expand(text: str, env: Mapping[str, str]) -> str:
    """The kubelet's expansion of $(VAR) in a command; $$(VAR) stays literal, unknown stays as written."""
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                  lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), text)


def argv(container: Mapping[str, Any], pod: Mapping[str, Any]) -> list[str]:
    env = environment(container, pod)
    return [expand(str(a), env) for a in [*(container.get("command") or []), *(container.get("args") or [])]]


@dataclass
class PodCommands:
    """Runs each bound kubectl pod's init containers once they all succeed."""

    cluster: Cluster
    done: set[str] = field(default_factory=set[str])
    errors: dict[str, str] = field(default_factory=dict[str, str])

    def run(self, pods: list[dict[str, Any]]) -> None:
        """Over the cluster's pods, as the agents' sweep listed them."""
        for pod in kubectl_pods(pods):
            uid = pod["metadata"]["uid"]
            if uid in self.done:
                continue
            namespace = pod["metadata"]["namespace"]
            account = pod["spec"].get("serviceAccountName", "default")
            identity = service_account_identity(namespace, account)
            for container in pod["spec"]["initContainers"]:
                command = argv(container, pod)
                result = self.cluster.kubectl(*command[1:], check=False, **identity)
                if result.returncode != 0:
                    where = f"init container {container['name']} on {pod['spec']['nodeName']}"
                    self.errors[pod["metadata"]["name"]] = f"{where}: {result.stderr.strip()[-300:]}"
                    break
            else:
                self.done.add(uid)
                self.errors.pop(pod["metadata"]["name"], None)
