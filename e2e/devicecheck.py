"""The suite's device check: what each pool's nodes register, against what the spec asks for.

The spec's sharing section says what a node of a pool serves: exclusive GPUs as nvidia.com/gpu,
time-slicing and MPS replicas as nvidia.com/gpu.shared, HAMi's vGPUs as
nvidia.com/gpu.fractional (the names the platform documents for tenants), and MIG instances per
profile. What the nodes register instead comes from the emitted configuration through the
node agents (e2e/devices.py). aws: a node of every emitted NodePool, as Karpenter would create
it (the template's labels and taints, the instance type, the capacity type); kubernetes: the
cluster's GPU nodes as they are once the pool labeler ran, each in the pool whose nodeSelector
selects it. The scenario `devices-<pool>` passes when every such node registers exactly the
spec's units; the device edits of e2e/devicemutations.py must make it fail.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from e2e.cluster import Cluster, E2EError
from e2e.devices import DeviceModel, Registration
from e2e.expect import SpecError, spec_model
from e2e.expect import units_per_node as expected_units
from e2e.operands import selects
from e2e.stack import Stack, Target
from gpuplat.model import GpuNodePool

POOL_LABEL = "gpuplat.dev/pool"
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"


def spec_pools(target: Target) -> list[GpuNodePool]:
    """The target's pools, read from its spec (and overlay) by the compiler's front end."""
    try:
        return list(spec_model(target).pools)
    except SpecError as err:
        raise E2EError(str(err)) from None


@dataclass(frozen=True)
class NodeKind:
    """A node the check evaluates: a real one (kubernetes) or one a NodePool would make (aws)."""

    pool: str
    name: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    taints: list[dict[str, Any]]


def nodepool_nodes(stack: Stack) -> list[NodeKind]:
    """A node of each emitted NodePool, with what Karpenter writes on the nodes it launches."""
    found = []
    for nodepool in stack.of_type(NODE_POOL):
        template = nodepool["spec"]["template"]
        labels = dict(template.get("metadata", {}).get("labels", {}))
        pool = labels.get(POOL_LABEL)
        if pool is None:
            continue  # the CPU NodePool
        for req in template["spec"].get("requirements", []):
            if req.get("operator") == "In" and len(req.get("values", [])) >= 1:
                labels.setdefault(req["key"], req["values"][0])
        labels["karpenter.sh/nodepool"] = nodepool["metadata"]["name"]
        found.append(NodeKind(pool, f"{nodepool['metadata']['name']}-node", labels, {},
                              list(template["spec"].get("taints", []))))
    return found


def cluster_nodes(cluster: Cluster, pools: Iterable[GpuNodePool]) -> list[NodeKind]:
    """The cluster's nodes each pool's nodeSelector selects."""
    found = []
    items = cluster.items("nodes")
    for pool in pools:
        for item in items:
            labels = item["metadata"].get("labels", {})
            if not selects(dict(pool.node_selector), labels):
                found.append(NodeKind(pool.name, item["metadata"]["name"], labels,
                                      item["metadata"].get("annotations", {}), list(item["spec"].get("taints") or [])))
    return found


def problems(model: DeviceModel, pools: Iterable[GpuNodePool], nodes: Iterable[NodeKind]) -> dict[str, list[str]]:
    """Per pool, why its nodes do not serve what the spec asks (empty lists: they do), and per
    pool one line of what its nodes register."""
    by_pool = {p.name: p for p in pools}
    found: dict[str, list[str]] = {name: [] for name in by_pool}
    for node in nodes:
        pool = by_pool.get(node.pool)
        if pool is None:
            continue
        if node.labels.get(POOL_LABEL) != node.pool:
            found[node.pool].append(f"{node.name} (selected by the pool's nodeSelector) carries "
                                    f"{POOL_LABEL}={node.labels.get(POOL_LABEL)}, not {node.pool}")
        registered = model.register(node.name, node.labels, node.annotations, node.taints)
        wanted = expected_units(pool)
        if registered is None:
            found[node.pool].append(f"{node.name}: no GPUs found on the node")
            continue
        wrong = {k: v for k, v in wanted.items() if registered.resources.get(k, 0) != v}
        if wrong:
            found[node.pool].append(
                f"{node.name} registers {_units(registered.resources)} where the spec's "
                f"{pool.sharing.mode.value} sharing asks for {_units(wanted)} ({registered.detail})")
    return found


def _units(resources: Mapping[str, int]) -> str:
    shown = {k: v for k, v in resources.items() if k.startswith("nvidia.com/")}
    return ", ".join(f"{k}: {v}" for k, v in sorted(shown.items())) or "nothing"


def describe(registration: Registration | None) -> str:
    return "no GPUs" if registration is None else f"{_units(registration.resources)} ({registration.detail})"
