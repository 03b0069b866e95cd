"""The validated, defaulted spec as frozen dataclasses: the only thing later stages read.

`build_model` runs after validation passed with no error; it fills defaults and resolves
catalog facts (GPU model and count of an instance type) so the planner and the components
never look at raw YAML data or repeat a default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, cast

from gpuplat.catalog import SHARING_OVERHEAD, GpuModel, gpu_model, instance_type
from gpuplat.model_workloads import ReferenceWorkload, build_workloads


class Provider(StrEnum):
    AWS = "aws"
    KUBERNETES = "kubernetes"


class Market(StrEnum):
    """Spelled as in `gpuNodePools[].markets` and as Karpenter's capacity-type values."""

    RESERVED = "reserved"
    SPOT = "spot"
    ON_DEMAND = "on-demand"

    @property
    def procurement_key(self) -> str:
        """The key of this market under `procurement:` and in the plan JSON."""
        return "onDemand" if self is Market.ON_DEMAND else self.value


MARKET_ORDER: tuple[Market, ...] = (Market.RESERVED, Market.SPOT, Market.ON_DEMAND)


class SharingMode(StrEnum):
    EXCLUSIVE = "exclusive"
    MIG = "mig"
    MPS = "mps"
    TIME_SLICING = "time-slicing"
    FRACTIONAL = "fractional"


def _frozen_map(value: Any) -> Mapping[str, Any]:
    return MappingProxyType(dict(cast("dict[str, Any]", value or {})))


def duration_seconds(text: str) -> int:
    """`5m` -> 300. The schema guarantees the `<digits><unit>` form."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
    return int(text[:-1]) * units[text[-1]]


@dataclass(frozen=True)
class Metadata:
    name: str
    tags: Mapping[str, str]


@dataclass(frozen=True)
class Target:
    provider: Provider
    region: str | None
    zones: tuple[str, ...]
    kubernetes_version: str
    endpoint: str  # private | public (EKS API endpoint)
    context: str | None  # kubeconfig context on provider kubernetes
    public_access_cidrs: tuple[str, ...] = ()  # aws, public endpoint: who may reach it (empty: anyone)
    # aws: EKS makes the cluster's creator a cluster-admin. Fixed at creation (ForceNew); true is
    # what every existing stack was created with.
    bootstrap_cluster_creator_admin: bool = True
    node_ami: str | None = None  # aws: al2023@vYYYYMMDD override of the catalog's pinned release
    addon_versions: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # aws: EKS add-on pins


@dataclass(frozen=True)
class Taint:
    key: str
    value: str | None
    effect: str


@dataclass(frozen=True)
class Sharing:
    mode: SharingMode
    profile: str | None = None  # MIG: a named config such as all-1g.10gb
    layout: Mapping[str, int] | None = None  # MIG: custom per-GPU layout
    replicas: int | None = None  # MPS / time-slicing / fractional: clients per GPU
    overhead: float = 0.0  # capacity fraction lost to sharing (catalog default or spec override)


@dataclass(frozen=True)
class NodeRange:
    min: int
    max: int


class ReservationKind(StrEnum):
    ON_DEMAND_RESERVATION = "on-demand-reservation"  # gpuplat creates targeted ODCRs
    CAPACITY_BLOCK = "capacity-block"  # operator-bought EC2 Capacity Blocks, selected by id / tag


@dataclass(frozen=True)
class PoolReservation:
    """How a pool's reserved nodes are held (aws); ids / tags select existing Capacity Blocks."""

    kind: ReservationKind = ReservationKind.ON_DEMAND_RESERVATION
    ids: tuple[str, ...] = ()
    tags: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class GpuNodePool:
    name: str
    instance_type: str | None  # provider aws
    gpu_model: str  # catalog GPU name, resolved from the instance type on aws
    gpus_per_node: int
    node_selector: Mapping[str, str]  # provider kubernetes: selects the existing nodes
    nics_per_node: int | None  # provider kubernetes; None on aws (the catalog knows)
    nodes: NodeRange
    sharing: Sharing
    fabric: bool
    markets: tuple[Market, ...]
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    reservation: PoolReservation = field(default_factory=PoolReservation)

    @property
    def max_gpus(self) -> int:
        return self.nodes.max * self.gpus_per_node


@dataclass(frozen=True)
class Rail:
    """One fabric NIC per node: its physical function and the subnet its VFs get addresses from."""

    pf_name: str
    subnet: str
    gateway: str | None


@dataclass(frozen=True)
class Sriov:
    vfs_per_nic: int
    rails: tuple[Rail, ...]  # rail order: rail i is rails[i]


@dataclass(frozen=True)
class Fabric:
    topology: str
    tiers: int
    switch_radix: int
    link_gbps: int
    oversubscription: float
    transport: str
    sriov: Sriov | None
    topology_labels: tuple[str, ...]  # provider kubernetes: node labels of switch levels, widest first


@dataclass(frozen=True)
class Network:
    vpc_cidr: str
    fabric: Fabric | None


@dataclass(frozen=True)
class HotTier:
    capacity_tib: float
    throughput_per_tib: int
    storage_class: str | None
    backup_retention_days: int = 0  # aws: FSx daily automatic backups (0: none)
    backup_start_time: str = "03:00"  # HH:MM UTC
    efa: bool = False  # aws: EFA / GPUDirect Storage, fixed at creation


@dataclass(frozen=True)
class WarmTier:
    capacity_tib: float
    storage_class: str | None
    zone_id: str | None = None  # aws: the directory bucket's AZ ID; None: the fabric zone's ID


@dataclass(frozen=True)
class Transition:
    after_days: int
    storage_class: str


@dataclass(frozen=True)
class ColdTier:
    transitions: tuple[Transition, ...]
    expire_after_days: int | None
    storage_class: str | None
    capacity_tib: float | None = None  # aws: expected data, for the cost plan only


@dataclass(frozen=True)
class Workload:
    checkpoint_gib: float | None
    model_gib: float | None


@dataclass(frozen=True)
class Storage:
    hot: HotTier | None
    warm: WarmTier | None
    cold: ColdTier | None
    critical_iops_share: float
    workload: Workload


@dataclass(frozen=True)
class Prices:
    on_demand_hourly: Mapping[str, float]  # spec overrides only; the catalog fills the rest
    spot_discount: float | None
    reserved_discount: float | None
    as_of: str | None
    capacity_block_hourly: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class Procurement:
    """Percent of fleet GPU capacity per market; None on provider kubernetes."""

    spot: float
    reserved: float
    on_demand: float
    prices: Prices

    def share(self, market: Market) -> float:
        return {Market.SPOT: self.spot, Market.RESERVED: self.reserved, Market.ON_DEMAND: self.on_demand}[market]


@dataclass(frozen=True)
class Autoscaling:
    window: str
    window_seconds: int
    scale_up_above: float
    scale_down_below: float
    cooldown: str
    cooldown_seconds: int


@dataclass(frozen=True)
class Scheduling:
    queueing: str  # kueue | none
    topology_aware: bool
    gpu_scheduler_policy: str  # spread | binpack


@dataclass(frozen=True)
class Tenant:
    name: str
    gpus: int
    priority: str
    isolation: str  # hard | soft
    pools: tuple[str, ...]  # resolved allow-list: explicit, or every pool its isolation permits
    # aws: IAM role / user ARNs mapped into the tenant's Kubernetes group by EKS access entries
    principals: tuple[str, ...] = ()


@dataclass(frozen=True)
class Observability:
    retention: str


@dataclass(frozen=True)
class Platform:
    metadata: Metadata
    target: Target
    pools: tuple[GpuNodePool, ...]
    network: Network
    storage: Storage
    procurement: Procurement | None
    autoscaling: Autoscaling
    scheduling: Scheduling
    tenants: tuple[Tenant, ...]
    observability: Observability
    workloads: tuple[ReferenceWorkload, ...] = ()  # reference workloads the plan sizes
    pools_by_name: Mapping[str, GpuNodePool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pools_by_name", MappingProxyType({p.name: p for p in self.pools}))

    @property
    def fabric_pools(self) -> tuple[GpuNodePool, ...]:
        return tuple(p for p in self.pools if p.fabric)


SHARED_MODES = frozenset({SharingMode.MPS, SharingMode.TIME_SLICING})
"""Modes without memory or fault isolation: never for tenants with `isolation: hard`."""


def isolation_permits(isolation: str, pool: GpuNodePool) -> bool:
    return not (isolation == "hard" and pool.sharing.mode in SHARED_MODES)


# ---- construction from validated data -------------------------------------------------------

Data = Mapping[str, Any]


def _sharing(raw: Data | None) -> Sharing:
    raw = raw or {"mode": "exclusive"}
    mode = SharingMode(raw["mode"])
    layout = raw.get("layout")
    return Sharing(
        mode=mode,
        profile=raw.get("profile"),
        layout=MappingProxyType(dict(layout)) if layout is not None else None,
        replicas=raw.get("replicas"),
        overhead=float(raw.get("overhead", SHARING_OVERHEAD[mode.value])),
    )


def _pool(raw: Data, provider: Provider) -> GpuNodePool:
    if provider is Provider.AWS:
        itype = instance_type(raw["instanceType"])
        assert itype is not None, "validation guarantees a catalog instance type"
        model, count = itype.gpu_model, itype.gpu_count
        markets = tuple(Market(m) for m in raw.get("markets", ["on-demand"]))
    else:
        model, count = raw["gpu"]["model"], raw["gpu"]["count"]
        markets = ()
    return GpuNodePool(
        name=raw["name"],
        instance_type=raw.get("instanceType"),
        gpu_model=model,
        gpus_per_node=count,
        node_selector=_frozen_map(raw.get("nodeSelector")),
        nics_per_node=raw.get("nicsPerNode", count) if provider is Provider.KUBERNETES else None,
        nodes=NodeRange(raw["nodes"]["min"], raw["nodes"]["max"]),
        sharing=_sharing(raw.get("sharing")),
        fabric=bool(raw.get("fabric", False)),
        markets=tuple(m for m in MARKET_ORDER if m in markets),
        labels=_frozen_map(raw.get("labels")),
        taints=tuple(Taint(t["key"], t.get("value"), t["effect"]) for t in raw.get("taints", [])),
        reservation=_reservation(raw.get("reservation")),
    )


def _reservation(raw: Data | None) -> PoolReservation:
    if raw is None:
        return PoolReservation()
    return PoolReservation(
        kind=ReservationKind(raw.get("kind", ReservationKind.ON_DEMAND_RESERVATION.value)),
        ids=tuple(raw.get("ids", [])),
        tags=_frozen_map(raw.get("tags")),
    )


# Without a cold tier the daily FSx backup is the only copy of the hot tier; with one, FSx
# refuses backups (a file system linked to a data repository) and the export is the copy.
DEFAULT_BACKUP_RETENTION_DAYS = 7


def _hot(raw: Data, has_cold: bool) -> HotTier:
    return HotTier(
        float(raw["capacityTiB"]),
        int(raw.get("throughputPerTiB", 250)),
        raw.get("storageClass"),
        backup_retention_days=int(raw.get("backupRetentionDays", 0 if has_cold else DEFAULT_BACKUP_RETENTION_DAYS)),
        backup_start_time=raw.get("backupStartTime", "03:00"),
        efa=bool(raw.get("efa", False)),
    )


def _storage(raw: Data) -> Storage:
    hot, warm, cold = raw.get("hot"), raw.get("warm"), raw.get("cold")
    workload = raw.get("workload", {})
    return Storage(
        hot=_hot(hot, cold is not None) if hot is not None else None,
        warm=WarmTier(float(warm["capacityTiB"]), warm.get("storageClass"), warm.get("zoneId"))
        if warm is not None
        else None,
        cold=ColdTier(
            tuple(
                sorted(
                    (Transition(t["afterDays"], t["storageClass"]) for t in cold.get("transitions", [])),
                    key=lambda t: t.after_days,
                )
            ),
            cold.get("expireAfterDays"),
            cold.get("storageClass"),
            float(cold["capacityTiB"]) if "capacityTiB" in cold else None,
        )
        if cold is not None
        else None,
        critical_iops_share=float(raw.get("qos", {}).get("criticalIopsShare", 0.8)),
        workload=Workload(workload.get("checkpointGiB"), workload.get("modelGiB")),
    )


def _sriov(raw: Data | None) -> Sriov | None:
    if raw is None:
        return None
    rails = tuple(Rail(r["pfName"], r["subnet"], r.get("gateway")) for r in raw["rails"])
    return Sriov(raw["vfsPerNic"], rails)


def _procurement(raw: Data | None, provider: Provider) -> Procurement | None:
    if provider is Provider.KUBERNETES:
        return None
    raw = raw or {"spot": 0, "reserved": 0, "onDemand": 100}
    prices = raw.get("prices", {})
    return Procurement(
        spot=float(raw["spot"]),
        reserved=float(raw["reserved"]),
        on_demand=float(raw["onDemand"]),
        prices=Prices(
            on_demand_hourly=MappingProxyType({k: float(v) for k, v in prices.get("onDemandHourly", {}).items()}),
            spot_discount=prices.get("spotDiscount"),
            reserved_discount=prices.get("reservedDiscount"),
            as_of=prices.get("asOf"),
            capacity_block_hourly=MappingProxyType(
                {k: float(v) for k, v in prices.get("capacityBlockHourly", {}).items()}
            ),
        ),
    )


def build_model(data: Data) -> Platform:
    """Build the model from a merged spec that passed validation without errors."""
    target = data["target"]
    provider = Provider(target["provider"])
    pools = tuple(_pool(p, provider) for p in data["gpuNodePools"])
    network = data.get("network", {})
    fabric = network.get("fabric")
    auto = data.get("autoscaling", {})
    sched = data.get("scheduling", {})
    tenants: list[Tenant] = []
    for t in data.get("tenants", []):
        isolation = t.get("isolation", "soft")
        allowed = t.get("pools") or [p.name for p in pools if isolation_permits(isolation, p)]
        tenants.append(
            Tenant(
                t["name"],
                t["gpus"],
                t.get("priority", "normal"),
                isolation,
                tuple(allowed),
                principals=tuple(t.get("principals", [])),
            )
        )
    window, cooldown = auto.get("window", "5m"), auto.get("cooldown", "10m")
    return Platform(
        metadata=Metadata(data["metadata"]["name"], _frozen_map(data["metadata"].get("tags"))),
        target=Target(
            provider=provider,
            region=target.get("region"),
            zones=tuple(target.get("zones", [])),
            kubernetes_version=target["kubernetesVersion"],
            endpoint=target.get("endpoint", "private"),
            context=target.get("context"),
            public_access_cidrs=tuple(target.get("publicAccessCidrs", [])),
            bootstrap_cluster_creator_admin=bool(target.get("bootstrapClusterCreatorAdmin", True)),
            node_ami=target.get("nodeAmi"),
            addon_versions=_frozen_map(target.get("addonVersions")),
        ),
        pools=pools,
        network=Network(
            vpc_cidr=network.get("vpcCidr", "10.0.0.0/16"),
            fabric=Fabric(
                topology=fabric.get("topology", "fat-tree"),
                tiers=fabric["tiers"],
                switch_radix=fabric["switchRadix"],
                link_gbps=fabric["linkGbps"],
                oversubscription=float(fabric.get("oversubscription", 1)),
                transport=fabric.get("transport", "efa" if provider is Provider.AWS else "roce"),
                sriov=_sriov(fabric.get("sriov")),
                topology_labels=tuple(fabric.get("topologyLabels", [])),
            )
            if fabric is not None
            else None,
        ),
        storage=_storage(data.get("storage", {})),
        procurement=_procurement(data.get("procurement"), provider),
        autoscaling=Autoscaling(
            window=window,
            window_seconds=duration_seconds(window),
            scale_up_above=float(auto.get("scaleUpAbove", 0.8)),
            scale_down_below=float(auto.get("scaleDownBelow", 0.3)),
            cooldown=cooldown,
            cooldown_seconds=duration_seconds(cooldown),
        ),
        scheduling=Scheduling(
            queueing=sched.get("queueing", "kueue"),
            topology_aware=bool(sched.get("topologyAware", True)),
            gpu_scheduler_policy=sched.get("gpuScheduler", {}).get("policy", "spread"),
        ),
        tenants=tuple(tenants),
        observability=Observability(data.get("observability", {}).get("retention", "15d")),
        workloads=build_workloads(data.get("workloads")),
    )


def gpu_of(pool: GpuNodePool) -> GpuModel:
    """The catalog GPU of a pool (validation guarantees it exists)."""
    model = gpu_model(pool.gpu_model)
    assert model is not None
    return model
