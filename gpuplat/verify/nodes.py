# pyright: strict
"""Steps 4-5: the nodes a placement lands on, and whether the autoscaler knows they fit.

aws: Karpenter launches a node for a pending pod from a NodePool whose labels (template labels,
its requirements' values and `karpenter.sh/nodepool`) satisfy the pod's node selector, whose
taints the pod tolerates, and whose limits leave room. It only launches when its simulation
sees the instance type offer what the pod asks for: `nvidia.com/gpu` comes from the instance
type's GPUs; any other extended resource (MIG slices, shared GPUs) only from a NodeOverlay
(karpenter.sh/v1alpha1) matching the NodePool, and only with the `NodeOverlay` feature gate on
in the controller. Without them the pod stays pending and no node ever comes.

kubernetes: the nodes exist; their labels are the pool's nodeSelector plus what the platform's
pool labeler DaemonSet writes (`kubectl label` / `kubectl taint` arguments).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpuplat.catalog import GPU_RESOURCE, instance_type
from gpuplat.model import GpuNodePool

from .k8s import Obj, as_list, as_map, describe, dig, labels_text, quantity, requirement_allows, untolerated
from .repair import feature_gates
from .types import CAPACITY, NODES, Nodes, Outcome, Placement, Step, not_checked
from .view import View

NODEPOOL_LABEL = "karpenter.sh/nodepool"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"


def _requirements(node_pool: Obj) -> list[Obj]:
    return [as_map(r) for r in as_list(dig(node_pool, "spec", "template", "spec", "requirements"))]


def node_pool_labels(node_pool: Obj) -> dict[str, str]:
    """Labels a NodePool's nodes certainly carry: template labels, single-valued `In`
    requirements and the NodePool's name."""
    labels = {str(k): str(v) for k, v in as_map(dig(node_pool, "spec", "template", "metadata", "labels")).items()}
    for req in _requirements(node_pool):
        values = as_list(req.get("values"))
        if req.get("operator") == "In" and len(values) == 1:
            labels[str(req.get("key"))] = str(values[0])
    labels[NODEPOOL_LABEL] = str(dig(node_pool, "metadata", "name"))
    return labels


def _selects(node_pool: Obj, wanted: dict[str, str]) -> bool:
    """Can a node of this NodePool carry every wanted label (a value its requirements allow)?"""
    template = {str(k): str(v) for k, v in as_map(dig(node_pool, "spec", "template", "metadata", "labels")).items()}
    for key, value in wanted.items():
        if key == NODEPOOL_LABEL:
            if value != dig(node_pool, "metadata", "name"):
                return False
            continue
        reqs = [r for r in _requirements(node_pool) if r.get("key") == key]
        if key in template:
            if template[key] != value:
                return False
        elif not reqs:
            return False
        if not all(requirement_allows(r, {key: value}) for r in reqs):
            return False
    return True


def _instance_types(node_pool: Obj) -> tuple[str, ...]:
    for req in _requirements(node_pool):
        if req.get("key") == INSTANCE_TYPE_LABEL and req.get("operator") == "In":
            return tuple(str(v) for v in as_list(req.get("values")))
    return ()


def _gpu_limit_problem(node_pool: Obj) -> str | None:
    """A limit at zero (or unreadable) on any resource: Karpenter launches nothing for the pool.
    The GPU limit binds while a node launches, the unit limits (MIG, shared, fractional) once
    it is initialized; either at zero stops the pool."""
    limits = as_map(dig(node_pool, "spec", "limits"))
    for name in sorted(limits, key=lambda n: (n != GPU_RESOURCE, str(n))):
        value = quantity(limits[name])
        if value is None or value <= 0:
            return f"limits {name} to {limits[name]}"
    return None


def karpenter_nodes_step(view: View, placement: Placement) -> Outcome:
    prefix = f"flavor {placement.flavor}"
    # Every journey through a flavor asks the same question: answer it once per label set.
    key = ("nodepools-selecting", tuple(sorted((str(k), str(v)) for k, v in placement.node_labels.items())))
    if key not in view.memo:
        view.memo[key] = [p for p in view.find("NodePool") if _selects(p, placement.node_labels)]
    pools: list[Obj] = view.memo[key]
    if not pools:
        return Outcome(
            Step(
                NODES,
                False,
                f"{prefix}: no Karpenter NodePool can launch nodes labelled {labels_text(placement.node_labels)}",
            )
        )
    problems: list[str] = []
    for node_pool in pools:
        taints = [as_map(t) for t in as_list(dig(node_pool, "spec", "template", "spec", "taints"))]
        refused = untolerated(taints, placement.tolerations)
        limit = _gpu_limit_problem(node_pool) or _node_class_problem(view, node_pool)
        if refused:
            problems.append(f"{describe(node_pool)} taints {', '.join(refused)}, which the job does not tolerate")
        elif limit:
            problems.append(f"{describe(node_pool)} {limit}")
        else:
            nodes = Nodes(
                describe(node_pool), node_pool_labels(node_pool), taints, node_pool, _instance_types(node_pool)
            )
            detail = (
                f"{prefix}: {describe(node_pool)} carries its labels, taints tolerated, GPU limit {_limit(node_pool)}"
            )
            return Outcome(Step(NODES, True, detail), nodes)
    return Outcome(Step(NODES, False, f"{prefix}: " + "; ".join(problems)))


def _node_class_problem(view: View, node_pool: Obj) -> str | None:
    ref = as_map(dig(node_pool, "spec", "template", "spec", "nodeClassRef"))
    kind, name = str(ref.get("kind") or "EC2NodeClass"), str(ref.get("name"))
    return None if view.find(kind, name=name) else f"names {kind} {name}, which is not emitted"


def _limit(node_pool: Obj) -> str:
    return str(as_map(dig(node_pool, "spec", "limits")).get(GPU_RESOURCE, "none"))


# ---- provider kubernetes: existing nodes and the pool labeler ------------------------------------


def _kubectl_args(container: Obj, verb: str) -> list[str]:
    command = [str(c) for c in as_list(container.get("command")) + as_list(container.get("args"))]
    if verb not in command:
        return []
    return [
        a for a in command[command.index(verb) + 1 :] if a not in ("node", "$(NODE_NAME)") and not a.startswith("-")
    ]


def _labeler(view: View, pool: GpuNodePool) -> Obj | None:
    """The DaemonSet scheduled by the pool's nodeSelector that runs `kubectl label node`."""
    for ds in view.find("DaemonSet"):
        spec = as_map(dig(ds, "spec", "template", "spec"))
        if as_map(spec.get("nodeSelector")) != dict(pool.node_selector):
            continue
        if any(_kubectl_args(as_map(c), "label") for c in as_list(spec.get("initContainers"))):
            return ds
    return None


def _parse_taint(text: str) -> dict[str, Any]:
    head, _, effect = text.rpartition(":")
    key, _, value = head.partition("=")
    return {"key": key, "value": value, "effect": effect} if value else {"key": key, "effect": effect}


def existing_nodes(view: View, pool: GpuNodePool) -> Nodes:
    labels = {str(k): str(v) for k, v in pool.node_selector.items()}
    taints: list[dict[str, Any]] = []
    labeler = _labeler(view, pool)
    source = "the pool's nodeSelector"
    if labeler is not None:
        source += f" + {describe(labeler)}"
        for container in as_list(dig(labeler, "spec", "template", "spec", "initContainers")):
            for arg in _kubectl_args(as_map(container), "label"):
                key, sep, value = arg.partition("=")
                if sep:
                    labels[key] = value
            taints += [_parse_taint(a) for a in _kubectl_args(as_map(container), "taint")]
    return Nodes(source, labels, taints)


def existing_nodes_step(view: View, pool: GpuNodePool, placement: Placement) -> Outcome:
    prefix = f"flavor {placement.flavor}"
    nodes = existing_nodes(view, pool)
    missing = {k: v for k, v in placement.node_labels.items() if nodes.labels.get(k) != v}
    if missing:
        return Outcome(Step(NODES, False, f"{prefix}: {nodes.source} do not carry {labels_text(missing)}"))
    refused = untolerated(nodes.taints, placement.tolerations)
    if refused:
        return Outcome(
            Step(NODES, False, f"{prefix}: the pool's nodes are tainted {', '.join(refused)}, not tolerated")
        )
    return Outcome(Step(NODES, True, f"{prefix}: {nodes.source} carry {labels_text(placement.node_labels)}"), nodes)


# ---- step 5: what Karpenter believes the nodes offer ---------------------------------------------


def _overlay_matches(overlay: Obj, nodes: Nodes) -> bool:
    reqs = [as_map(r) for r in as_list(dig(overlay, "spec", "requirements"))]
    labels = dict(nodes.labels)
    if nodes.instance_types:
        labels.setdefault(INSTANCE_TYPE_LABEL, nodes.instance_types[0])
    return all(requirement_allows(r, labels) for r in reqs)


def _feature_gate_on(view: View) -> tuple[bool | None, str]:
    """Whether Karpenter runs with the NodeOverlay gate on (None: unknown, its chart not given)."""
    gates, said = feature_gates(view)
    return (None if gates is None else gates.get("NodeOverlay", False)), said


def _unregistered(overlays: Sequence[Obj], registered: Sequence[str]) -> list[str]:
    """Resources the overlays declare that no device plugin registers on the node: Karpenter
    launches a node for a pod asking for one and then waits for it in the node's allocatable
    before initializing it (nodeclaim/lifecycle/initialization.go RequestedResourcesRegistered);
    the node never initializes, so it is never disrupted or removed."""
    declared = {str(r) for o in overlays for r in as_map(dig(o, "spec", "capacity"))}
    return sorted(declared - set(registered))


def capacity_step(view: View, nodes: Nodes, resource: str, flavor: str, registered: Sequence[str] = ()) -> Step:
    prefix = f"flavor {flavor}: {nodes.source}"
    if resource == GPU_RESOURCE:
        gpus = [(t, it.gpu_count if (it := instance_type(t)) else 0) for t in nodes.instance_types]
        if gpus and all(n > 0 for _, n in gpus):
            shown = ", ".join(f"{t} ({n} GPUs)" for t, n in gpus)
            return Step(CAPACITY, True, f"{prefix}: Karpenter knows {resource} from {shown}")
        return Step(CAPACITY, False, f"{prefix}: instance types {list(nodes.instance_types)} offer no {resource}")
    overlays = [
        o
        for o in view.find("NodeOverlay")
        if _overlay_matches(o, nodes) and (quantity(as_map(dig(o, "spec", "capacity")).get(resource)) or 0) >= 1
    ]
    if not overlays:
        return Step(
            CAPACITY,
            False,
            f"{prefix}: no NodeOverlay matching it adds {resource} capacity; Karpenter only knows "
            f"{GPU_RESOURCE} of an instance type, so a pod asking for {resource} never gets a node",
        )
    on, gates = _feature_gate_on(view)
    names = ", ".join(describe(o) for o in overlays)
    never = _unregistered(overlays, registered or (resource,))
    if never:
        return Step(
            CAPACITY,
            False,
            f"{prefix}: {names} declares {', '.join(never)}, which no device plugin registers on the node: "
            "Karpenter launches nodes for pods asking for it and never initializes them",
        )
    if on is None:
        return not_checked(CAPACITY, f"{prefix}: {names} adds {resource}; whether its feature gate is on: {gates}")
    if not on:
        return Step(
            CAPACITY, False, f"{prefix}: {names} adds {resource}, but the NodeOverlay feature gate is off ({gates})"
        )
    return Step(CAPACITY, True, f"{prefix}: {names} adds {resource}; NodeOverlay feature gate on")
