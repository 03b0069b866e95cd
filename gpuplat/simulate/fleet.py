"""The replayed platform, built from the model and the plan, never from YAML.

One `Flavor` per Kueue ResourceFlavor the plan emits (on aws: per pool and market with nodes,
the same object as the pool's Karpenter NodePool and its GPU limit; on provider kubernetes:
one per pool), with the pool's units per node after sharing, its node-hour price from the
plan's cost and its spot hazard. One `SimPool` per pool with the capacity floor's bounds
(gpuplat/scaling.py, as emitted). One `SimTenant` per spec tenant with its nominal quota per
flavor (the plan's quotas) and its borrowing limit (`gpus` on any one flavor, as emitted).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from gpuplat.catalog.prices import HOURS_PER_MONTH
from gpuplat.catalog.spot_interruptions import MONTHLY_INTERRUPTION, UNLISTED_MONTHLY
from gpuplat.model import Market, Platform, SharingMode
from gpuplat.plan import Plan
from gpuplat.plan.fabric import topology_domains
from gpuplat.scaling import POLLING_SECONDS, floor_bounds, stabilization_seconds
from gpuplat.simulate.blocks import Block
from gpuplat.simulate.gpus import GpuMap
from gpuplat.simulate.nodes import NodeMap

PRIORITY_RANK = {"low": 0, "normal": 1, "high": 2, "critical": 3}
# Which work tolerates the spot taint is the workload's choice; the replay takes work below
# `critical` as preemptible (checkpointed training and batch work; critical serving is not).
SPOT_TOLERANT_BELOW = PRIORITY_RANK["critical"]
STEADY = (Market.RESERVED, Market.ON_DEMAND)  # where the floor's placeholders may stand


@dataclass(slots=True, eq=False)
class Flavor:
    key: str
    pool: str
    market: Market | None
    per_node: int  # schedulable units per node
    per_gpu: int
    gpus_per_node: int
    max_nodes: int
    hourly: float  # USD per node-hour (0 when the plan prices nothing)
    hazard: float  # spot interruptions per node-second (0 off spot)
    # Capacity Block windows of a capacity-block pool's reserved flavor (none: nodes up to
    # max_nodes whenever wanted); `limit` is what Karpenter may run now, `cancelled` the
    # launches a closing window voided while they booted.
    blocks: tuple[Block, ...] = ()
    limit: int = 0
    cancelled: int = 0
    ready: int = 0
    booting: int = 0
    admitted: int = 0  # units Kueue admitted here (quota use)
    alloc: int = 0  # units of running pods
    busy: float = 0.0  # GPUs' worth of busy time per second
    held: int = 0  # the floor's placeholders standing here
    last: float = 0.0
    node_s: float = 0.0  # billed node-seconds (reserved: see billed_node_s)
    alloc_gpu_s: float = 0.0
    busy_gpu_s: float = 0.0
    ready_gpu_s: float = 0.0
    empty_since: float | None = None
    waiting: list[int] = field(default_factory=lambda: [])  # admitted jobs whose pods wait for a node
    spot_nodes: dict[int, int] = field(default_factory=lambda: {})  # live spot nodes: token -> node (-1: no map)
    owner: SimPool | None = None
    nodes: NodeMap | GpuMap | None = None  # node-level packing (nodes.py, gpus.py); None: units packed perfectly
    fractional: bool = False  # the pool shares GPUs by fractions (HAMi): its pods are placed GPU by GPU
    whole_gpu: bool = False  # a what-if: each of its jobs asks a whole GPU (no sharing)
    domains: tuple[int, ...] = ()  # nodes per topology domain, narrowest level first (none: no Topology)

    @property
    def cap(self) -> int:
        return self.max_nodes * self.per_node

    def advance(self, t: float) -> None:
        dt = t - self.last
        if dt > 0:
            self.node_s += (self.ready + self.booting) * dt
            self.alloc_gpu_s += self.alloc / self.per_gpu * dt
            self.busy_gpu_s += self.busy * dt
            self.ready_gpu_s += self.ready * self.gpus_per_node * dt
            self.last = t
            if isinstance(self.nodes, GpuMap):
                self.nodes.advance(t)

    def consistent(self) -> bool:
        """provisioned >= allocated >= busy, pods only on Ready nodes, and a node map of the Ready nodes."""
        alloc = self.alloc / self.per_gpu
        nodes = self.nodes
        return (
            (self.ready + self.booting) * self.gpus_per_node + 1e-9 >= alloc
            and alloc + 1e-9 >= self.busy
            and self.alloc <= self.ready * self.per_node
            and (nodes is None or nodes.present_count() == self.ready)
        )

    def mutate(self, t: float) -> None:
        """Before any change of state at `t`: integrate up to `t` and wake the pool's autoscaler."""
        self.advance(t)
        owner = self.owner
        if owner is not None:
            owner.last_change = t
            if owner.quiet_since is not None:
                owner.wake(t)

    def block_limit(self, t: float) -> int:
        """Nodes the windows open at `t` hold, up to the NodePool's limit."""
        held = sum(b.instances for b in self.blocks if b.start <= t < b.usable_until)
        return min(self.max_nodes, held)

    def billed_node_s(self, horizon: float) -> float:
        # A block is paid for in full, used or not: its instances over the part of the replay it spans.
        if self.blocks:
            return sum(b.instances * max(0.0, min(b.end, horizon) - max(b.start, 0.0)) for b in self.blocks)
        # A reservation is billed around the clock whether or not a node runs in it.
        return self.max_nodes * horizon if self.market is Market.RESERVED else self.node_s


@dataclass(slots=True, eq=False)
class Recommendations:
    """The HPA's recommendations in its stabilisation window, oldest first, with the window's
    lowest and highest kept as they come (monotonic queues: each poll adds and expires in O(1)
    amortised instead of scanning the window)."""

    low: deque[tuple[float, int]] = field(default_factory=lambda: deque())  # values rising from the lowest
    high: deque[tuple[float, int]] = field(default_factory=lambda: deque())  # values falling from the highest
    last: int | None = None

    def add(self, t: float, value: int) -> None:
        while self.low and self.low[-1][1] >= value:
            self.low.pop()
        self.low.append((t, value))
        while self.high and self.high[-1][1] <= value:
            self.high.pop()
        self.high.append((t, value))
        self.last = value

    def expire(self, before: float) -> None:
        """Forget the recommendations made before `before`."""
        while self.low and self.low[0][0] < before:
            self.low.popleft()
        while self.high and self.high[0][0] < before:
            self.high.popleft()

    @property
    def lowest(self) -> int:
        return self.low[0][1]

    @property
    def highest(self) -> int:
        return self.high[0][1]


@dataclass(slots=True, eq=False)
class SimPool:
    name: str
    flavors: list[Flavor]
    bounds: tuple[int, int] | None  # the capacity floor's (min, max); None: no floor
    floor: int = 0
    samples: deque[tuple[float, float, float, float]] = field(default_factory=lambda: deque())
    recommendations: Recommendations = field(default_factory=Recommendations)
    steady: list[Flavor] = field(default_factory=lambda: [])  # where placeholders stand, in Karpenter's order
    last_change: float = 0.0
    # A pool whose state has not changed for longer than every window it reads would decide the
    # same at each poll: its polls are skipped until something changes (`wake`), which is exact.
    quiet_since: float | None = None
    span: float = 0.0  # the longest window the poll reads (signal window, HPA stabilisation)
    poll: float = 30.0

    def __post_init__(self) -> None:
        order: dict[Market | None, int] = {None: 0, **{m: i for i, m in enumerate(STEADY)}}
        self.steady = sorted((f for f in self.flavors if f.market in order), key=lambda f: order[f.market])
        for f in self.flavors:
            f.owner = self

    def wake(self, t: float) -> None:
        """Write the polls skipped while quiet, as they would have read: every rate held since."""
        assert self.quiet_since is not None
        for f in self.flavors:
            f.advance(t)
        busy = sum(f.busy_gpu_s for f in self.flavors)
        alloc = sum(f.alloc_gpu_s for f in self.flavors)
        ready = sum(f.ready_gpu_s for f in self.flavors)
        r_busy = sum(f.busy for f in self.flavors)
        r_alloc = sum(f.alloc / f.per_gpu for f in self.flavors)
        r_ready = sum(f.ready * f.gpus_per_node for f in self.flavors)
        last = self.recommendations.last
        value = self.floor if last is None else last
        x = self.quiet_since + self.poll
        start = t - self.span - self.poll
        while x < t:
            if x >= start:
                back = t - x
                self.samples.append((x, busy - r_busy * back, alloc - r_alloc * back, ready - r_ready * back))
                if self.bounds is not None:  # a pool without a floor has no HPA to recommend
                    self.recommendations.add(x, value)
            x += self.poll
        self.quiet_since = None


@dataclass(frozen=True)
class SimTenant:
    name: str
    rank: int
    nominal: dict[str, int]  # flavor key -> units
    limit: dict[str, int]  # flavor key -> units it may hold there (nominal + borrowing)
    flavors: tuple[str, ...]  # in the order Kueue tries them
    lends: bool = True  # False for a hard tenant (lendingLimit 0): its unused nominal quota stays its own


class Lending:
    """Kueue lends a ClusterQueue's idle quota up to its lendingLimit: all of a soft tenant's, none
    of a hard one's (0). `usage` is the replay's, per tenant and flavor, read as it changes."""

    def __init__(self, tenants: list[SimTenant], usage: list[dict[str, int]]) -> None:
        self.tenants, self.usage = tenants, usage
        self.hard = [i for i, t in enumerate(tenants) if not t.lends]

    def held_back(self, key: str, but: int) -> int:
        """Units of flavor `key` only their own hard tenant may take (tenant `but` aside): the
        nominal quota the hard tenants leave unused."""
        if not self.hard:
            return 0
        tenants, usage = self.tenants, self.usage
        return sum(max(0, tenants[i].nominal.get(key, 0) - usage[i].get(key, 0)) for i in self.hard if i != but)


def _hourly(plan: Plan) -> dict[tuple[str, Market], float]:
    if plan.cost is None:
        return {}
    out: dict[tuple[str, Market], float] = {}
    for pool in plan.cost.pools:
        out[pool.pool, Market.ON_DEMAND] = pool.on_demand_hourly_usd
        out[pool.pool, Market.SPOT] = pool.on_demand_hourly_usd * (1 - plan.cost.spot_discount)
        out[pool.pool, Market.RESERVED] = pool.reserved_hourly_usd
    return out


def hazard(instance_type: str | None) -> float:
    monthly = MONTHLY_INTERRUPTION.get(instance_type or "", UNLISTED_MONTHLY)
    return -math.log(1 - monthly) / (HOURS_PER_MONTH * 3600)


def build_flavors(model: Platform, plan: Plan, blocks: tuple[Block, ...] = ()) -> list[Flavor]:
    hourly = _hourly(plan)
    out: list[Flavor] = []
    for fp in plan.flavors:
        pool = plan.pool(fp.pool)
        nodes = pool.share(fp.market).nodes if fp.market is not None else pool.nodes.max
        spot = fp.market is Market.SPOT
        out.append(
            Flavor(
                key=fp.key,
                pool=fp.pool,
                market=fp.market,
                per_node=pool.units.per_node,
                per_gpu=pool.units.per_gpu,
                gpus_per_node=pool.gpus_per_node,
                max_nodes=nodes,
                hourly=hourly.get((fp.pool, fp.market), 0.0) if fp.market is not None else 0.0,
                hazard=hazard(pool.instance_type) if spot else 0.0,
                blocks=tuple(b for b in blocks if b.pool == fp.pool) if fp.market is Market.RESERVED else (),
                domains=topology_domains(model, plan.fabric, fp),
                fractional=model.pools_by_name[fp.pool].sharing.mode is SharingMode.FRACTIONAL,
            )
        )
    for f in out:
        f.limit = f.block_limit(0.0) if f.blocks else f.max_nodes
    return out


def build_pools(model: Platform, plan: Plan, flavors: list[Flavor]) -> list[SimPool]:
    span = max(model.autoscaling.window_seconds, stabilization_seconds(model))
    return [
        SimPool(
            p.name,
            [f for f in flavors if f.pool == p.name],
            floor_bounds(model, p, plan.pool(p.name)),
            span=span,
            poll=POLLING_SECONDS,
        )
        for p in model.pools
    ]


def build_tenants(model: Platform, plan: Plan, flavors: list[Flavor]) -> list[SimTenant]:
    by_key = {f.key: f for f in flavors}
    quotas = {t.name: plan.tenant_quotas(t.name) for t in model.tenants}
    kept: dict[str, int] = {}  # flavor key -> GPUs of nominal quota hard tenants lend nobody
    for t in model.tenants:
        for k, gpus in quotas[t.name].items():
            kept[k] = kept.get(k, 0) + (gpus if t.isolation == "hard" else 0)
    tenants: list[SimTenant] = []
    for t in model.tenants:
        own = quotas[t.name]
        keys = tuple(f.key for f in flavors if f.key in own)
        hard = t.isolation == "hard"
        # The most it can ever hold: its borrowing limit, and never the others' unlent quota.
        others = {k: kept.get(k, 0) - (own[k] if hard else 0) for k in keys}
        tenants.append(
            SimTenant(
                name=t.name,
                rank=PRIORITY_RANK.get(t.priority, 1),
                nominal={k: own[k] * by_key[k].per_gpu for k in keys},
                limit={k: min(t.gpus * by_key[k].per_gpu, by_key[k].cap - others[k] * by_key[k].per_gpu) for k in keys},
                flavors=keys,
                lends=not hard,
            )
        )
    return tenants
