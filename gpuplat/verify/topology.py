# pyright: strict
"""Step 3b: a topology-aware flavor takes only jobs that ask for a placement (Kueue 0.19).

Kueue's flavor assigner (`pkg/scheduler/flavorassigner/tas_flavorassigner.go`,
`checkPodSetAndFlavorMatchForTAS`) decides, per pod set and flavor:
- the pod set asks for a placement (a `kueue.x-k8s.io/podset-*-topology` annotation): the flavor
  must name a Topology, which must hold the requested level ("Flavor ... does not support
  TopologyAwareScheduling" / "does not contain the requested level"); a flavor without one is
  still taken when its resource group covers none of the pod's resources;
- it asks for none: a flavor naming a Topology is refused ("Flavor ... supports only
  TopologyAwareScheduling") unless every flavor of every resource group of the ClusterQueue names
  one (`isTASOnly`), where a placement is implied for every job.

On aws a second check follows the nodes step (`node_levels_step`): Kueue's topology snapshot
counts only nodes carrying every level's label, so the NodePool's instance types must be ones EKS
labels with their network nodes.

The job followed is the default job of docs/tenants.md: on a pool whose flavor names a Topology
it asks for `kubernetes.io/hostname` (the annotation the tenant documentation asks for); elsewhere
it asks for nothing. The step also says whether the same job without the annotation would be
taken, which is what a tenant who skipped it meets.
"""

from __future__ import annotations

import re

from gpuplat.catalog import instance_type

from .k8s import Obj, as_list, as_map, dig
from .types import TOPOLOGY, Nodes, Step
from .view import View

HOST_LEVEL = "kubernetes.io/hostname"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
# EKS's label of an instance's network node at layer <n> (1 the farthest), set only on the types
# EC2's instance topology describes (gpuplat/catalog/instances.py NETWORK_NODE_LAYERS).
_NETWORK_NODE_LEVEL = re.compile(r"topology\.k8s\.aws/network-node-layer-(\d+)")


def _flavor_names(queue: Obj) -> list[str]:
    return [
        str(as_map(f).get("name"))
        for g in as_list(dig(queue, "spec", "resourceGroups"))
        for f in as_list(as_map(g).get("flavors"))
    ]


def _topology_name(view: View, flavor: str) -> str | None:
    found = view.find("ResourceFlavor", name=flavor)
    name = dig(found[0], "spec", "topologyName") if found else None
    return str(name) if name else None


def tas_only(view: View, queue: Obj) -> bool:
    """Kueue's `isTASOnly`: every flavor of every resource group names a Topology."""
    names = _flavor_names(queue)
    return bool(names) and all(_topology_name(view, n) for n in names)


def asks_placement(pool_flavors: list[Obj]) -> bool:
    """Whether the default job on this pool carries the placement annotation: it does on a pool
    one of whose flavors names a Topology (docs/tenants.md)."""
    return any(dig(f, "spec", "topologyName") for f in pool_flavors)


def topology_step(view: View, queue: Obj, flavor: Obj, asks: bool) -> Step | None:
    """The TAS rule for one flavor; None where it has nothing to say (no Topology, no request)."""
    name = str(dig(flavor, "metadata", "name"))
    topology = dig(flavor, "spec", "topologyName")
    cq = f"ClusterQueue {dig(queue, 'metadata', 'name')}"
    if not topology:
        if not asks:
            return None
        return Step(
            TOPOLOGY,
            False,
            f"ResourceFlavor {name} names no Topology, and the pool's job asks for a placement "
            f'({PREFERRED}): Kueue skips it ("does not support TopologyAwareScheduling")',
        )
    implied = tas_only(view, queue)
    without = (
        f"{cq} is topology-only, so a job without {PREFERRED} gets a placement implied"
        if implied
        else f"{cq} also has flavors without a Topology, so a job without {PREFERRED} waits "
        f'("Flavor {name} supports only TopologyAwareScheduling")'
    )
    found = view.find("Topology", name=str(topology))
    if not found:
        return Step(TOPOLOGY, False, f"ResourceFlavor {name} names Topology {topology}, which is not emitted")
    levels = _level_labels(found[0])
    if asks and HOST_LEVEL not in levels:
        return Step(
            TOPOLOGY,
            False,
            f"Topology {topology} of ResourceFlavor {name} has no level {HOST_LEVEL} (levels {', '.join(levels)}): "
            f'a job asking for it waits ("does not contain the requested level")',
        )
    return Step(
        TOPOLOGY,
        True,
        f"ResourceFlavor {name} names Topology {topology}: the job asks for {PREFERRED}: {HOST_LEVEL}, "
        f"a level it holds; {without}",
    )


def _level_labels(topology: Obj) -> list[str]:
    return [str(as_map(level).get("nodeLabel")) for level in as_list(dig(topology, "spec", "levels"))]


def _levels(view: View, flavor: Obj) -> list[str]:
    """The node labels of the levels of the Topology a flavor names ([] where it names none)."""
    topology = dig(flavor, "spec", "topologyName")
    found = view.find("Topology", name=str(topology)) if topology else []
    return _level_labels(found[0]) if found else []


def node_levels_step(view: View, flavor: Obj, nodes: Nodes) -> Step | None:
    """aws: Kueue's topology-aware placement counts only nodes carrying every level's label, and
    EKS writes the network-node layers only on the types EC2's instance topology describes (the
    e2e suite saw a g5 pool's jobs wait forever). None where the flavor names no such level."""
    deepest = max(
        (int(m.group(1)) for lv in _levels(view, flavor) if (m := _NETWORK_NODE_LEVEL.fullmatch(lv))), default=0
    )
    if not deepest:
        return None
    name = dig(flavor, "metadata", "name")
    bare = [
        t for t in nodes.instance_types if (known := instance_type(t)) is None or known.network_node_layers < deepest
    ]
    if bare or not nodes.instance_types:
        types = ", ".join(bare) or "any type (the NodePool names none)"
        return Step(
            TOPOLOGY,
            False,
            f"ResourceFlavor {name}'s Topology needs topology.k8s.aws/network-node-layer-1..{deepest} on its nodes, "
            f"which EKS does not write on {types} (EC2's instance topology does not describe it): Kueue's "
            f"topology-aware placement sees no node of {nodes.source}, and the job waits",
        )
    return Step(TOPOLOGY, True, f"{nodes.source}'s instance types carry the network-node layers its Topology names")
