"""The real Karpenter (its kwok provider) provisioning from the NodePools the platform emits.

The provider launches no instance: it creates the Node a kubelet would have registered, from
an instance-types file. We generate that file from the catalog (the same CPUs, memory, GPUs
and EFA interfaces the real types advertise) with spot, on-demand and, for reserved NodePools,
reserved offerings keyed by a capacity-reservation id as the AWS provider keys them, sized by
the plan. The provider ignores EC2NodeClass, so each emitted NodePool is applied as emitted
and then pointed at a KWOKNodeClass of the same name.
"""

from __future__ import annotations

import copy
import json
import urllib.request
from collections import defaultdict
from typing import Any

from e2e.cluster import Cluster, E2EError, wait_for
from e2e.gomod import module_dir
from e2e.objects import load_yaml_documents
from e2e.ports import free_port
from e2e.stack import Stack
from gpuplat.catalog.instances import instance_type

NAMESPACE = "karpenter"
RESERVATION_LABEL = "karpenter.k8s.aws/capacity-reservation-id"
KWOK_CLASS = {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass"}
# The toleration of the node monitoring agent's conditions, seconds (e2e/tools/karpenter/main.go:
# upstream's 10 and 30 minutes are longer than a scenario can wait; e2e/repair.py).
REPAIR_TOLERATION = 30.0
# Relative prices only decide between offerings of one NodePool's single instance type.
_PRICE = {"reserved": 0.1, "spot": 0.4, "on-demand": 1.0}


def initialized_condition(claim: dict[str, Any]) -> dict[str, Any]:
    """A NodeClaim's `Initialized` condition ({} before Karpenter set one)."""
    for condition in claim.get("status", {}).get("conditions", []):
        if condition["type"] == "Initialized":
            return dict(condition)
    return {}


def requirement(nodepool: dict[str, Any], key: str) -> list[str]:
    for req in nodepool["spec"]["template"]["spec"].get("requirements", []):
        if req["key"] == key and req["operator"] == "In":
            return list(req["values"])
    return []


def reserved_nodes(stack: Stack) -> dict[str, int]:
    """Reserved nodes per instance type, from the plan's market split."""
    found: dict[str, int] = defaultdict(int)
    for pool in stack.plan["pools"]:
        found[pool["instanceType"]] += pool["markets"]["reserved"]["nodes"]
    return found


def instance_types(stack: Stack) -> list[dict[str, Any]]:
    zones: dict[str, set[str]] = defaultdict(set)
    for nodepool in stack.of_type("kubernetes:karpenter.sh/v1:NodePool"):
        for name in requirement(nodepool, "node.kubernetes.io/instance-type"):
            zones[name].update(requirement(nodepool, "topology.kubernetes.io/zone"))
    reserved = reserved_nodes(stack)
    types = []
    for name in sorted(zones):
        known = instance_type(name)
        if known is None:
            raise E2EError(f"instance type {name} of an emitted NodePool is not in the catalog")
        resources = {"cpu": str(known.vcpus), "memory": f"{known.memory_gib}Gi", "pods": "250",
                     "ephemeral-storage": "500Gi", "nvidia.com/gpu": str(known.gpu_count)}
        if known.efa_interfaces:
            resources["vpc.amazonaws.com/efa"] = str(known.efa_interfaces)
        offerings = []
        for zone in sorted(zones[name]):
            for market in ("spot", "on-demand"):
                offerings.append(_offering(market, zone))
            if reserved[name]:
                offering = _offering("reserved", zone)
                offering["Requirements"].append({"key": RESERVATION_LABEL, "operator": "In",
                                                 "values": [f"cr-e2e-{name.replace('.', '-')}-{zone}"]})
                offering["ReservationCapacity"] = reserved[name]
                offerings.append(offering)
        types.append({"name": name, "architecture": "amd64", "operatingSystems": ["linux"],
                      "resources": resources, "offerings": offerings})
    return types


def _offering(market: str, zone: str) -> dict[str, Any]:
    return {"Price": _PRICE[market], "Available": True, "Requirements": [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [market]},
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]},
    ]}


def kwok_crds() -> list[dict[str, Any]]:
    crd = module_dir("karpenter", "sigs.k8s.io/karpenter") / "kwok" / "apis" / "crds"
    return load_yaml_documents(crd / "karpenter.kwok.sh_kwoknodeclasses.yaml")


def feature_gates(stack: Stack) -> str:
    release = stack.release("karpenter") or {}
    gates = release.get("values", {}).get("settings", {}).get("featureGates", {})
    return ",".join(f"{k[0].upper()}{k[1:]}={str(v).lower()}" for k, v in sorted(gates.items()))


def point_at_kwok(cluster: Cluster, stack: Stack) -> None:
    """A KWOKNodeClass per EC2NodeClass, and each NodePool, applied as emitted before, made again
    pointing at it (a NodePool's nodeClassRef group and kind are immutable)."""
    classes = [{"apiVersion": "karpenter.kwok.sh/v1alpha1", "kind": "KWOKNodeClass",
                "metadata": {"name": c["metadata"]["name"]}}
               for c in stack.of_type("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")]
    refused = cluster.apply(classes)
    nodepools = copy.deepcopy(stack.of_type("kubernetes:karpenter.sh/v1:NodePool"))
    for nodepool in nodepools:
        ref = nodepool["spec"]["template"]["spec"]["nodeClassRef"]
        nodepool["spec"]["template"]["spec"]["nodeClassRef"] = {**KWOK_CLASS, "name": ref["name"]}
    cluster.kubectl("delete", "nodepools.karpenter.sh", "--all", "--wait=true")
    refused += cluster.apply(nodepools)
    if refused:
        raise E2EError(f"pointing NodePools at kwok failed: {refused[0][1]}")


def _healthy(port: int) -> bool | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
            return True if response.status == 200 else None
    except OSError:
        return None


def start(cluster: Cluster, stack: Stack, gates: str | None = None, aws_gates: str = "") -> None:
    """Start the provider; `gates`: the FEATURE_GATES the rendered chart gives the controller
    (the chart turns the release's `settings.featureGates` into it), else read from the values;
    `aws_gates`: its AWS_FEATURE_GATES (our main reads RebootForRepair from it)."""
    path = cluster.workdir / "instance-types.json"
    path.write_text(json.dumps(instance_types(stack), indent=1))
    cluster.kubectl("create", "namespace", NAMESPACE, check=False)
    probe = free_port()
    env = {**cluster.env, "SYSTEM_NAMESPACE": NAMESPACE, "INSTANCE_TYPES_FILE_PATH": str(path),
           "FEATURE_GATES": gates if gates is not None else feature_gates(stack), "DISABLE_LEADER_ELECTION": "true",
           "METRICS_PORT": str(free_port()), "HEALTH_PROBE_PORT": str(probe), "LOG_LEVEL": "debug",
           "BATCH_IDLE_DURATION": "1s", "BATCH_MAX_DURATION": "3s", "REPAIR_TOLERATION": f"{REPAIR_TOLERATION:.0f}s",
           "AWS_FEATURE_GATES": aws_gates}
    cluster.processes.start("karpenter", [str(cluster.tools["karpenter-kwok"])], env=env)
    wait_for(lambda: _healthy(probe), 90, "Karpenter's health probe")
