"""Storage: per tier capacity, throughput, checkpoint-write / model-load time, cold lifecycle.

Units, stated once because AWS mixes them: the spec's TiB are FSx's (1 TiB = 1000 GiB, see
gpuplat/catalog/fsx.py); FSx throughput is in MB/s, decimal (10^6 bytes/s); 1 GiB = 1073.741824 MB.

Hot tier on aws (FSx for Lustre PERSISTENT_2 SSD):
    requested GiB = capacityTiB x 1000
    capacity GiB  = 1200 if requested <= 1200, else ceil(requested / 2400) x 2400
                    (the sizes FSx accepts: 1200, 2400, then increments of 2400)
    throughput    = capacity GiB / 1000 x throughputPerTiB   MB/s, aggregate (AWS's formula)
    checkpoint write seconds = checkpointGiB x 1073.741824 / throughput, model load likewise:
    the best case at the whole file system's throughput, no other traffic. With top-level
    `workloads`, the sizes are the largest checkpoint and model among them
    (gpuplat/plan/workloads.py), not storage.workload's.
Hot tier on kubernetes: an existing StorageClass; capacity is as requested (no rounding) and
its throughput is unknown, so there are no times.

Storage QoS on aws (`criticalIopsShare` s): FSx throughput belongs to one file system, so
the hot tier is two. The file system above (the spec's size) is the critical one: tenants of
priority high or critical mount it. The others mount a second, standard file system of the
most throughput T_std with T_std / (T_crit + T_std) <= 1 - s and T_std <= T_crit, the
smaller size on a tie (fsx.standard_file_system). With no standard tenant there is no second
file system. Both are PERSISTENT_2 sizes, so the share is met exactly or with room to spare:
critical work keeps at least s of the hot tier's aggregate throughput (and IOPS, which FSx
scales with the same servers) whatever the standard tenants do. The times above are the
critical file system's.

Warm: the capacity (S3 Express One Zone has no provisioned throughput). Hot and warm live in the
plan's fabric zone (gpuplat/plan/zones.py).
Cold lifecycle: STANDARD at day 0, the transitions in day order, EXPIRE at expireAfterDays.
"""

from __future__ import annotations

import math

from gpuplat.catalog import fsx
from gpuplat.model import Platform, Provider
from gpuplat.plan.codes import LUSTRE_OVER_DEFAULT_QUOTA
from gpuplat.plan.types import HotTierPlan, LifecycleStep, PlanFinding, StandardHotPlan, StoragePlan, WarmTierPlan

MB_PER_GIB = 1073.741824


def transfer_seconds(gib: float | None, mbps: float | None) -> float | None:
    if gib is None or not mbps:
        return None
    return gib * MB_PER_GIB / mbps


def plan_storage(model: Platform, sizes: tuple[float | None, float | None] | None = None) -> StoragePlan:
    """`sizes`: (checkpoint GiB, model GiB) of the reference workloads, replacing storage.workload's."""
    storage, aws = model.storage, model.target.provider is Provider.AWS
    checkpoint, weights = sizes or (storage.workload.checkpoint_gib, storage.workload.model_gib)
    hot = None
    if storage.hot is not None:
        requested = storage.hot.capacity_tib * fsx.GIB_PER_TIB
        if aws:
            capacity = fsx.capacity_gib(requested)
            per_tib: int | None = storage.hot.throughput_per_tib
            mbps: float | None = fsx.throughput_mbps(capacity, per_tib)
        else:
            capacity, per_tib, mbps = math.ceil(requested - 1e-9), None, None
        standard, tenants, share = _standard(model, mbps)
        hot = HotTierPlan(
            requested_tib=storage.hot.capacity_tib,
            capacity_gib=capacity,
            throughput_per_tib=per_tib,
            throughput_mbps=mbps,
            checkpoint_write_seconds=transfer_seconds(checkpoint, mbps),
            model_load_seconds=transfer_seconds(weights, mbps),
            rounded=capacity > requested + 1e-9,
            standard=standard,
            standard_tenants=tenants,
            critical_throughput_share=share,
            critical_share_asked=model.storage.critical_iops_share if standard is not None else None,
        )
    warm = WarmTierPlan(storage.warm.capacity_tib) if storage.warm is not None else None
    steps: list[LifecycleStep] = []
    if storage.cold is not None:
        first = "STANDARD" if aws else storage.cold.storage_class or "STANDARD"
        steps.append(LifecycleStep(0, first))
        steps.extend(LifecycleStep(t.after_days, t.storage_class) for t in storage.cold.transitions)
        if storage.cold.expire_after_days is not None:
            steps.append(LifecycleStep(storage.cold.expire_after_days, "EXPIRE"))
    return StoragePlan(hot, warm, tuple(steps))


def standard_tenants(model: Platform) -> tuple[str, ...]:
    """Tenants whose hot volume is on the standard file system (aws): priority below high."""
    return tuple(t.name for t in model.tenants if t.priority not in fsx.CRITICAL_PRIORITIES)


def _standard(
    model: Platform, critical_mbps: float | None
) -> tuple[StandardHotPlan | None, tuple[str, ...], float | None]:
    tenants = standard_tenants(model)
    if critical_mbps is None or not tenants:
        return None, (), None
    size = fsx.standard_file_system(critical_mbps, model.storage.critical_iops_share)
    if size is None:  # validation refuses this spec (rule GP257)
        raise ValueError("the critical IOPS share leaves no FSx size for the standard tenants")
    gib, per_tib = size
    mbps = fsx.throughput_mbps(gib, per_tib)
    return StandardHotPlan(gib, per_tib, mbps), tenants, critical_mbps / (critical_mbps + mbps)


def storage_quota_findings(model: Platform, storage: StoragePlan) -> tuple[PlanFinding, ...]:
    """GP356: the hot tier's file systems alone exceed the default Lustre storage quota (aws).
    A warning: the account may hold a raised quota, which preflight reads before anything exists."""
    hot = storage.hot
    if model.target.provider is not Provider.AWS or hot is None:
        return ()
    total = hot.total_capacity_gib
    if total <= fsx.DEFAULT_STORAGE_QUOTA_GIB:
        return ()
    standard = total - hot.capacity_gib
    parts = f"{hot.capacity_gib:,} GiB" + (f" + the standard file system's {standard:,} GiB" if standard else "")
    region = model.target.region or "the region"
    return (
        LUSTRE_OVER_DEFAULT_QUOTA.finding(
            ("storage", "hot", "capacityTiB"),
            f"the hot tier takes {total:,} GiB of FSx for Lustre storage ({parts}), above the default "
            f"'{fsx.STORAGE_QUOTA_NAME}' quota of {fsx.DEFAULT_STORAGE_QUOTA_GIB:,} GiB per region (it counts "
            f"every PERSISTENT_2 Lustre file system of the account); unless {region}'s quota was raised, request "
            f"an increase before deploying (aws service-quotas request-service-quota-increase --service-code fsx "
            f"--quota-code {fsx.STORAGE_QUOTA_CODE} --desired-value {total} --region {region}); "
            f"`gpuplat preflight` reads the account's value",
        ),
    )
