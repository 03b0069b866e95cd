"""GPU node pools as frozen dataclasses: their GPUs, node range, sharing and markets.

Part of the model (gpuplat/model/__init__.py re-exports it); kept apart so each file stays readable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, cast

from gpuplat import view
from gpuplat.catalog import SHARING_OVERHEAD, GpuModel, gpu_model
from gpuplat.vocabulary import DEFAULT_POOL_FABRIC, MARKET_ORDER, Market, Provider, SharingMode, schema_default

Data = Mapping[str, Any]


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


class Repair(StrEnum):
    REPLACE = "replace"  # aws: Karpenter's node repair replaces the node
    REBOOT = "reboot"  # aws: reboots it in place for a reboot-clearable GPU fault, else replaces it
    NONE = "none"  # nothing replaces it; an operator repairs


@dataclass(frozen=True)
class PoolHealth:
    """What happens when a node of the pool turns unhealthy (docs/health.md)."""

    repair: Repair = Repair.NONE
    spare_nodes: int = 0  # reserved nodes beyond the reserved share, held for replacements


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
    # Its own market mix (percent per market), split apart from the fleet-wide procurement; None:
    # the pool is part of the fleet-wide split (gpuplat/plan/procurement.py).
    procurement: Mapping[Market, float] | None = None
    health: PoolHealth = field(default_factory=PoolHealth)

    @property
    def max_gpus(self) -> int:
        return self.nodes.max * self.gpus_per_node


def gpu_of(pool: GpuNodePool) -> GpuModel:
    """The catalog GPU of a pool (validation guarantees it exists)."""
    model = gpu_model(pool.gpu_model)
    assert model is not None
    return model


# ---- construction from validated data -------------------------------------------------------


def frozen_map(value: Any) -> Mapping[str, Any]:
    return MappingProxyType(dict(cast("dict[str, Any]", value or {})))


def _sharing(raw: Data) -> Sharing:
    mode = SharingMode(view.sharing_mode(raw))
    sharing = view.as_map(raw.get("sharing")) or {}
    layout = sharing.get("layout")
    return Sharing(
        mode=mode,
        profile=sharing.get("profile"),
        layout=MappingProxyType(dict(layout)) if layout is not None else None,
        replicas=sharing.get("replicas"),
        overhead=float(sharing.get("overhead", SHARING_OVERHEAD[mode.value])),
    )


def build_pool(raw: Data, provider: Provider) -> GpuNodePool:
    gpu = view.pool_gpu(provider, raw)
    assert gpu is not None, "validation guarantees a catalog GPU"
    markets = view.markets(raw) if provider is Provider.AWS else ()
    return GpuNodePool(
        name=raw["name"],
        instance_type=raw.get("instanceType"),
        gpu_model=gpu.model.name,
        gpus_per_node=gpu.count,
        node_selector=frozen_map(raw.get("nodeSelector")),
        nics_per_node=raw.get("nicsPerNode", gpu.count) if provider is Provider.KUBERNETES else None,
        nodes=NodeRange(raw["nodes"]["min"], raw["nodes"]["max"]),
        sharing=_sharing(raw),
        fabric=bool(raw.get("fabric", DEFAULT_POOL_FABRIC)),
        markets=tuple(m for m in MARKET_ORDER if m in markets),
        labels=frozen_map(raw.get("labels")),
        taints=tuple(Taint(t["key"], t.get("value"), t["effect"]) for t in raw.get("taints", [])),
        reservation=_reservation(raw.get("reservation")),
        procurement=_own_mix(raw) if provider is Provider.AWS else None,
        health=_health(view.as_map(raw.get("health")) or {}, provider),
    )


def _health(raw: Data, provider: Provider) -> PoolHealth:
    # The default depends on the provider: only aws has a provisioner that can replace a node.
    default = Repair.REPLACE if provider is Provider.AWS else Repair.NONE
    return PoolHealth(
        repair=Repair(raw.get("repair", default.value)),
        spare_nodes=int(raw.get("spareNodes", schema_default("poolHealth", "spareNodes"))),
    )


def _own_mix(raw: Data) -> Mapping[Market, float] | None:
    shares = view.pool_procurement(raw)
    return None if shares is None else MappingProxyType({m: shares[m] for m in MARKET_ORDER})


def _reservation(raw: Data | None) -> PoolReservation:
    if raw is None:
        return PoolReservation()
    return PoolReservation(
        kind=ReservationKind(raw.get("kind", ReservationKind.ON_DEMAND_RESERVATION.value)),
        ids=tuple(raw.get("ids", [])),
        tags=frozen_map(raw.get("tags")),
    )
