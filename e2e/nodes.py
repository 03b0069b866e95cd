"""Nodes as they look on a real cluster.

aws: Karpenter's kwok provider creates GPU nodes from NodeClaims; the EKS managed system node
group is created here. kubernetes: the cluster's existing GPU nodes are created here, carrying
what the pool's nodeSelector selects. On every GPU node, `NodeAgents` then does what the
agents of a real GPU node do once it boots: NFD and GPU feature discovery label it, and the
device plugin (NVIDIA's, or HAMi's) registers the pool's resources, replacing whatever the
node claimed before. A resource no device plugin registers never appears, which is what makes
Karpenter's initialization wait on a real cluster.

Karpenter's kwok provider creates a node already carrying every resource its pods request, which
a kubelet never does. So the kwok controller keeps a node NotReady until it carries `BOOTED`
(see `Cluster.create`), and the agents set that label only after the device plugin's resources
replaced the claimed ones: Karpenter never sees a Ready node with resources nothing registered.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from e2e.cluster import BOOTED, Cluster, E2EError
from e2e.stack import Stack

FAKE = {"kwok.x-k8s.io/node": "fake"}  # the kwok controller keeps these nodes Ready
DONE = "gpuplat.dev/e2e-agents"


def node(name: str, labels: Mapping[str, str], allocatable: Mapping[str, str],
         taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                                  "kubernetes.io/arch": "amd64", BOOTED: "true", **labels},
                         "annotations": dict(FAKE)},
            "spec": {"taints": taints or []},
            "status": {"capacity": dict(allocatable), "allocatable": dict(allocatable)}}


def create(cluster: Cluster, nodes: list[dict[str, Any]]) -> None:
    for manifest in nodes:
        status = manifest.pop("status")
        result = cluster.kubectl("create", "-f", "-", stdin=json.dumps(manifest), check=False)
        if result.returncode != 0 and "AlreadyExists" not in result.stderr:
            raise E2EError(f"creating node {manifest['metadata']['name']}: {result.stderr.strip()}")
        set_status(cluster, manifest["metadata"]["name"], status["capacity"])


def set_status(cluster: Cluster, name: str, allocatable: Mapping[str, str]) -> None:
    patch = [{"op": "replace", "path": "/status/capacity", "value": dict(allocatable)},
             {"op": "replace", "path": "/status/allocatable", "value": dict(allocatable)}]
    result = cluster.kubectl("patch", "node", name, "--subresource=status", "--type=json",
                             "-p", json.dumps(patch), check=False)
    if result.returncode != 0:  # a new node has no status yet: add instead of replace
        patch = [{"op": "add", "path": "/status", "value": {"capacity": dict(allocatable),
                                                            "allocatable": dict(allocatable)}}]
        cluster.kubectl("patch", "node", name, "--subresource=status", "--type=json", "-p", json.dumps(patch))


def system_nodes(stack: Stack) -> list[dict[str, Any]]:
    """The EKS managed node group at its desired size (untainted: system pods and CPU work)."""
    nodes = []
    for group in stack.of_type("aws:eks/nodeGroup:NodeGroup"):
        for i in range(int(group["scalingConfig"]["desiredSize"])):
            labels = {"eks.amazonaws.com/nodegroup": "system",
                      "node.kubernetes.io/instance-type": group["instanceTypes"][0],
                      "eks.amazonaws.com/capacityType": group.get("capacityType", "ON_DEMAND")}
            nodes.append(node(f"system-{i}", labels, {"cpu": "8", "memory": "32Gi", "pods": "58"}))
    return nodes


class NodeAgents:
    """Label and register devices on every GPU node of a pool, once, as it appears."""

    def __init__(self, cluster: Cluster, pools: Mapping[str, Mapping[str, Any]]) -> None:
        self.cluster = cluster
        self.pools = pools  # pool name -> {"labels": {...}, "resources": {...}, "base": {...}}
        self.stop = threading.Event()
        self.errors: list[str] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> NodeAgents:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)

    def _run(self) -> None:
        while not self.stop.wait(1.0):
            try:
                self.sweep()
            except E2EError as err:
                self.errors.append(str(err))

    def sweep(self) -> None:
        for item in self.cluster.items("nodes"):
            labels = item["metadata"].get("labels", {})
            pool = self.pools.get(labels.get("gpuplat.dev/pool", ""))
            name = item["metadata"]["name"]
            if pool is None or labels.get(DONE) == "true":
                if labels.get(BOOTED) != "true":  # a node of no GPU pool: nothing to register
                    patch = {"metadata": {"labels": {BOOTED: "true"}}}
                    self.cluster.kubectl("patch", "node", name, "--type=merge", "-p", json.dumps(patch))
                continue
            base = {k: v for k, v in item["status"].get("allocatable", {}).items()
                    if k in ("cpu", "memory", "pods", "ephemeral-storage")}
            set_status(self.cluster, name, {**base, **pool["resources"]})
            # Discovery adds what is missing; a label the node already carries (an on-prem node's
            # own nvidia.com/gpu.product, which the pool's selector names) stays as it is.
            added = {k: v for k, v in pool["labels"].items() if k not in labels}
            patch = {"metadata": {"labels": {**added, DONE: "true", BOOTED: "true"}}}
            self.cluster.kubectl("patch", "node", name, "--type=merge", "-p", json.dumps(patch))
