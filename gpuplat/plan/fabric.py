"""Fabric: the fat-tree that holds every fabric node at max size.

Host ports H = sum over fabric pools of nodes.max x ports per node, where ports per node =
ceil(instance network Gbps / linkGbps) on aws (p5.48xlarge: 3200 / 400 = 8) and
`nicsPerNode` on kubernetes. Radix k (ports per switch), link speed b, oversubscription r
(down:up at the leaf; every tier above the leaf is non-blocking):

    leaf down d = round(k r / (r + 1))  (half up; k/2 at r = 1), clamped to 1..k-1
    leaf up   u = k - d
    leaves    L = ceil(H / d)

2 tiers (leaf/spine): every leaf has the same number of links to every spine.
    spines = the smallest divisor of u that is >= ceil(L u / k)  (ceil(L u / k) when that
             divides u, as in most fabrics; the divisor keeps the wiring even, which the
             bisection below needs)
    links  = L u                    max hosts = k d
    (a spine has k ports and each leaf needs one to every spine, so at most k leaves)

3 tiers (leaf/spine/core): pods of up to k/2 leaves. A spine (aggregation switch) has k/2
ports down and k/2 up; a core has one port per pod, so at most k pods.
    pods   = ceil(L / (k/2))
    spines = u per full pod; a partial pod of l leaves: the smallest divisor of u that is
             >= ceil(l u / (k/2))
    cores  = ceil(L u / k)          links = 2 L u (leaf-spine + spine-core)
    max hosts = k x (k/2) x d       (k^3/4 at r = 1; cores (k/2)^2 then)

switches = leaves + spines + cores; links count switch-to-switch links only.
Bisection bandwidth = L u b / 2: cutting the leaves in half, half of the leaf uplinks cross
the cut (the spine and core tiers have as much capacity as the leaf uplinks). At r = 1 and
full leaves that is H b / 2; at r it is about H b / (2 r). The tests build the switch graph
and find the minimum balanced cut by max-flow: equal when the hosts fill an even number of
leaves; otherwise a cut must split a leaf and the true value is within u b / 2 of this.

A fabric whose H exceeds max hosts is an error (GP240) naming the smallest radix that fits
at its tiers and, for 2 tiers, what 3 tiers of the same radix hold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuplat.catalog import instance_type
from gpuplat.model import Fabric, GpuNodePool, Platform, Provider
from gpuplat.plan.codes import FABRIC_TOO_SMALL
from gpuplat.plan.types import FabricPlan, FlavorPlan, PlanFinding

MAX_RADIX = 1024
# The Kueue Topology's levels (components/kubernetes/fabric_topology.py emits it): on aws the
# network-node layers EKS labels, layer 1 the farthest from the instance; on kubernetes the
# site's `topologyLabels`, widest first; then the host.
EKS_TOPOLOGY_LEVELS = (
    "topology.k8s.aws/network-node-layer-1",
    "topology.k8s.aws/network-node-layer-2",
    "topology.k8s.aws/network-node-layer-3",
)
HOST_LEVEL = "kubernetes.io/hostname"


@dataclass(frozen=True)
class FatTree:
    leaf_down: int
    leaf_up: int
    leaves: int
    spines: int
    cores: int
    pods: int
    links: int
    max_hosts: int

    @property
    def switches(self) -> int:
        return self.leaves + self.spines + self.cores


def leaf_ports(radix: int, oversubscription: float) -> tuple[int, int]:
    down = math.floor(radix * oversubscription / (oversubscription + 1) + 0.5)
    down = min(max(down, 1), radix - 1)
    return down, radix - down


def max_hosts(tiers: int, radix: int, oversubscription: float) -> int:
    down, _ = leaf_ports(radix, oversubscription)
    return radix * down if tiers == 2 else radix * (radix // 2) * down


def even_spines(leaves: int, up: int, ports: int) -> int:
    """Fewest spines that take `leaves` x `up` uplinks on `ports` ports each, wired evenly:
    a divisor of `up`, so every leaf has up / spines parallel links to every spine. Uneven
    wiring would lose bisection (the tests show it)."""
    need = math.ceil(leaves * up / ports)
    return next((s for s in range(max(need, 1), up + 1) if up % s == 0), need)


def fat_tree(hosts: int, tiers: int, radix: int, oversubscription: float) -> FatTree:
    down, up = leaf_ports(radix, oversubscription)
    leaves = math.ceil(hosts / down)
    limit = max_hosts(tiers, radix, oversubscription)
    if tiers == 2:
        spines = even_spines(leaves, up, radix) if leaves else 0
        return FatTree(down, up, leaves, spines, 0, 0, leaves * up, limit)
    half = radix // 2
    pods = math.ceil(leaves / half)
    full, rest = divmod(leaves, half)
    spines = full * up + (even_spines(rest, up, half) if rest else 0)
    cores = math.ceil(leaves * up / radix)
    return FatTree(down, up, leaves, spines, cores, pods, 2 * leaves * up, limit)


def ports_per_node(pool: GpuNodePool, fabric: Fabric) -> int:
    if pool.nics_per_node is not None:
        return pool.nics_per_node
    itype = instance_type(pool.instance_type or "")
    assert itype is not None, "validation guarantees a catalog instance type"
    return math.ceil(itype.network_gbps / fabric.link_gbps)


def efa_interfaces(pool: GpuNodePool, model: Platform) -> int:
    """One EFA interface per network card on aws fabric pools."""
    if model.target.provider is not Provider.AWS or not pool.fabric or pool.instance_type is None:
        return 0
    itype = instance_type(pool.instance_type)
    return itype.network_cards if itype is not None else 0


def smallest_radix(hosts: int, tiers: int, oversubscription: float, start: int) -> int | None:
    for radix in range(max(4, start + start % 2), MAX_RADIX + 1, 2):
        if max_hosts(tiers, radix, oversubscription) >= hosts:
            return radix
    return None


def plan_fabric(model: Platform) -> tuple[FabricPlan | None, tuple[PlanFinding, ...]]:
    fabric = model.network.fabric
    pools = model.fabric_pools
    if fabric is None or not pools:
        return None, ()
    hosts = sum(p.nodes.max * ports_per_node(p, fabric) for p in pools)
    k, r, tiers = fabric.switch_radix, fabric.oversubscription, fabric.tiers
    tree = fat_tree(hosts, tiers, k, r)
    plan = FabricPlan(
        tiers=tiers,
        radix=k,
        oversubscription=r,
        link_gbps=fabric.link_gbps,
        hosts=hosts,
        leaf_down=tree.leaf_down,
        leaf_up=tree.leaf_up,
        leaves=tree.leaves,
        spines=tree.spines,
        cores=tree.cores,
        switches=tree.switches,
        links=tree.links,
        bisection_gbps=tree.leaves * tree.leaf_up * fabric.link_gbps / 2,
        max_hosts=tree.max_hosts,
        pods=tree.pods,
        pools=tuple(p.name for p in pools),
    )
    if hosts <= tree.max_hosts:
        return plan, ()
    detail = " + ".join(f"{p.name} {p.nodes.max} nodes x {ports_per_node(p, fabric)} ports" for p in pools)
    fits = smallest_radix(hosts, tiers, r, k)
    hints = [f"radix {fits} at {tiers} tiers" if fits else f"no radix up to {MAX_RADIX} at {tiers} tiers"]
    if tiers == 2:
        three = max_hosts(3, k, r)
        hints.append(f"3 tiers at radix {k} ({three} host ports{'' if three >= hosts else ', still too few'})")
    message = (
        f"the fabric must hold {hosts} host ports ({detail}) but a {tiers}-tier fat-tree of radix {k} "
        f"at {r:g}:1 holds at most {tree.max_hosts}; smallest that fits: {' or '.join(hints)}"
    )
    finding = FABRIC_TOO_SMALL.finding(("network", "fabric", "switchRadix"), message)
    return plan, (finding,)


def topology_levels(model: Platform) -> list[str]:
    if model.target.provider is Provider.AWS:
        return [*EKS_TOPOLOGY_LEVELS, HOST_LEVEL]
    fabric = model.network.fabric
    return [*(fabric.topology_labels if fabric is not None else ()), HOST_LEVEL]


def topology_domains(model: Platform, fabric: FabricPlan | None, flavor: FlavorPlan) -> tuple[int, ...]:
    """Nodes of the flavor's pool in one domain of each switch level Kueue can place by, narrowest
    first: under one leaf (its host ports over a node's ports), then, on 3 tiers, under one pod
    (radix/2 leaves). The narrowest levels of the Topology are the leaf's and the pod's; a level
    above them spans the whole fabric. Empty where Kueue places the flavor's jobs by no level
    above the host: a flavor that is not topology-aware, or a Topology of the host alone."""
    spec = model.network.fabric
    if fabric is None or spec is None or not flavor.topology_aware:
        return ()
    leaf = max(fabric.leaf_down // ports_per_node(model.pools_by_name[flavor.pool], spec), 1)
    sizes = (leaf, leaf * (fabric.radix // 2))
    return sizes[: min(len(topology_levels(model)) - 1, fabric.tiers - 1)]
