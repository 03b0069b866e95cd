"""The plan: derived numbers a platform team reads before anything is provisioned.

These records are the contract between the planner, the CLI (`gpuplat plan` and its
JSON document) and the components (NodePool limits, capacity reservations, FSx sizes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from gpuplat.diagnostics import Level
from gpuplat.model import Market, NodeRange, Repair
from gpuplat.plan.fleet_types import FleetPlan
from gpuplat.plan.rails import RailsPlan
from gpuplat.plan.workload_types import WorkloadPlan
from gpuplat.spec.positions import PathPart


@dataclass(frozen=True)
class MarketShare:
    nodes: int
    gpus: int


@dataclass(frozen=True)
class SharingUnits:
    resource: str  # Kubernetes extended resource the units appear as, e.g. nvidia.com/mig-1g.10gb
    per_gpu: int  # schedulable units one GPU offers (MIG instances, replicas, 1 when exclusive)
    per_node: int
    overhead: float  # fraction of GPU capacity the sharing mode costs (catalog or spec override)
    gpu_equivalents_per_node: float  # gpus_per_node * (1 - overhead)
    mig_devices: Mapping[str, int] | None  # MIG: instances per GPU by profile; else None
    # Every resource a node advertises -> units per node. A custom MIG layout advertises one
    # resource per profile; `resource` is then the one with the most units.
    resources: Mapping[str, int] = field(default_factory=lambda: {})


@dataclass(frozen=True)
class PoolPlan:
    name: str
    instance_type: str | None
    gpu_model: str
    gpus_per_node: int
    nodes: NodeRange
    markets: Mapping[Market, MarketShare]  # only the markets the pool allows; nodes add up to nodes.max
    units: SharingUnits
    ports_per_node: int  # fabric host ports per node (0 when not on the fabric)
    efa_interfaces: int  # EFA interfaces per node on aws fabric pools (one per network card), else 0

    def share(self, market: Market) -> MarketShare:
        return self.markets.get(market, MarketShare(0, 0))

    @property
    def bought(self) -> dict[Market, MarketShare]:
        """The markets the pool has nodes in: each gets a NodePool (aws) and a Kueue flavor; a
        market without nodes gets neither (a NodePool limited to 0 GPUs would be a dead object)."""
        return {market: share for market, share in self.markets.items() if share.nodes > 0}


@dataclass(frozen=True)
class Reservation:
    """An on-demand capacity reservation (ODCR) for the reserved nodes of a pool in one zone."""

    pool: str
    zone: str
    instance_type: str
    count: int
    placement_group: bool  # fabric pools: inside the pool's cluster placement group of that zone


@dataclass(frozen=True)
class CapacityBlockUse:
    """A pool's reserved nodes held in EC2 Capacity Blocks an operator bought (gpuplat creates none).

    Karpenter launches into the blocks its node class selects (by id, or by tag); the plan's
    reserved nodes are what the reserved NodePool may launch, so the blocks should hold that many.
    """

    pool: str
    instance_type: str
    nodes: int
    ids: tuple[str, ...]
    tags: Mapping[str, str]


@dataclass(frozen=True)
class FabricPlan:
    tiers: int
    radix: int
    oversubscription: float
    link_gbps: int
    hosts: int  # host ports at every fabric pool's max size
    leaf_down: int  # host-facing ports per leaf
    leaf_up: int  # spine-facing ports per leaf
    leaves: int
    spines: int
    cores: int  # 0 for 2 tiers
    switches: int
    links: int  # switch-to-switch links (host links not counted)
    bisection_gbps: float
    max_hosts: int  # host ports this tiers/radix/oversubscription can ever hold
    pods: int = 0  # 3 tiers: groups of up to radix/2 leaves sharing their spines; 0 for 2 tiers
    pools: tuple[str, ...] = ()  # the fabric pools (one cluster placement group each on aws)


@dataclass(frozen=True)
class HotTierPlan:
    requested_tib: float
    capacity_gib: int  # aws: rounded up to a size FSx for Lustre accepts; kubernetes: as requested
    throughput_per_tib: int | None  # None on provider kubernetes (the StorageClass decides)
    throughput_mbps: float | None  # aggregate MB/s (10^6 bytes/s); None when unknown
    checkpoint_write_seconds: float | None
    model_load_seconds: float | None
    rounded: bool = False  # capacity_gib is more than was asked for (FSx sizes)
    # aws: the second FSx file system that standard work uses, so critical work keeps its
    # share of the hot tier's throughput; None on kubernetes or when every tenant is critical.
    standard: StandardHotPlan | None = None
    standard_tenants: tuple[str, ...] = ()  # tenants whose hot volume is on `standard`
    critical_throughput_share: float | None = None  # achieved: critical / (critical + standard)
    critical_share_asked: float | None = None  # storage.qos.criticalIopsShare, with a standard file system

    @property
    def total_capacity_gib(self) -> int:
        """Both file systems' storage: what the account's Lustre quota must hold."""
        return self.capacity_gib + (self.standard.capacity_gib if self.standard is not None else 0)


@dataclass(frozen=True)
class StandardHotPlan:
    capacity_gib: int  # a size FSx for Lustre PERSISTENT_2 accepts
    throughput_per_tib: int
    throughput_mbps: float


@dataclass(frozen=True)
class WarmTierPlan:
    capacity_tib: float


@dataclass(frozen=True)
class LifecycleStep:
    after_days: int
    storage_class: str  # STANDARD -> ... ; "EXPIRE" for the expiration step


@dataclass(frozen=True)
class StoragePlan:
    hot: HotTierPlan | None
    warm: WarmTierPlan | None
    cold_lifecycle: tuple[LifecycleStep, ...]


@dataclass(frozen=True)
class EksSupport:
    """The cluster's Kubernetes minor on the EKS support calendar (provider aws)."""

    phase: str  # standard | extended | ended | unknown (a minor the calendar does not list)
    standard_end: str | None  # None when the calendar does not list the minor
    extended_end: str | None
    calendar_as_of: str  # the calendar's date: a reader of an old plan sees how old the facts are
    calendar_source: str


@dataclass(frozen=True)
class PoolCost:
    pool: str
    monthly_usd: Mapping[Market, float]
    all_on_demand_monthly_usd: float
    on_demand_hourly_usd: float = 0.0  # per node, after spec overrides
    min_size_monthly_usd: float = 0.0  # at nodes.min: reserved paid in full, the rest spot first
    reserved_kind: str = "on-demand-reservation"  # or capacity-block (its own hourly rate)
    reserved_hourly_usd: float = 0.0  # per reserved node-hour as priced
    price_estimated: str = ""  # why the on-demand price is not the region's list price ("" = it is)
    reserved_price_note: str = ""  # a Capacity Block rate's age, and why it is estimated, if it is
    spare_monthly_usd: float = 0.0  # the spare nodes held for repairs (health.spareNodes), at the reserved rate


@dataclass(frozen=True)
class CostLine:
    """One priced item beside the GPU nodes: a dated list price times a quantity from the spec."""

    item: str  # what it is, e.g. "FSx for Lustre hot, PERSISTENT_2 250 MB/s/TiB"
    quantity: float  # in `unit`s per month (GB-months, hours); 0 when usage is not known
    unit: str
    unit_usd: float
    monthly_usd: float | None  # None: priced per unit only (usage the spec does not give)
    source: str
    as_of: str
    region: str = ""  # whose list the price is from
    estimated: str = ""  # why it is not the list price of the spec's region ("" = it is)


@dataclass(frozen=True)
class CostAssumption:
    """A price the plan assumes rather than reads off a list (named so nobody takes it for a quote)."""

    name: str
    text: str
    rate: float  # e.g. the discount against on-demand
    source: str


@dataclass(frozen=True)
class CostPlan:
    prices_as_of: str
    hours_per_month: float
    pools: tuple[PoolCost, ...]
    monthly_usd: float
    all_on_demand_monthly_usd: float
    savings_percent: float
    spot_discount: float = 0.0
    reserved_discount: float = 0.0
    min_size_monthly_usd: float = 0.0
    services: tuple[CostLine, ...] = ()  # control plane, NAT, storage tiers
    assumptions: tuple[CostAssumption, ...] = ()
    region: str = ""  # the region the prices are for (the spec's)
    prices_source: str = ""  # where the instance prices come from

    @property
    def services_monthly_usd(self) -> float:
        return sum(line.monthly_usd or 0.0 for line in self.services)

    @property
    def total_monthly_usd(self) -> float:
        """GPU nodes plus every priced service line (usage-priced lines without a quantity excluded)."""
        return self.monthly_usd + self.services_monthly_usd


# ---- what gets provisioned from the numbers (gpuplat/plan/capacity.py fills these) ----------


@dataclass(frozen=True)
class NodePoolPlan:
    pool: str
    market: Market
    name: str  # the NodePool's metadata.name
    nodes: int
    gpus: int  # its nvidia.com/gpu limit
    weight: int
    # Every limit of the NodePool: nvidia.com/gpu and, on MIG / shared / fractional pools, the
    # units the pool's nodes advertise (capacity.node_pools says why both).
    limits: Mapping[str, int] = field(default_factory=lambda: {})


@dataclass(frozen=True)
class NodeRepairLimit:
    """Karpenter's repair limit in one NodePool at max size (gpuplat/plan/health.py)."""

    node_pool: str
    nodes: int
    at_once: int  # unhealthy nodes still repaired; with more, none is


@dataclass(frozen=True)
class PoolHealthPlan:
    pool: str
    repair: Repair
    spare_nodes: int
    node_pools: tuple[NodeRepairLimit, ...]  # empty unless repair is replace (aws)
    spare_monthly_usd: float | None  # None on provider kubernetes (no prices)


@dataclass(frozen=True)
class NodeOverlayPlan:
    pool: str
    name: str
    node_pools: tuple[str, ...]  # the NodePools whose instance types it applies to
    capacity: Mapping[str, int]  # extended resource -> units one node advertises


@dataclass(frozen=True)
class FlavorPlan:
    key: str  # stable suffix of Pulumi names: pool, or pool-market
    name: str  # the ResourceFlavor's metadata.name
    pool: str
    market: Market | None  # None on provider kubernetes
    gpus: int  # capacity
    units: Mapping[str, int]  # resource -> units one GPU of the pool advertises
    topology_aware: bool = False  # names the fabric's Kueue Topology


@dataclass(frozen=True)
class QuotaPlan:
    """A tenant's nominal GPUs on one flavor."""

    tenant: str
    flavor: str  # FlavorPlan.key
    gpus: int


@dataclass(frozen=True)
class Plan:
    pools: tuple[PoolPlan, ...]
    fleet_gpus: int
    fleet_markets: Mapping[Market, int]  # GPUs per market across the fleet
    reservations: tuple[Reservation, ...]
    fabric: FabricPlan | None
    storage: StoragePlan
    cost: CostPlan | None  # None on provider kubernetes
    # Procurement targets: GPUs per market the ratio asks for, and the allowed deviation (the
    # GPUs of one node of the largest pool allowing the market). Empty on provider kubernetes.
    fleet_targets: Mapping[Market, float] = field(default_factory=lambda: {})
    fleet_tolerance: Mapping[Market, int] = field(default_factory=lambda: {})
    # What gets provisioned from these numbers (gpuplat/plan/capacity.py): Karpenter NodePools and
    # NodeOverlays (aws), Kueue flavors and the tenants' nominal quotas on them.
    node_pools: tuple[NodePoolPlan, ...] = ()
    node_overlays: tuple[NodeOverlayPlan, ...] = ()
    flavors: tuple[FlavorPlan, ...] = ()
    quotas: tuple[QuotaPlan, ...] = ()
    workloads: tuple[WorkloadPlan, ...] = ()  # the spec's reference workloads, sized
    # aws: the one zone of the fabric pools, their reservations, FSx and (without
    # storage.warm.zoneId) the directory bucket (gpuplat/plan/zones.py); None on kubernetes.
    fabric_zone: str | None = None
    capacity_blocks: tuple[CapacityBlockUse, ...] = ()  # reserved nodes held in bought Capacity Blocks
    eks_support: EksSupport | None = None  # None on provider kubernetes
    rails: RailsPlan | None = None  # provider kubernetes with SR-IOV rails (gpuplat/plan/rails.py)
    # The platforms this one forms a fleet with (gpuplat/fleet/plan.py); None without `fleet`.
    cluster_fleet: FleetPlan | None = None
    health: tuple[PoolHealthPlan, ...] = ()  # per pool, in spec order

    def pool(self, name: str) -> PoolPlan:
        return self._index.pools[name]

    def pool_node_pools(self, pool: str) -> tuple[NodePoolPlan, ...]:
        return self._index.node_pools.get(pool, ())

    def flavor(self, key: str) -> FlavorPlan:
        return self._index.flavors[key]

    def tenant_quotas(self, tenant: str) -> dict[str, int]:
        """Flavor key -> the tenant's nominal GPUs there."""
        return dict(self._index.quotas.get(tenant, {}))

    @cached_property
    def _index(self) -> _PlanIndex:
        # Built once: the components look pools, flavors and quotas up per pool and per tenant,
        # and a scan per look-up would make a preview quadratic in pools and tenants.
        return _PlanIndex.of(self)


@dataclass(frozen=True)
class _PlanIndex:
    pools: Mapping[str, PoolPlan]  # the first pool of each name, as a scan would find it
    node_pools: Mapping[str, tuple[NodePoolPlan, ...]]
    flavors: Mapping[str, FlavorPlan]
    quotas: Mapping[str, Mapping[str, int]]

    @staticmethod
    def of(plan: Plan) -> _PlanIndex:
        node_pools: dict[str, list[NodePoolPlan]] = {}
        for n in plan.node_pools:
            node_pools.setdefault(n.pool, []).append(n)
        quotas: dict[str, dict[str, int]] = {}
        for q in plan.quotas:
            quotas.setdefault(q.tenant, {})[q.flavor] = q.gpus
        return _PlanIndex(
            pools={p.name: p for p in reversed(plan.pools)},
            node_pools={k: tuple(v) for k, v in node_pools.items()},
            flavors={f.key: f for f in reversed(plan.flavors)},
            quotas=quotas,
        )


@dataclass(frozen=True)
class PlanFinding:
    """A problem only the planner can see (e.g. no market split exists); check reports it."""

    code: str
    level: Level
    path: tuple[PathPart, ...]
    message: str


@dataclass(frozen=True)
class PlanOutcome:
    plan: Plan | None  # None when an error finding makes the numbers meaningless
    findings: tuple[PlanFinding, ...]
