"""Nodes as they look on a real cluster.

aws: Karpenter's kwok provider creates GPU nodes from NodeClaims; the EKS managed system node
group is created here. kubernetes: the cluster's existing GPU nodes are created here, carrying
what the pool's nodeSelector selects and nothing of the platform's own (the pool labeler's pods
add that, e2e/podcommands.py). On every GPU node, `NodeAgents` then does what the agents of a
real GPU node do once it boots: what e2e/devices.py derives from the emitted configuration and
the node's labels (NFD, the GPU Operator's labels, MIG, the device plugin's or HAMi's
resources), replacing whatever the node claimed before. A resource no device plugin registers
never appears, which is what makes Karpenter's initialization wait on a real cluster.

Karpenter's kwok provider creates a node already carrying every resource its pods request, which
a kubelet never does. So the kwok controller keeps a node NotReady until it carries `BOOTED`
(see `Cluster.create`), and the agents set that label only after the device plugin's resources
replaced the claimed ones: Karpenter never sees a Ready node with resources nothing registered.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from e2e.cluster import BOOTED, Cluster, E2EError
from e2e.devices import DeviceModel
from e2e.podcommands import PodCommands
from e2e.stack import Stack

FAKE = {"kwok.x-k8s.io/node": "fake"}  # the kwok controller keeps these nodes Ready
DONE = "gpuplat.dev/e2e-agents"
_BASE = ("cpu", "memory", "pods", "ephemeral-storage")  # what the kubelet itself reports
WOKEN = "gpuplat.dev/e2e-woken"
STRANDED_AFTER = 5.0  # seconds a pod may wait, bound to a Ready booted node, before it is woken


def node(name: str, labels: Mapping[str, str], allocatable: Mapping[str, str],
         taints: list[dict[str, str]] | None = None, annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                                  "kubernetes.io/arch": "amd64", BOOTED: "true", **labels},
                         "annotations": {**FAKE, **(annotations or {})}},
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
    """The nodes that serve no GPU. aws: the EKS managed node group at its desired size
    (untainted: system pods and CPU work), spread over the zones of the cluster's NodePools as
    over its subnets, each with its zone label as EKS sets it (Karpenter's chart spreads its
    controller over zones). kubernetes: the existing cluster's own node for its services."""
    zones = sorted({zone for pool in stack.of_type("kubernetes:karpenter.sh/v1:NodePool")
                    for req in pool["spec"]["template"]["spec"].get("requirements", [])
                    if req["key"] == "topology.kubernetes.io/zone" and req["operator"] == "In"
                    for zone in req["values"]})
    nodes = []
    for group in stack.of_type("aws:eks/nodeGroup:NodeGroup"):
        for i in range(int(group["scalingConfig"]["desiredSize"])):
            labels = {"eks.amazonaws.com/nodegroup": "system",
                      "node.kubernetes.io/instance-type": group["instanceTypes"][0],
                      "eks.amazonaws.com/capacityType": group.get("capacityType", "ON_DEMAND"),
                      **({"topology.kubernetes.io/zone": zones[i % len(zones)]} if zones else {})}
            nodes.append(node(f"system-{i}", labels, {"cpu": "8", "memory": "32Gi", "pods": "58"}))
    if stack.provider == "kubernetes":
        nodes.append(node("system-0", {}, {"cpu": "8", "memory": "32Gi", "pods": "110"}))
    return nodes


class NodeAgents:
    """The node agents of every GPU node, as a reconcile loop: what the node registers and the
    labels its agents add follow its current labels and taints (a device-plugin config label
    set later re-configures the plugin, as its config manager does), and each bound pod whose
    init containers are kubectl commands (the pool labeler) has them carried out first."""

    def __init__(self, cluster: Cluster, model: DeviceModel | None,
                 extra: Callable[[Mapping[str, str]], Mapping[str, int]] | None = None) -> None:
        self.cluster = cluster
        self.model = model  # None: no GPU node registers anything
        self.extra = extra  # further device plugins' resources by the node's labels (e2e/rails.py: SR-IOV VFs)
        self.commands = PodCommands(cluster)
        self.stop = threading.Event()
        self.errors: list[str] = []
        self.details: dict[str, str] = {}  # node -> what its agents did
        self.woken: dict[str, float] = {}  # pod uid -> when it was last woken
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
        pods = self.cluster.items("pods")
        self.commands.run(pods)
        nodes = self.cluster.items("nodes")
        self.wake_stranded(nodes, pods)
        for item in nodes:
            labels = item["metadata"].get("labels", {})
            name = item["metadata"]["name"]
            taints = list(item["spec"].get("taints") or [])
            registered = None if self.model is None else \
                self.model.register(name, labels, item["metadata"].get("annotations", {}), taints)
            if registered is None:
                if labels.get(BOOTED) != "true":  # a node without GPUs: nothing to register
                    patch = {"metadata": {"labels": {BOOTED: "true"}}}
                    self.cluster.kubectl("patch", "node", name, "--type=merge", "-p", json.dumps(patch))
                continue
            allocatable = item["status"].get("allocatable", {})
            base = {k: v for k, v in allocatable.items() if k in _BASE}
            more = self.extra(labels) if self.extra is not None else {}
            wanted = {**base, **{k: str(v) for k, v in {**registered.resources, **more}.items()}}
            if {k: v for k, v in allocatable.items()} != wanted:
                set_status(self.cluster, name, wanted)
            added = {k: v for k, v in {**registered.labels, DONE: "true", BOOTED: "true"}.items()
                     if labels.get(k) != v}
            if added:
                patch = {"metadata": {"labels": added}}
                self.cluster.kubectl("patch", "node", name, "--type=merge", "-p", json.dumps(patch))
            # Published last: a scenario that waits on it submits its job once the node says so.
            self.details[name] = registered.detail

    def wake_stranded(self, nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
        """Start the pods the kwok controller missed. A pod the scheduler bound to a node in the
        second before the kwok controller took the node over (its agents had just booted it)
        stays Pending: kwok looked for the node's pods when it took it, before the binding
        reached it, and nothing about the pod changes after. A kubelet would start it; an
        annotation makes kwok see the pod again. Runs that lost a floor's placeholder this way
        for minutes: bench/results.md."""
        ready = {n["metadata"]["name"] for n in nodes if n["metadata"].get("labels", {}).get(BOOTED) == "true"
                 and any(c["type"] == "Ready" and c["status"] == "True"
                         for c in n.get("status", {}).get("conditions", []))}
        now = time.time()
        for pod in pods:
            status, uid = pod.get("status", {}), pod["metadata"]["uid"]
            bound = next((c.get("lastTransitionTime") for c in status.get("conditions", [])
                          if c["type"] == "PodScheduled" and c["status"] == "True"), None)
            if (pod["spec"].get("nodeName") not in ready or status.get("phase") != "Pending" or bound is None
                    or pod["metadata"].get("deletionTimestamp") or now - self.woken.get(uid, 0) < STRANDED_AFTER
                    or now - datetime.fromisoformat(bound.replace("Z", "+00:00")).timestamp() < STRANDED_AFTER):
                continue
            self.woken[uid] = now
            patch = {"metadata": {"annotations": {WOKEN: str(now)}}}
            self.cluster.kubectl("patch", "pod", pod["metadata"]["name"], "-n", pod["metadata"]["namespace"],
                                 "--type=merge", "-p", json.dumps(patch), check=False)
