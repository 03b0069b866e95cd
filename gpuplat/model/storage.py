"""The storage tiers as frozen dataclasses: hot (FSx for Lustre), warm (S3 Express), cold (S3).

Part of the model (gpuplat/model/__init__.py re-exports it); kept apart so each file stays readable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpuplat.vocabulary import (
    DEFAULT_BACKUP_RETENTION_DAYS,
    DEFAULT_BACKUP_START_TIME,
    DEFAULT_CRITICAL_IOPS_SHARE,
    DEFAULT_HOT_EFA,
    DEFAULT_THROUGHPUT_PER_TIB,
)

Data = Mapping[str, Any]


@dataclass(frozen=True)
class HotTier:
    capacity_tib: float
    throughput_per_tib: int
    storage_class: str | None
    backup_retention_days: int = 0  # aws: FSx daily automatic backups (0: none)
    backup_start_time: str = DEFAULT_BACKUP_START_TIME  # HH:MM UTC
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


def build_storage(raw: Data) -> Storage:
    hot, warm, cold = raw.get("hot"), raw.get("warm"), raw.get("cold")
    workload = raw.get("workload", {})
    return Storage(
        hot=_hot(hot, has_cold=cold is not None) if hot is not None else None,
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
        critical_iops_share=float(raw.get("qos", {}).get("criticalIopsShare", DEFAULT_CRITICAL_IOPS_SHARE)),
        workload=Workload(workload.get("checkpointGiB"), workload.get("modelGiB")),
    )


def _hot(raw: Data, has_cold: bool) -> HotTier:
    return HotTier(
        float(raw["capacityTiB"]),
        int(raw.get("throughputPerTiB", DEFAULT_THROUGHPUT_PER_TIB)),
        raw.get("storageClass"),
        backup_retention_days=int(raw.get("backupRetentionDays", DEFAULT_BACKUP_RETENTION_DAYS[has_cold])),
        backup_start_time=raw.get("backupStartTime", DEFAULT_BACKUP_START_TIME),
        efa=bool(raw.get("efa", DEFAULT_HOT_EFA)),
    )
