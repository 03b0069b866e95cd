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
THROUGHPUT_PER_TIB = (125, 250, 500, 1000)  # MB/s per TiB


def capacity_gib(requested_gib: float) -> int:
    """The smallest size FSx accepts that holds `requested_gib`."""
    if requested_gib <= MIN_GIB:
        return MIN_GIB
    return math.ceil(requested_gib / STEP_GIB - 1e-9) * STEP_GIB


def throughput_mbps(size_gib: int, per_tib: int) -> float:
    """Aggregate MB/s of a file system: its TiB (as AWS counts them) x the per-TiB rate."""
    return size_gib / GIB_PER_TIB * per_tib
