"""What the suite expects, from the spec alone: the journeys a tenant may make, the jobs each
journey is tried with, and the quota numbers that must hold them or stop them.

The spec is read as the user wrote it (merged with its overlay) through the compiler's front
end (`gpuplat.compile`'s model: the spec's facts, defaults filled), never through the plan or
the emitted objects, which are what the suite checks. The rules it applies are the platform's
documented promises (docs/tenants.md, components/kubernetes/_quota.py's docstring):

- a tenant may run on every pool its `pools` (or its isolation) allows, asking for the units the
  pool's sharing mode serves; `check` refuses a spec that strands a tenant on an allowed pool;
- one job holds at most the tenant's `gpus` worth of one flavor (nominal plus borrowed), so a
  job one unit larger waits, with Kueue saying so;
- a tenant's GPUs are spread over its pools' flavors in proportion to their capacity (a pool's
  `nodes.max` times its GPUs per node); a soft tenant lends what it does not use, a hard one
  nothing. Where a pool is one flavor (provider kubernetes; an aws pool of one market) this
  bounds what one job of a tenant can hold there from below and above; an aws pool of several
  markets has its quota split again over them by the procurement plan, which the spec alone
  does not fix;
- a soft tenant reclaims what it lent by preemption, and a tenant's own PriorityClass ranks above
  the shared standard one (the preemption scenarios' outcomes);
- the namespace quota lets one tenant request, per resource, its `gpus` placed on the allowed
  pools with the most units of that resource per GPU first, each pool at most its capacity.

A job the spec cannot decide (its size between the bounds, or an aws pool's market split) is,
on aws, run with either outcome allowed (it runs, or Kueue holds it for quota in its words);
elsewhere a row saying why, not a guess.
"""

from __future__ import annotations

import functools
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from e2e.stack import ROOT, Target
from gpuplat.catalog import instance_type
from gpuplat.catalog.gpus import gpu_model
from gpuplat.catalog.sharing import HAMI_GPU_RESOURCE, REPLICATED_GPU_RESOURCE, mig_resource_name
from gpuplat.model import GpuNodePool, Market, Platform, Provider, SharingMode

HOSTNAME = "kubernetes.io/hostname"
RUNS, WAITS = "runs", "blocked"
# A job whose size the spec leaves open on aws (between its bounds, or past one market's share):
# it runs, or Kueue holds it for quota in its own words; anything else fails (docs/e2e.md).
EITHER = f"{RUNS} or {WAITS}"
QUOTA_SAYS = "insufficient"  # Kueue's flavor assigner: "insufficient (unused) quota for <resource> in flavor"
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"


class SpecError(Exception):
    """The target's spec does not compile: nothing can be expected of it."""


@functools.cache
def spec_model(target: Target) -> Platform:
    """The target's spec (and overlay) as the compiler's front end reads it (once per target:
    the model is immutable)."""
    from gpuplat.compile import compile_stack

    default_overlay = ROOT / "stacks" / f"{target.stack}.yaml"
    overlay = target.overlay or (default_overlay if target.spec is None and default_overlay.exists() else None)
    spec = target.spec or ROOT / "platform" / "platform.yaml"
    here = Path.cwd()
    try:
        os.chdir(ROOT)  # diagnostics and the stack's files are relative to the project
        compiled = compile_stack(target.stack, str(spec), str(overlay) if overlay else "")
    finally:
        os.chdir(here)
    if compiled.model is None:
        raise SpecError(f"{target.label}: the spec does not compile: {compiled.diagnostics[:1]}")
    return compiled.model


def units_per_node(pool: GpuNodePool) -> dict[str, int]:
    """What one node of the pool serves, by the spec's sharing section."""
    gpus, mode = pool.gpus_per_node, pool.sharing.mode
    if mode is SharingMode.EXCLUSIVE:
        return {"nvidia.com/gpu": gpus}
    if mode in (SharingMode.TIME_SLICING, SharingMode.MPS):
        return {REPLICATED_GPU_RESOURCE: gpus * (pool.sharing.replicas or 0)}
    if mode is SharingMode.FRACTIONAL:
        return {HAMI_GPU_RESOURCE: gpus * (pool.sharing.replicas or 0)}
    layout = dict(pool.sharing.layout or {})
    if not layout and pool.sharing.profile:
        model = gpu_model(pool.gpu_model)
        layout = model.named_mig_configs().get(pool.sharing.profile, {}) if model else {}
    return {mig_resource_name(profile): gpus * count for profile, count in layout.items()}


def pool_gpus(pool: GpuNodePool) -> int:
    return pool.nodes.max * pool.gpus_per_node


@dataclass(frozen=True)
class Slot:
    """One tenant, one pool it may use, one unit the pool serves."""

    tenant: str
    pool: str
    resource: str
    per_gpu: int  # units of `resource` one GPU of the pool serves
    gpus_per_node: int
    nodes: int  # the pool's nodes.max
    tenant_gpus: int
    sharing: SharingMode
    # The GPUs one job of the tenant can hold on the pool whatever else the spec leaves open
    # (None: the spec does not fix it, `why` says why), and the most it may ever hold there.
    reach: int | None = None
    why: str = ""
    topology: tuple[str, ...] = ()  # the Topology's levels, widest first, on a topology-aware pool
    no_topology: str = ""  # a fabric pool placed by no Topology: why
    aws: bool = False

    @property
    def per_node(self) -> int:
        return self.per_gpu * self.gpus_per_node

    @property
    def flavor_ceiling(self) -> int:
        """The most units of one flavor one job of the tenant may hold: its `gpus` worth."""
        return self.tenant_gpus * self.per_gpu


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def topology_levels(model: Platform, pool: GpuNodePool) -> tuple[str, ...]:
    """The levels of the Topology a pool's flavor names on provider kubernetes (its nodes are
    fixed, so Kueue may place its jobs by the fabric), else none. On aws only pools of a fixed
    size whose instance type EKS labels are placed so; no shipped aws pool is."""
    fabric = model.network.fabric
    if (model.target.provider is not Provider.KUBERNETES or fabric is None or not pool.fabric
            or model.scheduling.queueing != "kueue" or not model.scheduling.topology_aware):
        return ()
    return (*fabric.topology_labels, HOSTNAME)


def _shares(model: Platform) -> dict[tuple[str, str], float]:
    """(tenant, pool) -> the tenant's GPUs there by the proportional rule."""
    by_name = model.pools_by_name
    found = {}
    for tenant in model.tenants:
        pools = [p for p in tenant.pools if units_per_node(by_name[p])]
        total = sum(pool_gpus(by_name[p]) for p in pools)
        for name in pools:
            found[(tenant.name, name)] = tenant.gpus * pool_gpus(by_name[name]) / total if total else 0.0
    return found


def _aws_unfixed(model: Platform, tenant: str, pool: GpuNodePool) -> str:
    """Why the spec alone does not fix what one job of `tenant` holds on aws pool `pool`, or ""."""
    if len(pool.markets) > 1:
        names = ", ".join(m.value for m in pool.markets)
        return (f"aws pool {pool.name} has markets [{names}]: the procurement split gives each a share of its "
                f"{pool.nodes.max} nodes by the fleet's ratio (gpuplat/plan/split.py), each market is a Kueue "
                f"flavor, and a job holds one flavor's quota: the spec alone does not fix how much of {pool.name} "
                f"one job of {tenant} holds")
    hard = [t.name for t in model.tenants if t.isolation == "hard" and pool.name in t.pools]
    if len(hard) > 1 and tenant in hard:
        # Hard tenants are placed one after another; a later one's augmenting path may move an
        # earlier one's GPUs off a full flavor, and a hard tenant lends nothing back.
        return (f"hard tenants {', '.join(hard)} share aws pool {pool.name}: the plan's flow may move {tenant}'s "
                "GPUs there to another hard tenant, which lends nothing")
    return ""


def reaches(model: Platform) -> dict[tuple[str, str], tuple[int | None, str]]:
    """(tenant, pool) -> (GPUs one job of the tenant is sure to be able to hold there with the
    rest of the cohort idle, or None; why not). Where a pool is one flavor (provider
    kubernetes; an aws pool of one market, whose nodes.max the procurement split puts all in
    that market): the tenant's share rounded down, plus what the soft tenants lend there (theirs
    rounded down), at most its `gpus` and the pool's. Not fixed where the shares, rounded up,
    promise any pool more than it holds (the plan's flow then moves GPUs, through any pool), on
    an aws pool of several markets, or for a hard tenant sharing an aws pool with another."""
    shares = _shares(model)
    isolation = {t.name: t.isolation for t in model.tenants}
    gpus = {t.name: t.gpus for t in model.tenants}
    # A pool promised more than it holds makes the plan's flow move GPUs, through any pool.
    over = [f"{p.name} ({promised} GPUs rounded up of {pool_gpus(p)})" for p in model.pools
            if (promised := sum(math.ceil(s) for (_, name), s in shares.items() if name == p.name)) > pool_gpus(p)]
    found: dict[tuple[str, str], tuple[int | None, str]] = {}
    for (tenant, pool), share in shares.items():
        aws = model.target.provider is Provider.AWS
        unfixed = _aws_unfixed(model, tenant, model.pools_by_name[pool]) if aws else ""
        if unfixed:
            found[(tenant, pool)] = (None, unfixed)
            continue
        if over:
            found[(tenant, pool)] = (None, f"the tenants' proportional shares pass what {', '.join(over)} holds: "
                                           "the plan's flow moves GPUs between pools")
            continue
        capacity = pool_gpus(model.pools_by_name[pool])
        lent = sum(math.floor(s) for (other, p), s in shares.items()
                   if p == pool and other != tenant and isolation[other] != "hard")
        found[(tenant, pool)] = (min(gpus[tenant], capacity, math.floor(share) + lent), "")
    return found


AWS_TOPOLOGY_LAYERS = 3  # EKS's topology.k8s.aws/network-node-layer-1..3 (docs/topology.md)


def aws_topology_why(model: Platform, pool: GpuNodePool) -> str:
    """Why an aws fabric pool gets no topology-aware job, or "" where it is not one: which of the
    two conditions for topology-aware flavors on aws (fixed size, a type EKS labels) fails."""
    if (model.target.provider is not Provider.AWS or not pool.fabric or model.network.fabric is None
            or model.scheduling.queueing != "kueue" or not model.scheduling.topology_aware):
        return ""
    found = instance_type(pool.instance_type) if pool.instance_type else None
    reasons = []
    if pool.nodes.min != pool.nodes.max:
        reasons.append(f"it autoscales ({pool.nodes.min}-{pool.nodes.max} nodes, GP352): Kueue admits "
                       "topology-aware work only onto nodes that exist and Karpenter adds nodes only for pods "
                       "that exist, so a job larger than the idle nodes would wait forever")
    if found is None or found.network_node_layers < AWS_TOPOLOGY_LAYERS:
        reasons.append(f"EC2's instance topology does not describe {pool.instance_type or 'its instance type'} "
                       "(GP355), so EKS gives its nodes no network-node-layer labels")
    if not reasons:
        return ("the suite's Karpenter launches kwok nodes without EKS's network-node-layer labels, which a "
                "topology-aware aws flavor needs on its nodes")
    return (f"aws pool {pool.name}'s Kueue flavors are not topology-aware, so no job is placed by the fabric there: "
            f"{'; '.join(reasons)}; its jobs keep their locality through the pool's cluster placement group")


def slots(model: Platform) -> list[Slot]:
    """Every tenant x allowed pool x unit the pool serves, in the spec's order."""
    reach = reaches(model)
    found = []
    for tenant in model.tenants:
        for name in tenant.pools:
            pool = model.pools_by_name[name]
            for resource, per_node in units_per_node(pool).items():
                held, why = reach.get((tenant.name, name), (None, f"{name} serves no unit"))
                found.append(Slot(tenant.name, name, resource, per_node // pool.gpus_per_node, pool.gpus_per_node,
                                  pool.nodes.max, tenant.gpus, pool.sharing.mode, held, why,
                                  topology_levels(model, pool), aws_topology_why(model, pool),
                                  model.target.provider is Provider.AWS))
    return found


def ceiling_problem(found: list[Slot], tenant: str, pool: str, resource: str, ceiling: int) -> str:
    """'' when `ceiling` (what Kueue's arithmetic over the emitted queues says one job of the
    tenant holds in a flavor of the pool) lies within the spec's bounds; else why not."""
    slot = next((s for s in found if (s.tenant, s.pool, s.resource) == (tenant, pool, resource)), None)
    if slot is None:
        return f"the spec does not allow {tenant} {resource} on {pool}"
    if ceiling > slot.flavor_ceiling:
        return f"{ceiling} > {tenant}'s gpus ({slot.tenant_gpus}) x {slot.per_gpu}, the most the spec allows"
    if slot.reach is not None and ceiling < slot.reach * slot.per_gpu:
        return f"{ceiling} < the {slot.reach * slot.per_gpu} the spec guarantees {tenant} on {pool}"
    return ""


def reclaim_by_spec(model: Platform, borrower: str, lender: str, pool: str) -> tuple[bool | None, str]:
    """Whether `lender`, claiming its own quota on `pool` while `borrower` holds what it lent, takes
    it back by preemption (docs/tenants.md: a soft tenant lends what it does not use and reclaims
    it by preemption; a hard one lends nothing). None: the spec forbids the situation itself."""
    tenants = {t.name: t for t in model.tenants}
    for name in (borrower, lender):
        if name not in tenants or pool not in tenants[name].pools:
            return None, f"the spec does not allow {name} on {pool}"
    if tenants[lender].isolation == "hard":
        return None, f"{lender} is a hard tenant: the spec lets it lend nothing"
    return True, f"{lender} is soft: it lends what it does not use and reclaims it by preemption"


def own_class_preempts(model: Platform, tenant: str) -> tuple[bool, str]:
    """Whether a job at the tenant's own PriorityClass evicts the tenant's work at the shared
    standard class (docs/tenants.md: Kueue orders and preempts by the class; the standard class
    ranks below every tenant's, whatever its spec priority)."""
    level = next(t.priority for t in model.tenants if t.name == tenant)
    return True, f"{tenant}'s own class (priority {level}) ranks above the standard class"


def namespace_ceilings(model: Platform) -> dict[str, dict[str, int]]:
    """tenant -> resource -> the most units its namespace quota lets pods request at once: its
    `gpus` placed on its pools with the most units of the resource per GPU first, each pool at
    most its capacity."""
    ceilings: dict[str, dict[str, int]] = {}
    for tenant in model.tenants:
        pools = [model.pools_by_name[p] for p in tenant.pools]
        per_gpu = {p.name: {r: n // p.gpus_per_node for r, n in units_per_node(p).items()} for p in pools}
        resources = sorted({r for units in per_gpu.values() for r in units})
        ceilings[tenant.name] = {}
        for resource in resources:
            left, total = tenant.gpus, 0
            for pool in sorted(pools, key=lambda p: -per_gpu[p.name].get(resource, 0)):
                units = per_gpu[pool.name].get(resource, 0)
                take = min(pool_gpus(pool), left) if units else 0
                total, left = total + take * units, left - take
            ceilings[tenant.name][resource] = total
    return ceilings


def floor_sizes(model: Platform) -> dict[str, tuple[int, str]]:
    """pool -> (the placeholders its capacity floor keeps with no job, why): `nodes.min`
    (docs/provisioned.md), held on capacity that is not taken back: an aws pool without a
    reserved or on-demand market keeps none."""
    found = {}
    for pool in model.pools:
        held = model.target.provider is Provider.KUBERNETES or any(m is not Market.SPOT for m in pool.markets)
        if not held:
            found[pool.name] = (0, f"pool {pool.name} is spot only: its nodes.min cannot be held on capacity "
                                   "that is taken back")
        else:
            found[pool.name] = (pool.nodes.min, f"nodes.min of pool {pool.name}")
    return found


# -- the jobs a journey is tried with ----------------------------------------------------------
