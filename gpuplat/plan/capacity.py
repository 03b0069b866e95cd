"""The capacity objects the plan owns: Karpenter NodePools and NodeOverlays, Kueue flavors and
the tenants' nominal quotas on them. Components and reports iterate these lists; none of them
re-derives which markets get a NodePool or how a tenant's GPUs spread over flavors.

NodePools (provider aws): one per pool and market the procurement split gives nodes, named
`<pool>-<market>`, whose `nvidia.com/gpu` limit is that share. Weights: reserved 100 > spot 50
> on-demand 10, so Karpenter fills paid-for reservations first, then cheap spot, and falls back
to on-demand.

NodeOverlays: Karpenter knows an instance type's capacity from EC2 (`nvidia.com/gpu` = its
GPUs) and nothing a device plugin advertises after boot. A pod asking for
`nvidia.com/mig-1g.10gb`, `nvidia.com/gpu.shared` or HAMi's vGPUs matches no instance type, so
those pools would never scale up. An overlay adds the resources a node of the pool advertises
(the plan's units per node) to the instance types of the pool's NodePools.

Flavors: one per NodePool on aws (node labels: pool and capacity type), one per pool on
provider kubernetes (the pool at max size). Capacity in GPUs. A fabric pool's flavors are
topology-aware (Kueue places a job's pods by the fabric's levels) only where the nodes exist
before the job: Kueue admits topology-aware work only onto existing nodes, and Karpenter adds
nodes only for pods that exist, so on an autoscaled aws pool a job larger than the idle nodes
would wait forever. That holds on provider kubernetes (fixed nodes) and for aws pools of fixed
size (nodes.min == nodes.max, all kept by the capacity floor) of a type whose nodes carry the
Topology's labels (EKS sets them only where EC2's instance topology describes the type). Other
aws fabric pools keep their locality through the pool's cluster placement group (one zone,
EC2's closest placement), and `check` warns (GP352, GP355) that topology-aware admission is off
for them.

Quotas: each tenant's `gpus` become nominal quotas on its allowed flavors, spread in
proportion to the flavors' capacity and never promising a flavor more GPUs than it has across
all tenants: Kueue lends only quota nobody uses, so promises beyond a flavor's capacity cannot
all be kept, and a tenant could not reclaim its own share. Hard-isolation tenants are placed
first; the spread is a maximum flow (tenants -> flavors, each flavor capped by its capacity)
started from the proportional split, so it finds an assignment whenever one exists. A hard
tenant whose GPUs cannot be placed is an error (GP234): its guarantee would be fiction. A soft
tenant's remainder is promised anyway on its flavors in proportion to their size, with a
warning (GP351): soft quotas may oversubscribe, and such a tenant gets the remainder only when
others leave it idle.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence

from gpuplat.catalog import GPU_RESOURCE, INSTANCE_TYPES, instance_type
from gpuplat.model import MARKET_ORDER, Market, Platform, Provider, Tenant, isolation_permits
from gpuplat.plan.codes import (
    HARD_QUOTA_UNPLACEABLE,
    MINIMUM_NOT_HELD,
    NO_INSTANCE_TOPOLOGY,
    SOFT_QUOTA_OVERSUBSCRIBED,
    TOPOLOGY_AWARE_OFF,
)
from gpuplat.plan.fabric import EKS_TOPOLOGY_LEVELS
from gpuplat.plan.health import spare_nodes
from gpuplat.plan.procurement import pool_order
from gpuplat.plan.types import FlavorPlan, NodeOverlayPlan, NodePoolPlan, PlanFinding, PoolPlan, QuotaPlan

MARKET_WEIGHT: Mapping[Market, int] = {Market.RESERVED: 100, Market.SPOT: 50, Market.ON_DEMAND: 10}


def node_pool_name(pool: str, market: Market) -> str:
    return f"{pool}-{market.value}"


def unit_resources(pool: PoolPlan) -> dict[str, int]:
    """Extended resources one GPU of the pool advertises -> how many units of each."""
    units = pool.units
    per_node = units.resources or {units.resource: units.per_node}
    return {resource: count // pool.gpus_per_node for resource, count in per_node.items() if count > 0}


def node_pools(model: Platform, pools: Sequence[PoolPlan]) -> tuple[NodePoolPlan, ...]:
    """One NodePool per market the split gives nodes, limited to its share.

    Karpenter counts a NodePool's usage from its nodes' capacity: the NodeClaim's (the instance
    type's, NodeOverlays applied) until a node is initialized, the node's own after (karpenter
    `pkg/controllers/state/statenode.go` `Capacity`), and checks each limit by resource name
    (`pkg/apis/v1/nodepool.go` `Limits.ExceededBy`). A MIG, time-sliced, MPS or HAMi node then
    reports its units under their own names, and with the mixed MIG strategy or HAMi in place
    of NVIDIA's device plugin, no `nvidia.com/gpu` at all: a limit on `nvidia.com/gpu` alone
    stops binding as soon as the first nodes are up. So such a NodePool is also limited on each
    unit resource, at its nodes times the units one node advertises; either limit stops the
    pool at its share.
    """
    if model.target.provider is not Provider.AWS:
        return ()
    result: list[NodePoolPlan] = []
    for pool in pools:
        per_node = {r: n for r, n in (pool.units.resources or {}).items() if r != GPU_RESOURCE and n > 0}
        for market, share in pool.bought.items():
            name = node_pool_name(pool.name, market)
            # Spare nodes widen the reserved NodePool only, never a flavor: room for a replacement.
            nodes = share.nodes + spare_nodes(model, pool.name, market)
            gpus = nodes * pool.gpus_per_node
            limits = {GPU_RESOURCE: gpus, **{r: n * nodes for r, n in per_node.items()}}
            result.append(NodePoolPlan(pool.name, market, name, nodes, gpus, MARKET_WEIGHT[market], limits))
    return tuple(result)


def node_overlays(pools: Sequence[PoolPlan], planned: Sequence[NodePoolPlan]) -> tuple[NodeOverlayPlan, ...]:
    result: list[NodeOverlayPlan] = []
    for pool in pools:
        names = tuple(p.name for p in planned if p.pool == pool.name)
        # Only what a device plugin registers on the node. Karpenter initializes a node only
        # once every resource its pods requested is in the node's allocatable
        # (nodeclaim/lifecycle/initialization.go, RequestedResourcesRegistered); HAMi's device
        # plugin registers only the vGPU count, never nvidia.com/gpumem or gpucores, so
        # declaring those would launch nodes that never initialize (never disrupted, never
        # removed). A fractional job asks for vGPUs alone and gets HAMi's default share.
        capacity = {r: n for r, n in (pool.units.resources or {}).items() if r != GPU_RESOURCE and n > 0}
        if names and capacity:
            result.append(NodeOverlayPlan(pool.name, f"{pool.name}-units", names, capacity))
    return tuple(result)


def wants_topology(model: Platform) -> bool:
    return model.scheduling.queueing == "kueue" and model.scheduling.topology_aware and model.network.fabric is not None


# The aws Topology's levels: network-node layers 1-3.
AWS_TOPOLOGY_LAYERS = len(EKS_TOPOLOGY_LEVELS)


def labelled_with_topology(model: Platform, pool: PoolPlan) -> bool:
    """Whether the pool's nodes carry the Topology's level labels. On aws EKS sets them only on
    the instance types EC2's instance topology describes; a node without them is invisible to
    Kueue's topology-aware placement, so its jobs would wait forever."""
    if model.target.provider is Provider.KUBERNETES:
        return True
    found = instance_type(pool.instance_type) if pool.instance_type else None
    return found is not None and found.network_node_layers >= AWS_TOPOLOGY_LAYERS


def _described_types() -> str:
    """The catalog's types with instance topology, a family named once when all its sizes have it."""
    described = {n for n, t in INSTANCE_TYPES.items() if t.network_node_layers >= AWS_TOPOLOGY_LAYERS}
    names: list[str] = []
    for family in sorted({n.split(".")[0] for n in described}):
        sizes = {n for n in INSTANCE_TYPES if n.split(".")[0] == family}
        names += [family] if sizes <= described else sorted(sizes & described)
    return ", ".join(names)


def topology_aware(model: Platform, pool: PoolPlan) -> bool:
    """Whether Kueue may place this pool's jobs by the fabric's levels (see the module docstring)."""
    fixed = model.target.provider is Provider.KUBERNETES or pool.nodes.min == pool.nodes.max
    return (
        wants_topology(model)
        and model.pools_by_name[pool.name].fabric
        and fixed
        and labelled_with_topology(model, pool)
    )


def flavors(model: Platform, pools: Sequence[PoolPlan], planned: Sequence[NodePoolPlan]) -> tuple[FlavorPlan, ...]:
    if model.scheduling.queueing != "kueue":
        return ()
    prefix = model.metadata.name
    by_name = {p.name: p for p in pools}
    if model.target.provider is Provider.AWS:
        return tuple(
            FlavorPlan(
                n.name,
                f"{prefix}-{n.name}",
                n.pool,
                n.market,
                by_name[n.pool].share(n.market).gpus,  # the share alone: spare nodes are no one's quota
                unit_resources(by_name[n.pool]),
                topology_aware(model, by_name[n.pool]),
            )
            for n in planned
        )
    return tuple(
        FlavorPlan(
            p.name,
            f"{prefix}-{p.name}",
            p.name,
            None,
            p.nodes.max * p.gpus_per_node,
            unit_resources(p),
            topology_aware(model, p),
        )
        for p in pools
    )


def floor_findings(model: Platform, pools: Sequence[PoolPlan]) -> list[PlanFinding]:
    """On aws nodes.min is kept by placeholders that never run on spot (spot could take the
    minimum away), so only a pool's reserved and on-demand nodes can hold it."""
    findings: list[PlanFinding] = []
    if model.target.provider is not Provider.AWS:
        return findings
    for index, pool in enumerate(pools):
        held = pool.share(Market.RESERVED).nodes + pool.share(Market.ON_DEMAND).nodes
        if pool.nodes.min > held:
            findings.append(
                MINIMUM_NOT_HELD.finding(
                    ("gpuNodePools", index, "nodes", "min"),
                    f"pool {pool.name} keeps at most {held} of its {pool.nodes.min} minimum nodes: the minimum is "
                    f"held on reserved and on-demand capacity only (spot can be taken away at any time), and the "
                    f"split gives the pool {held} such nodes; allow on-demand or lower nodes.min",
                )
            )
    return findings


def topology_findings(model: Platform, pools: Sequence[PoolPlan]) -> list[PlanFinding]:
    if model.target.provider is not Provider.AWS or not wants_topology(model):
        return []
    fabric = [(index, pool) for index, pool in enumerate(pools) if model.pools_by_name[pool.name].fabric]
    unlabelled = [
        NO_INSTANCE_TOPOLOGY.finding(
            ("gpuNodePools", index, "instanceType"),
            f"fabric pool {pool.name}'s Kueue flavors are not topology-aware: EC2's instance topology does not "
            f"describe {pool.instance_type}, so EKS gives its nodes no topology.k8s.aws/network-node-layer labels "
            f"and Kueue would place no topology-aware job on them; its jobs keep their locality through the "
            f"pool's cluster placement group. Types it describes: {_described_types()}",
        )
        for index, pool in fabric
        if not labelled_with_topology(model, pool)
    ]
    return unlabelled + [
        TOPOLOGY_AWARE_OFF.finding(
            ("gpuNodePools", index, "nodes", "min"),
            f"fabric pool {pool.name} autoscales ({pool.nodes.min}-{pool.nodes.max} nodes), so its Kueue flavors are "
            f"not topology-aware: Kueue admits topology-aware work only onto nodes that exist, and Karpenter adds "
            f"nodes only for pods that exist, so a job larger than the idle nodes would wait forever; its jobs keep "
            f"their locality through the pool's cluster placement group. Set nodes.min to nodes.max for "
            f"topology-aware placement",
        )
        for index, pool in fabric
        if labelled_with_topology(model, pool) and not topology_aware(model, pool)
    ]


def tenant_flavors(model: Platform, tenant: Tenant, all_flavors: Sequence[FlavorPlan]) -> list[FlavorPlan]:
    """The flavors a tenant may use: its allowed pools its isolation permits, in plan order."""
    # Once per allowed pool, not per flavor: a plan calls this for every tenant over every flavor.
    pools = model.pools_by_name
    permitted = {name: isolation_permits(tenant.isolation, pools[name]) for name in tenant.pools}
    return [f for f in all_flavors if permitted.get(f.pool, False)]


def proportional(total: int, weights: Sequence[int]) -> list[int]:
    """`total` in whole parts proportional to `weights` (largest remainder; ties: first)."""
    if not weights:
        return []
    if sum(weights) <= 0:
        weights = [1] * len(weights)
    whole = sum(weights)
    exact = [total * w / whole for w in weights]
    parts = [int(x) for x in exact]
    order = sorted(range(len(weights)), key=lambda i: (-(exact[i] - parts[i]), i))
    for i in order[: total - sum(parts)]:
        parts[i] += 1
    return parts


def one_per_pool(allowed: Sequence[FlavorPlan], shares: Sequence[int]) -> list[int]:
    """The proportional split moved so that every pool the tenant may use gets at least one of its
    GPUs, when it has a GPU for each: a pool left at none strands the tenant there whenever no
    other tenant lends any (Kueue admits nothing without quota, GP354). Each unit comes from the
    flavor with the largest share whose pool keeps at least one; ties: the first."""
    result = list(shares)
    pool_total: dict[str, int] = {}
    for f, share in zip(allowed, result, strict=True):
        pool_total[f.pool] = pool_total.get(f.pool, 0) + share
    if sum(result) < len(pool_total):
        return result
    for pool in [p for p, total in pool_total.items() if total == 0]:
        target = next((i for i, f in enumerate(allowed) if f.pool == pool and f.gpus > 0), None)
        donors = [i for i, f in enumerate(allowed) if result[i] > 0 and pool_total[f.pool] > 1]
        if target is None or not donors:
            continue
        donor = max(donors, key=lambda i: (result[i], -i))
        result[donor] -= 1
        pool_total[allowed[donor].pool] -= 1
        result[target] += 1
        pool_total[pool] += 1
    return result


class _Flow:
    """Tenants -> flavors assignment with flavor capacities, completed by augmenting paths."""

    def __init__(self, capacity: dict[str, int]) -> None:
        self.capacity = capacity
        self.flow: dict[tuple[int, str], int] = {}
        self.used = dict.fromkeys(capacity, 0)
        # flavor -> tenants that held GPUs of it, in the order they first got some: each search
        # step looks at one flavor's tenants, not at every (tenant, flavor) pair.
        self.holders: dict[str, dict[int, None]] = {f: {} for f in capacity}

    def _move(self, tenant: int, flavor: str, gpus: int) -> None:
        self.flow[tenant, flavor] = self.flow.get((tenant, flavor), 0) + gpus
        self.holders[flavor].setdefault(tenant)

    def add(self, tenant: int, flavor: str, gpus: int) -> int:
        take = min(gpus, self.capacity[flavor] - self.used[flavor])
        if take > 0:
            self._move(tenant, flavor, take)
            self.used[flavor] += take
        return max(take, 0)

    def augment(self, tenant: int, edges: Mapping[int, Sequence[str]]) -> bool:
        """Place one more GPU of `tenant`, moving other tenants' GPUs between flavors if needed."""
        parent: dict[str, tuple[int, str | None]] = {}  # flavor -> (tenant reaching it, flavor it came from)
        queue: deque[tuple[int, str | None]] = deque([(tenant, None)])
        seen_tenants = {tenant}
        while queue:
            current, via = queue.popleft()
            for flavor in edges[current]:
                if flavor in parent:
                    continue
                parent[flavor] = (current, via)
                if self.used[flavor] < self.capacity[flavor]:
                    self._apply(flavor, parent)
                    return True
                for other in self.holders[flavor]:
                    if self.flow[other, flavor] > 0 and other not in seen_tenants:
                        seen_tenants.add(other)
                        queue.append((other, flavor))
        return False

    def _apply(self, flavor: str, parent: Mapping[str, tuple[int, str | None]]) -> None:
        self.used[flavor] += 1
        current: str | None = flavor
        while current is not None:
            tenant, via = parent[current]
            self._move(tenant, current, 1)
            if via is not None:
                self._move(tenant, via, -1)  # the tenant gives up one GPU of `via` to the tenant before it
            current = via
        # The first tenant on the path gained a GPU; the others moved one, so only `flavor` grew.


def _tenant_order(tenant: Tenant) -> tuple[bool, str]:
    return (tenant.isolation != "hard", tenant.name)


def quotas(model: Platform, all_flavors: Sequence[FlavorPlan]) -> tuple[tuple[QuotaPlan, ...], list[PlanFinding]]:
    flow = _Flow({f.key: f.gpus for f in all_flavors})
    edges: dict[int, list[str]] = {}
    findings: list[PlanFinding] = []
    overcommitted: dict[tuple[int, str], int] = {}
    # Hard tenants first (their guarantee is lent to nobody), then by name, and each tenant's
    # flavors in the planner's pool order (procurement.pool_order), markets by preference: the
    # order tenants and pools are written in means nothing, so it must not move quota between
    # them (ties in `proportional` and the augmenting paths go by position).
    order = sorted(range(len(model.tenants)), key=lambda i: _tenant_order(model.tenants[i]))
    rank = {model.pools[i].name: n for n, i in enumerate(pool_order(model.pools))}

    def flavor_order(f: FlavorPlan) -> tuple[int, int]:
        return rank[f.pool], MARKET_ORDER.index(f.market) if f.market is not None else 0

    for index in order:
        tenant = model.tenants[index]
        allowed = sorted(tenant_flavors(model, tenant, all_flavors), key=flavor_order)
        edges[index] = [f.key for f in allowed]
        shares = one_per_pool(allowed, proportional(tenant.gpus, [f.gpus for f in allowed]))
        placed = sum(flow.add(index, f.key, share) for f, share in zip(allowed, shares, strict=True))
        while placed < tenant.gpus and flow.augment(index, edges):
            placed += 1
        if placed < tenant.gpus and allowed:
            findings.append(_overcommitted(index, tenant, allowed, placed))
            rest = proportional(tenant.gpus - placed, [f.gpus for f in allowed])
            overcommitted.update({(index, f.key): n for f, n in zip(allowed, rest, strict=True) if n > 0})
    totals = dict(flow.flow)
    for key, gpus in overcommitted.items():
        totals[key] = totals.get(key, 0) + gpus
    result = tuple(QuotaPlan(model.tenants[t].name, key, gpus) for (t, key), gpus in sorted(totals.items()) if gpus > 0)
    return result, findings


def _overcommitted(index: int, tenant: Tenant, allowed: Sequence[FlavorPlan], placed: int) -> PlanFinding:
    pools = ", ".join(sorted({f.pool for f in allowed}))
    if tenant.isolation == "hard":
        return HARD_QUOTA_UNPLACEABLE.finding(
            ("tenants", index, "gpus"),
            f"hard-isolation tenant {tenant.name} is guaranteed {tenant.gpus} GPUs, but the pools it may use "
            f"({pools}) have only {placed} left after the other hard tenants' quotas: Kueue lends only unused "
            f"quota, so a guarantee beyond a pool's capacity cannot be kept; lower the quotas or raise the pools' max",
        )
    return SOFT_QUOTA_OVERSUBSCRIBED.finding(
        ("tenants", index, "gpus"),
        f"tenant {tenant.name} is promised {tenant.gpus} GPUs, but the pools it may use ({pools}) have only "
        f"{placed} left after the other tenants' quotas: the other {tenant.gpus - placed} oversubscribe them "
        f"and are there only while other tenants leave them idle",
    )
