"""The validated, defaulted spec as frozen dataclasses: the only thing later stages read.

`build_model` runs after validation passed with no error; it fills defaults and resolves
catalog facts (GPU model and count of an instance type) so the planner and the components
never look at raw YAML data or repeat a default. The spec's words (providers, markets,
sharing modes) and its defaults are gpuplat/vocabulary.py's; what the rules also read (a pool's
GPUs, sharing mode and markets, a tenant's pools) is read through gpuplat/view.py, as the rules
read it. Pools, storage and reference
workloads have modules of their own in this package (pools.py, storage.py, workloads.py),
their public names re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from gpuplat import vocabulary as vocab
from gpuplat.model.fleet import Fleet as Fleet
from gpuplat.model.fleet import FleetMember as FleetMember
from gpuplat.model.fleet import build_fleet
from gpuplat.model.pools import GpuNodePool as GpuNodePool
from gpuplat.model.pools import NodeRange as NodeRange
from gpuplat.model.pools import PoolHealth as PoolHealth
from gpuplat.model.pools import PoolReservation as PoolReservation
from gpuplat.model.pools import Repair as Repair
from gpuplat.model.pools import ReservationKind as ReservationKind
from gpuplat.model.pools import Sharing as Sharing
from gpuplat.model.pools import Taint as Taint
from gpuplat.model.pools import build_pool, frozen_map
from gpuplat.model.pools import gpu_of as gpu_of
from gpuplat.model.storage import ColdTier as ColdTier
from gpuplat.model.storage import HotTier as HotTier
from gpuplat.model.storage import Storage as Storage
from gpuplat.model.storage import Transition as Transition
from gpuplat.model.storage import WarmTier as WarmTier
from gpuplat.model.storage import Workload as Workload
from gpuplat.model.storage import build_storage
from gpuplat.model.workloads import ReferenceWorkload, build_workloads
from gpuplat.view import allowed_pools, isolation, priority
from gpuplat.vocabulary import MARKET_ORDER as MARKET_ORDER
from gpuplat.vocabulary import SHARED_MODES as SHARED_MODES
from gpuplat.vocabulary import Market as Market
from gpuplat.vocabulary import Provider as Provider
from gpuplat.vocabulary import SharingMode as SharingMode


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
    # aws: the spec's choice of the fabric zone; None lets the planner choose (gpuplat/plan/zones.py)
    fabric_zone: str | None = None
    public_access_cidrs: tuple[str, ...] = ()  # aws, public endpoint: who may reach it (empty: anyone)
    # aws: EKS makes the cluster's creator a cluster-admin. Fixed at creation (ForceNew); true is
    # what every existing stack was created with.
    bootstrap_cluster_creator_admin: bool = True
    node_ami: str | None = None  # aws: al2023@vYYYYMMDD override of the catalog's pinned release
    addon_versions: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # aws: EKS add-on pins


@dataclass(frozen=True)
class Rail:
    """One fabric NIC per node: its physical function and the subnet its VFs get addresses from."""

    pf_name: str
    subnet: str
    gateway: str | None


@dataclass(frozen=True)
class Dpdk:
    """The last `vfs_per_nic` VFs of every rail, for DPDK pods, and the hugepages each fabric node holds."""

    vfs_per_nic: int
    hugepages_gib: int
    node_memory_gib: int


@dataclass(frozen=True)
class Sriov:
    vfs_per_nic: int
    rails: tuple[Rail, ...]  # rail order: rail i is rails[i]
    dpdk: Dpdk | None = None

    @property
    def rdma_vfs(self) -> int:
        return self.vfs_per_nic - (self.dpdk.vfs_per_nic if self.dpdk else 0)


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
    requeue_limit: int | None = None  # Kueue's backoffLimitCount; None: requeued without limit


@dataclass(frozen=True)
class TenantFabric:
    """A tenant's segment and bandwidth share of every RoCE rail (percent of a rail's link per VF)."""

    vlan: int | None = None  # None: untagged, shared with the other untagged tenants
    guaranteed_percent: float = 0.0
    peak_percent: float = 100.0


@dataclass(frozen=True)
class Tenant:
    name: str
    gpus: int
    priority: str
    isolation: str  # hard | soft
    pools: tuple[str, ...]  # resolved allow-list: explicit, or every pool its isolation permits
    # aws: IAM role / user ARNs mapped into the tenant's Kubernetes group by EKS access entries
    principals: tuple[str, ...] = ()
    fabric: TenantFabric = TenantFabric()
    # Service level: seconds from submission to first start its jobs should stay within (simulate reports the share)
    target_wait_seconds: int | None = None


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
    fleet: Fleet | None = None  # several platforms behind one queue (model/fleet.py)
    pools_by_name: Mapping[str, GpuNodePool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pools_by_name", MappingProxyType({p.name: p for p in self.pools}))

    @property
    def fabric_pools(self) -> tuple[GpuNodePool, ...]:
        return tuple(p for p in self.pools if p.fabric)

    @property
    def rdma_fabric(self) -> bool:
        """An existing cluster's RoCE / InfiniBand fabric with pools on it: SR-IOV rails and
        GPUDirect RDMA (peermem). On aws the fabric is EFA, which needs neither."""
        fabric = self.network.fabric
        return (
            self.target.provider is Provider.KUBERNETES
            and fabric is not None
            and fabric.transport in vocab.RDMA_TRANSPORTS
            and bool(self.fabric_pools)
        )


def isolation_permits(isolation: str, pool: GpuNodePool) -> bool:
    """Whether a tenant of this isolation may run on the pool (hard: never on MPS / time-slicing)."""
    return vocab.isolation_permits(isolation, pool.sharing.mode)


# ---- construction from validated data -------------------------------------------------------

Data = Mapping[str, Any]


def _sriov(raw: Data | None) -> Sriov | None:
    if raw is None:
        return None
    rails = tuple(Rail(r["pfName"], r["subnet"], r.get("gateway")) for r in raw["rails"])
    dpdk = raw.get("dpdk")
    return Sriov(
        raw["vfsPerNic"],
        rails,
        Dpdk(dpdk["vfsPerNic"], dpdk["hugepagesGiB"], dpdk["nodeMemoryGiB"]) if dpdk is not None else None,
    )


def _tenant_fabric(raw: Data | None) -> TenantFabric:
    raw = raw or {}
    return TenantFabric(
        vlan=raw.get("vlan"),
        guaranteed_percent=float(raw.get("guaranteedPercent", 0)),
        peak_percent=float(raw.get("peakPercent", 100)),
    )


def _network(raw: Data) -> Network:
    fabric = raw.get("fabric")
    return Network(
        vpc_cidr=raw.get("vpcCidr", vocab.DEFAULT_VPC_CIDR),
        fabric=Fabric(
            topology=fabric.get("topology", vocab.DEFAULT_TOPOLOGY),
            tiers=fabric["tiers"],
            switch_radix=fabric["switchRadix"],
            link_gbps=fabric["linkGbps"],
            oversubscription=float(fabric.get("oversubscription", vocab.DEFAULT_OVERSUBSCRIPTION)),
            transport=fabric["transport"],  # required: a wrong guess would wire the wrong NICs
            sriov=_sriov(fabric.get("sriov")),
            topology_labels=tuple(fabric.get("topologyLabels", [])),
        )
        if fabric is not None
        else None,
    )


def _procurement(raw: Data | None, provider: Provider) -> Procurement | None:
    if provider is Provider.KUBERNETES:
        return None
    raw = raw or {m.procurement_key: share for m, share in vocab.DEFAULT_MIX.items()}
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


def _tenants(raw: list[Data], pools: tuple[GpuNodePool, ...]) -> tuple[Tenant, ...]:
    modes: dict[str, str | None] = {p.name: p.sharing.mode for p in pools}
    return tuple(
        Tenant(
            t["name"],
            t["gpus"],
            priority(t),
            isolation(t),
            tuple(allowed_pools(t, modes)),  # validation: an allow-list names pools the isolation permits
            principals=tuple(t.get("principals", [])),
            fabric=_tenant_fabric(t.get("fabric")),
            target_wait_seconds=duration_seconds(t["targetWait"]) if "targetWait" in t else None,
        )
        for t in raw
    )


def _autoscaling(raw: Data) -> Autoscaling:
    window, cooldown = raw.get("window", vocab.DEFAULT_WINDOW), raw.get("cooldown", vocab.DEFAULT_COOLDOWN)
    return Autoscaling(
        window=window,
        window_seconds=duration_seconds(window),
        scale_up_above=float(raw.get("scaleUpAbove", vocab.DEFAULT_SCALE_UP_ABOVE)),
        scale_down_below=float(raw.get("scaleDownBelow", vocab.DEFAULT_SCALE_DOWN_BELOW)),
        cooldown=cooldown,
        cooldown_seconds=duration_seconds(cooldown),
    )


def _scheduling(raw: Data) -> Scheduling:
    return Scheduling(
        queueing=raw.get("queueing", vocab.DEFAULT_QUEUEING),
        topology_aware=bool(raw.get("topologyAware", vocab.DEFAULT_TOPOLOGY_AWARE)),
        gpu_scheduler_policy=raw.get("gpuScheduler", {}).get("policy", vocab.DEFAULT_GPU_SCHEDULER_POLICY),
        requeue_limit=raw.get("requeueLimit"),
    )


def _target(raw: Data, provider: Provider) -> Target:
    return Target(
        provider=provider,
        region=raw.get("region"),
        # Sorted: no object depends on the order the spec lists its zones in.
        zones=tuple(sorted(raw.get("zones", []))),
        kubernetes_version=raw["kubernetesVersion"],
        endpoint=raw.get("endpoint", vocab.DEFAULT_ENDPOINT),
        context=raw.get("context"),
        fabric_zone=raw.get("fabricZone"),
        public_access_cidrs=tuple(raw.get("publicAccessCidrs", [])),
        bootstrap_cluster_creator_admin=bool(
            raw.get("bootstrapClusterCreatorAdmin", vocab.DEFAULT_BOOTSTRAP_CLUSTER_CREATOR_ADMIN)
        ),
        node_ami=raw.get("nodeAmi"),
        addon_versions=frozen_map(raw.get("addonVersions")),
    )


def build_model(data: Data) -> Platform:
    """Build the model from a merged spec that passed validation without errors."""
    provider = Provider(data["target"]["provider"])
    pools = tuple(build_pool(p, provider) for p in data["gpuNodePools"])
    return Platform(
        metadata=Metadata(data["metadata"]["name"], frozen_map(data["metadata"].get("tags"))),
        target=_target(data["target"], provider),
        pools=pools,
        network=_network(data.get("network", {})),
        storage=build_storage(data.get("storage", {})),
        procurement=_procurement(data.get("procurement"), provider),
        autoscaling=_autoscaling(data.get("autoscaling", {})),
        scheduling=_scheduling(data.get("scheduling", {})),
        tenants=_tenants(data.get("tenants", []), pools),
        observability=Observability(data.get("observability", {}).get("retention", vocab.DEFAULT_RETENTION)),
        workloads=build_workloads(data.get("workloads")),
        fleet=build_fleet(data.get("fleet")),
    )
