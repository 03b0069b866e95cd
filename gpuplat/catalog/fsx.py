"""FSx for Lustre PERSISTENT_2 (SSD): the sizes and throughputs AWS accepts.

Sources (read 2026-11): Amazon FSx for Lustre User Guide, "Managing storage capacity" (1.2 TiB,
2.4 TiB, then increments of 2.4 TiB for PERSISTENT_2 SSD) and "Throughput capacity" (125, 250,
500, 1000 MB/s per TiB; "2.4-TiB file system x 50 MB/s/TiB = 120 MB/s"); API reference
CreateFileSystem, `StorageCapacity` (an integer of GiB: 1200, 2400, 4800, ...).

AWS counts these TiB as 1000 GiB (its 1.2 TiB file system is StorageCapacity 1200), for sizes
and for throughput alike. The spec's `capacityTiB` follows the same convention, so
`capacityTiB: 4.8` is the 4800 GiB file system a user sees in the console, not 4915 GiB
rounded up to 7200.
"""

from __future__ import annotations

import math

GIB_PER_TIB = 1000
MIN_GIB = 1200
STEP_GIB = 2400  # past the smallest size, every size is a multiple of this (2400 included)
MAX_GIB = 2**31 - 1  # StorageCapacity is an int32
# An account's default Service Quotas limit on the storage of all its PERSISTENT_2 Lustre file
# systems in a region (each deployment type has its own quota); raised on request, which takes
# days, so a plan above it says so before the deploy.
DEFAULT_STORAGE_QUOTA_GIB = 100_800
STORAGE_QUOTA_CODE = "L-8F1B9C74"
STORAGE_QUOTA_NAME = "Lustre Persistent_2 storage capacity"
QUOTAS_GUIDE = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/limits.html"
THROUGHPUT_PER_TIB = (125, 250, 500, 1000)  # MB/s per TiB
# Tenants of these priorities mount the critical (the spec's) hot file system on aws; the
# others mount the standard one (standard_file_system), so they cannot take its throughput.
CRITICAL_PRIORITIES = ("high", "critical")
# Where each hot file system exports into the cold bucket (`<prefix>/`). Tenants read the
# cold bucket under `<tenant>/`, so no tenant may be named like one (rule GP258).
COLD_EXPORT_PREFIXES = {"critical": "hot", "standard": "hot-standard"}


def capacity_gib(requested_gib: float) -> int:
    """The smallest size FSx accepts that holds `requested_gib`."""
    if requested_gib <= MIN_GIB:
        return MIN_GIB
    return math.ceil(requested_gib / STEP_GIB - 1e-9) * STEP_GIB


def throughput_mbps(size_gib: int, per_tib: int) -> float:
    """Aggregate MB/s of a file system: its TiB (as AWS counts them) x the per-TiB rate."""
    return size_gib / GIB_PER_TIB * per_tib


def largest_size_within(limit_gib: float) -> int | None:
    """The largest size FSx accepts that is at most `limit_gib`; None below the smallest size."""
    limit = limit_gib + 1e-6  # (1 - 0.8) / 0.8 x 1200 is 299.99999999999994 in floats
    if limit < MIN_GIB:
        return None
    if limit < STEP_GIB:
        return MIN_GIB
    return min(int(limit // STEP_GIB), MAX_GIB // STEP_GIB) * STEP_GIB


def standard_file_system(critical_mbps: float, critical_share: float) -> tuple[int, int] | None:
    """(GiB, MB/s per TiB) of the file system that serves standard work next to a critical one.

    FSx throughput belongs to one file system: a second file system's clients cannot take
    any of the first one's. So critical work keeps `critical_share` of the two file systems'
    aggregate throughput when standard / (critical + standard) <= 1 - share, i.e. standard <=
    critical x (1 - share) / share. The standard file system gets the most throughput under
    that bound, never more than the critical one has (the hot tier the spec sized), and of
    two sizes with equal throughput the smaller (cheaper: FSx bills per GiB, and the
    per-GiB price grows more slowly than the per-TiB throughput). None when even the
    smallest file system at the lowest rate exceeds the bound (share 1, or a small hot tier).
    """
    ratio = min(1.0, (1 - critical_share) / critical_share) if critical_share > 0 else 1.0
    bound = critical_mbps * ratio
    best: tuple[float, int, int] | None = None
    for rate in THROUGHPUT_PER_TIB:
        size = largest_size_within(bound / rate * GIB_PER_TIB)
        if size is None:
            continue
        candidate = (throughput_mbps(size, rate), -size, rate)
        if best is None or candidate > best:
            best = candidate
    return None if best is None else (-best[1], best[2])
