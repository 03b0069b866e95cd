"""Rules on `storage`: FSx for Lustre sizes and throughput, StorageClasses, S3 lifecycle."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping

from gpuplat.catalog import fsx
from gpuplat.diagnostics import Level
from gpuplat.validate.registry import Finding, rule
from gpuplat.validate.rules._common import (
    Data,
    as_list,
    as_map,
    as_str,
    is_int,
    is_number,
    provider,
    section,
    show_number,
    tenants,
)
from gpuplat.view import priority
from gpuplat.vocabulary import DEFAULT_CRITICAL_IOPS_SHARE, DEFAULT_THROUGHPUT_PER_TIB

# S3 lifecycle: where objects may move from each class (AWS "supported lifecycle transitions").
_NEXT_CLASSES: Mapping[str, tuple[str, ...]] = {
    "STANDARD_IA": ("INTELLIGENT_TIERING", "ONEZONE_IA", "GLACIER_IR", "GLACIER", "DEEP_ARCHIVE"),
    "INTELLIGENT_TIERING": ("ONEZONE_IA", "GLACIER_IR", "GLACIER", "DEEP_ARCHIVE"),
    "ONEZONE_IA": ("GLACIER", "DEEP_ARCHIVE"),
    "GLACIER_IR": ("GLACIER", "DEEP_ARCHIVE"),
    "GLACIER": ("DEEP_ARCHIVE",),
    "DEEP_ARCHIVE": (),
}
# S3 rejects a transition into the IA classes before day 30, and out of them within 30 days.
_IA_CLASSES = ("STANDARD_IA", "ONEZONE_IA")
_IA_MIN_DAYS = 30
# Minimum storage durations S3 bills for, in days (objects leaving earlier are charged the rest).
_MIN_STORAGE_DAYS: Mapping[str, int] = {
    "STANDARD_IA": 30,
    "ONEZONE_IA": 30,
    "GLACIER_IR": 90,
    "GLACIER": 90,
    "DEEP_ARCHIVE": 180,
}


# Largest capacity a Kubernetes resource.Quantity (PVC request, an int64 of bytes) can express.
QUANTITY_MAX_TIB = (2**63 - 1) / 2**30 / fsx.GIB_PER_TIB


def _transitions(data: Data) -> list[tuple[int, int, str]] | None:
    """(index, afterDays, storageClass) of well-formed cold transitions on aws, or None."""
    cold = section(data, "storage", "cold")
    if provider(data) != "aws" or cold is None:
        return None
    out: list[tuple[int, int, str]] = []
    for j, raw in enumerate(as_list(cold.get("transitions"))):
        item = as_map(raw)
        days = item.get("afterDays") if item is not None else None
        cls = as_str(item.get("storageClass")) if item is not None else None
        if not is_int(days) or cls not in _NEXT_CLASSES:
            return None  # the schema pass reports it; ordering a broken list helps nobody
        out.append((j, int(days), str(cls)))
    return out


def _increasing(items: list[tuple[int, int, str]]) -> bool:
    return all(a[1] < b[1] for a, b in itertools.pairwise(items))


def _expire(data: Data) -> int | None:
    cold = section(data, "storage", "cold")
    days = cold.get("expireAfterDays") if cold is not None else None
    return int(days) if is_int(days) else None


def _path(j: int, key: str) -> tuple[str | int, ...]:
    return ("storage", "cold", "transitions", j, key)


@rule(
    "GP250",
    "hot-throughput-values",
    Level.ERROR,
    f"FSx for Lustre PERSISTENT_2 SSD offers {'/'.join(map(str, fsx.THROUGHPUT_PER_TIB))} MB/s per TiB only.",
    source="https://docs.aws.amazon.com/fsx/latest/LustreGuide/performance.html",
    fix="Set `storage.hot.throughputPerTiB` to 125, 250, 500 or 1000.",
)
def hot_throughput_values(data: Data) -> Iterator[Finding]:
    hot = section(data, "storage", "hot")
    value = hot.get("throughputPerTiB") if hot is not None else None
    if provider(data) == "aws" and is_int(value) and value not in fsx.THROUGHPUT_PER_TIB:
        yield Finding(
            ("storage", "hot", "throughputPerTiB"),
            f"throughputPerTiB {value} is not offered by FSx for Lustre PERSISTENT_2 "
            f"(valid: {', '.join(map(str, fsx.THROUGHPUT_PER_TIB))})",
        )


@rule(
    "GP251",
    "kubernetes-storage-class-required",
    Level.ERROR,
    "On an existing cluster a tier is an existing StorageClass; the platform does not create storage there.",
    fix="Add the tier's `storageClass`: the name of an existing StorageClass of the cluster.",
)
def kubernetes_storage_class_required(data: Data) -> Iterator[Finding]:
    if provider(data) != "kubernetes":
        return
    for tier in ("hot", "warm", "cold"):
        block = section(data, "storage", tier)
        if block is not None and "storageClass" not in block:
            yield Finding(
                ("storage", tier),
                f"storage.{tier} needs a storageClass on provider kubernetes: the name of the existing "
                f"StorageClass that backs the {tier} tier",
                at_key=True,
            )


@rule(
    "GP252",
    "cold-transitions-increasing",
    Level.ERROR,
    "S3 lifecycle transitions happen in time order; two at the same or an earlier day are contradictory.",
    source="https://docs.aws.amazon.com/AmazonS3/latest/userguide/lifecycle-transition-general-considerations.html",
    fix="Order `storage.cold.transitions` by `afterDays`, each later than the one before.",
)
def cold_transitions_increasing(data: Data) -> Iterator[Finding]:
    items = _transitions(data) or []
    for prev, cur in itertools.pairwise(items):
        if cur[1] <= prev[1]:
            yield Finding(
                _path(cur[0], "afterDays"),
                f"transition to {cur[2]} at day {cur[1]} does not come after the transition to {prev[2]} at "
                f"day {prev[1]}; list transitions in increasing afterDays",
            )


@rule(
    "GP253",
    "cold-expire-after-transitions",
    Level.ERROR,
    "S3 rejects a lifecycle rule whose expiration day is not after its transition days.",
    source="https://docs.aws.amazon.com/AmazonS3/latest/userguide/lifecycle-transition-general-considerations.html",
    fix="Set `storage.cold.expireAfterDays` after the last transition's `afterDays`.",
)
def cold_expire_after_transitions(data: Data) -> Iterator[Finding]:
    items, expire = _transitions(data), _expire(data)
    if not items or expire is None:
        return
    last = max(items, key=lambda t: t[1])
    if expire <= last[1]:
        yield Finding(
            ("storage", "cold", "expireAfterDays"),
            f"expireAfterDays {expire} is not after the transition to {last[2]} at day {last[1]}; "
            f"expire after day {last[1]} or drop the transition",
        )


@rule(
    "GP254",
    "cold-transition-minimum-days",
    Level.ERROR,
    "S3 lifecycle: objects enter STANDARD_IA/ONEZONE_IA at day 30 or later and stay there 30 days before moving on.",
    source="https://docs.aws.amazon.com/AmazonS3/latest/userguide/lifecycle-transition-general-considerations.html",
    fix="Move the STANDARD_IA/ONEZONE_IA transition to day 30 or later, and the next one at least 30 days after it.",
)
def cold_transition_minimum_days(data: Data) -> Iterator[Finding]:
    items = _transitions(data) or []
    for j, days, cls in items:
        if cls in _IA_CLASSES and days < _IA_MIN_DAYS:
            yield Finding(
                _path(j, "afterDays"),
                f"S3 moves objects to {cls} no earlier than day {_IA_MIN_DAYS}, not at day {days}",
            )
    if not _increasing(items):
        return
    for prev, cur in itertools.pairwise(items):
        if prev[2] in _IA_CLASSES and cur[1] - prev[1] < _IA_MIN_DAYS:
            yield Finding(
                _path(cur[0], "afterDays"),
                f"objects must stay {_IA_MIN_DAYS} days in {prev[2]} before moving to {cur[2]}: use afterDays of at "
                f"least {prev[1] + _IA_MIN_DAYS}, not {cur[1]}",
            )


@rule(
    "GP255",
    "cold-transition-order",
    Level.ERROR,
    "S3 lifecycle only moves objects down its waterfall (e.g. never from GLACIER to GLACIER_IR or STANDARD_IA).",
    source="https://docs.aws.amazon.com/AmazonS3/latest/userguide/lifecycle-transition-general-considerations.html",
    fix=(
        "Order the transitions down S3's waterfall: STANDARD_IA, INTELLIGENT_TIERING, ONEZONE_IA, GLACIER_IR, "
        "GLACIER, DEEP_ARCHIVE."
    ),
)
def cold_transition_order(data: Data) -> Iterator[Finding]:
    items = _transitions(data) or []
    if not _increasing(items):
        return
    for prev, cur in itertools.pairwise(items):
        allowed = _NEXT_CLASSES[prev[2]]
        if cur[2] not in allowed:
            valid = ", ".join(allowed) if allowed else "none, it is the last class"
            yield Finding(
                _path(cur[0], "storageClass"),
                f"S3 cannot move objects from {prev[2]} to {cur[2]} (from {prev[2]} it can move to: {valid})",
            )


@rule(
    "GP256",
    "storage-capacity-limit",
    Level.ERROR,
    "FSx StorageCapacity is an int32 of GiB (aws hot tier); a Kubernetes PVC size an int64 of bytes.",
    source="https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateFileSystem.html",
    fix="Lower the tier's `capacityTiB` to the limit the message names.",
)
def storage_capacity_limit(data: Data) -> Iterator[Finding]:
    kind = provider(data)
    for tier in ("hot", "warm"):
        block = section(data, "storage", tier)
        tib = block.get("capacityTiB") if block is not None else None
        if not is_number(tib):
            continue
        # Compared after rounding up to an FSx size: that is the number the API receives.
        if kind == "aws" and tier == "hot" and fsx.capacity_gib(tib * fsx.GIB_PER_TIB) > fsx.MAX_GIB:
            limit = f"{fsx.MAX_GIB} GiB (once rounded up to an FSx size), the largest FSx for Lustre size the API takes"
        elif kind == "kubernetes" and tib > QUANTITY_MAX_TIB:
            limit = f"{QUANTITY_MAX_TIB:.0f} TiB, the largest size a Kubernetes volume can request"
        else:
            continue
        yield Finding(
            ("storage", tier, "capacityTiB"),
            f"{tier} tier capacity {show_number(tib)} TiB is above {limit}",
        )


@rule(
    "GP257",
    "critical-share-reachable",
    Level.ERROR,
    "FSx throughput is per file system; standard tenants need a second one, and its smallest "
    "(1200 GiB at 125 MB/s/TiB) must fit under the share critical work keeps.",
    source="https://docs.aws.amazon.com/fsx/latest/LustreGuide/performance.html",
    fix=(
        "Lower `storage.qos.criticalIopsShare`, or raise `storage.hot` capacity or throughput so the standard "
        "tenants' file system fits beside it."
    ),
)
def critical_share_reachable(data: Data) -> Iterator[Finding]:
    hot = section(data, "storage", "hot")
    tib = hot.get("capacityTiB") if hot is not None else None
    # Unset, the model takes the default rate: the rule must judge the file system that is built.
    rate = hot.get("throughputPerTiB", DEFAULT_THROUGHPUT_PER_TIB) if hot is not None else None
    qos = section(data, "storage", "qos")
    share = (qos or {}).get("criticalIopsShare", DEFAULT_CRITICAL_IOPS_SHARE)
    if provider(data) != "aws" or not is_number(tib) or not is_number(share) or rate not in fsx.THROUGHPUT_PER_TIB:
        return  # kubernetes owns no file system; broken values have errors of their own
    if not 0 < tib * fsx.GIB_PER_TIB <= fsx.MAX_GIB:
        return
    standard = [str(t.get("name")) for _, t in tenants(data) if priority(t) not in fsx.CRITICAL_PRIORITIES]
    critical_mbps = fsx.throughput_mbps(fsx.capacity_gib(tib * fsx.GIB_PER_TIB), int(rate))
    if not standard or fsx.standard_file_system(critical_mbps, float(share)) is not None:
        return
    smallest = fsx.throughput_mbps(fsx.MIN_GIB, fsx.THROUGHPUT_PER_TIB[0])
    left = critical_mbps * (1 - share) / share if share > 0 else critical_mbps
    yield Finding(
        ("storage", "qos", "criticalIopsShare") if qos is not None and "criticalIopsShare" in qos else ("storage",),
        f"criticalIopsShare {show_number(share)} next to the hot tier's {critical_mbps:g} MB/s leaves "
        f"{left:.4g} MB/s for the standard tenants ({', '.join(standard)}), less than the smallest FSx for "
        f"Lustre file system ({smallest:g} MB/s): lower the share, enlarge the hot tier, or give those "
        f"tenants priority high",
    )


@rule(
    "GP258",
    "tenant-name-is-an-export-prefix",
    Level.ERROR,
    "The hot file systems export to hot/ and hot-standard/ in the cold bucket, which tenants see under <tenant>/.",
    fix="Rename the tenant: `hot` and `hot-standard` are the hot file systems' export prefixes.",
)
def tenant_name_is_an_export_prefix(data: Data) -> Iterator[Finding]:
    if provider(data) != "aws" or section(data, "storage", "hot") is None or section(data, "storage", "cold") is None:
        return
    prefixes = set(fsx.COLD_EXPORT_PREFIXES.values())
    for i, tenant in tenants(data):
        name = tenant.get("name")
        if name in prefixes:
            yield Finding(
                ("tenants", i, "name"),
                f"tenant {name} would read the cold bucket under {name}/, where the hot tier exports every "
                f"tenant's files; choose another name",
            )


@rule(
    "GP310",
    "hot-capacity-rounded",
    Level.WARNING,
    "FSx for Lustre PERSISTENT_2 SSD sizes are 1200 GiB, 2400 GiB, then multiples of 2400 GiB.",
    source="https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateFileSystem.html",
    fix="Set `storage.hot.capacityTiB` to a size FSx offers (the message names the rounded one).",
)
def hot_capacity_rounded(data: Data) -> Iterator[Finding]:
    hot = section(data, "storage", "hot")
    tib = hot.get("capacityTiB") if hot is not None else None
    if provider(data) != "aws" or not is_number(tib) or not 0 < tib * fsx.GIB_PER_TIB <= fsx.MAX_GIB:
        return  # non-positive or oversized capacities have errors of their own
    requested = tib * fsx.GIB_PER_TIB
    size = fsx.capacity_gib(requested)
    if size > requested + 1e-9:
        yield Finding(
            ("storage", "hot", "capacityTiB"),
            f"FSx for Lustre has no {show_number(tib)} TiB size ({show_number(round(requested, 1))} GiB); the hot "
            f"tier will be {size} GiB ({size / fsx.GIB_PER_TIB:g} TiB), the next size PERSISTENT_2 accepts "
            f"(1.2 TiB, 2.4 TiB, then steps of 2.4 TiB)",
        )


@rule(
    "GP311",
    "cold-minimum-storage-duration",
    Level.WARNING,
    "S3 bills STANDARD_IA/ONEZONE_IA for at least 30 days, GLACIER_IR/GLACIER 90, DEEP_ARCHIVE 180.",
    source="https://aws.amazon.com/s3/pricing/",
    fix=(
        "Keep objects in each class at least its minimum duration (move the next transition or the expiry later), "
        "or acknowledge the charge."
    ),
)
def cold_minimum_storage_duration(data: Data) -> Iterator[Finding]:
    items = _transitions(data) or []
    if not _increasing(items):
        return
    expire = _expire(data)
    # Objects leave a class at the next transition, or at expiry after the last one.
    leaves = [nxt[1] for nxt in items[1:]] + ([expire] if expire is not None else [])
    for (j, days, cls), leave in zip(items, leaves, strict=False):
        minimum = _MIN_STORAGE_DAYS.get(cls)
        if minimum is None or leave <= days or leave - days >= minimum:
            continue  # leave <= days is an error of its own (increasing / expiry rules)
        yield Finding(
            _path(j, "storageClass"),
            f"objects stay {leave - days} days in {cls} but S3 bills {cls} for at least {minimum} days, so "
            f"each object is charged for {minimum}",
        )
