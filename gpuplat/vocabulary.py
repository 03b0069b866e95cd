"""The spec's vocabulary: its enums, the market <-> procurement-key table, and its defaults.

The schema, the model, the semantic rules, the planner, the reports and the components all speak
these words; this module is their one home in code, so adding a market or a sharing mode, or
changing a default, is one edit here (and the schema) instead of a hunt through four files.

Defaults are not written here: every field `default` of `schemas/platform.schema.json` is read
when this module is imported, so the schema, which editors and the generated reference show to
users, is the only place a default is written. What the schema cannot say as a `default` (a
default of a whole absent section, or one that depends on the provider) is written here, each
with its reason. The enums are written here and tests/test_vocabulary.py holds them equal to the
schema's enums.

Imports nothing from gpuplat: the catalog, the model and the rules all import it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

# Inside the package, so an installed gpuplat carries it; in the repository a symlink to the
# schema editors use, schemas/platform.schema.json (the wheel holds the file itself).
SCHEMA_PATH = Path(__file__).parent / "schemas" / "platform.schema.json"
_SCHEMA = cast("dict[str, Any]", json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))


def schema_default(definition: str, field: str) -> Any:
    """The schema's `default` of field `field` of `$defs/<definition>` (KeyError when it has none)."""
    return _SCHEMA["$defs"][definition]["properties"][field]["default"]


# ---- enums ------------------------------------------------------------------------------------


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


# The order markets are shown and split in: reserved first (bought for the whole term), on-demand last.
MARKET_ORDER: tuple[Market, ...] = (Market.RESERVED, Market.SPOT, Market.ON_DEMAND)
# The order of the market keys under `procurement:` (the schema's), in which messages list them.
PROCUREMENT_ORDER: tuple[Market, ...] = (Market.SPOT, Market.RESERVED, Market.ON_DEMAND)


class SharingMode(StrEnum):
    EXCLUSIVE = "exclusive"
    MIG = "mig"
    MPS = "mps"
    TIME_SLICING = "time-slicing"
    FRACTIONAL = "fractional"


class GpuSchedulerPolicy(StrEnum):
    """How a fractional pool's scheduler scores nodes and their GPUs (`scheduling.gpuScheduler.policy`)."""

    SPREAD = "spread"
    BINPACK = "binpack"


# `gpuplat simulate --gpu-placement`: the scheduler's policies, or a GPU per job (no sharing, a what-if).
WHOLE_GPU = "whole"
GPU_PLACEMENTS: tuple[str, ...] = (*(p.value for p in GpuSchedulerPolicy), WHOLE_GPU)

SHARED_MODES = frozenset({SharingMode.MPS, SharingMode.TIME_SLICING})
"""Modes without memory or fault isolation between processes: never for tenants with `isolation: hard`."""
REPLICA_MODES = frozenset({SharingMode.MPS, SharingMode.TIME_SLICING, SharingMode.FRACTIONAL})
"""Modes whose `sharing.replicas` says how many clients share one GPU."""

HARD_ISOLATION = "hard"
# Fabric transports with RDMA NICs of their own (SR-IOV VFs, GPUDirect RDMA through peermem); EFA is AWS's.
RDMA_TRANSPORTS = frozenset({"roce", "infiniband"})


def isolation_permits(isolation: str, mode: str) -> bool:
    """Whether a tenant of this isolation may run on a pool of this sharing mode."""
    return not (isolation == HARD_ISOLATION and mode in SHARED_MODES)


# ---- defaults: the schema's `default`s ---------------------------------------------------------

DEFAULT_ENDPOINT: str = schema_default("target", "endpoint")
DEFAULT_BOOTSTRAP_CLUSTER_CREATOR_ADMIN: bool = schema_default("target", "bootstrapClusterCreatorAdmin")
DEFAULT_HOT_EFA: bool = schema_default("hotTier", "efa")
DEFAULT_SHARING_MODE = SharingMode(schema_default("pool", "sharing")["mode"])
DEFAULT_POOL_FABRIC: bool = schema_default("pool", "fabric")
DEFAULT_MARKETS: tuple[Market, ...] = tuple(Market(m) for m in schema_default("pool", "markets"))
DEFAULT_TOPOLOGY: str = schema_default("fabric", "topology")
DEFAULT_OVERSUBSCRIPTION: float = schema_default("fabric", "oversubscription")
DEFAULT_VPC_CIDR: str = schema_default("network", "vpcCidr")
DEFAULT_WINDOW: str = schema_default("autoscaling", "window")
DEFAULT_SCALE_UP_ABOVE: float = schema_default("autoscaling", "scaleUpAbove")
DEFAULT_SCALE_DOWN_BELOW: float = schema_default("autoscaling", "scaleDownBelow")
DEFAULT_COOLDOWN: str = schema_default("autoscaling", "cooldown")
DEFAULT_GPU_SCHEDULER_POLICY: str = schema_default("gpuScheduler", "policy")
DEFAULT_QUEUEING: str = schema_default("scheduling", "queueing")
DEFAULT_TOPOLOGY_AWARE: bool = schema_default("scheduling", "topologyAware")
DEFAULT_PRIORITY: str = schema_default("tenant", "priority")
DEFAULT_ISOLATION: str = schema_default("tenant", "isolation")
DEFAULT_RETENTION: str = schema_default("observability", "retention")
DEFAULT_FLEET_QUEUE: str = schema_default("fleet", "queue")
DEFAULT_CREDENTIAL_GENERATION: int = schema_default("fleet", "credentialGeneration")
DEFAULT_OPTIMIZER: str = schema_default("referenceWorkload", "optimizer")
DEFAULT_GRADIENT_CHECKPOINTING: bool = schema_default("referenceWorkload", "gradientCheckpointing")
DEFAULT_FLASH_ATTENTION: bool = schema_default("referenceWorkload", "flashAttention")
DEFAULT_SHARDING: str = schema_default("referenceWorkload", "sharding")
DEFAULT_MICRO_BATCH: int = schema_default("referenceWorkload", "microBatch")
DEFAULT_KEEP_CHECKPOINTS: int = schema_default("referenceWorkload", "keepCheckpoints")
DEFAULT_BATCH: int = schema_default("referenceWorkload", "batch")

# ---- defaults the schema cannot state as a field `default` --------------------------------------

# Without a `procurement` section (aws) the whole fleet is bought on demand: percent per market.
DEFAULT_MIX: Mapping[Market, float] = MappingProxyType({Market.SPOT: 0, Market.RESERVED: 0, Market.ON_DEMAND: 100})
# Without `storage.qos`, critical work keeps this share of the hot tier's throughput.
DEFAULT_CRITICAL_IOPS_SHARE = 0.8
# aws: FSx for Lustre PERSISTENT_2 MB/s per TiB when `storage.hot.throughputPerTiB` is absent
# (kubernetes ignores the field: the StorageClass decides).
DEFAULT_THROUGHPUT_PER_TIB = 250
# aws: days of daily FSx backups when `storage.hot.backupRetentionDays` is absent. Without a cold
# tier the backup is the only copy of the hot tier; with one, FSx refuses backups (a file system
# linked to a data repository) and the export is the copy, so the default depends on the spec.
DEFAULT_BACKUP_RETENTION_DAYS: Mapping[bool, int] = MappingProxyType({False: 7, True: 0})  # by "has a cold tier"
DEFAULT_BACKUP_START_TIME = "03:00"  # HH:MM UTC, the description's default (a pattern-checked string)

# `gpuplat simulate` replays every job submitted and run within this many days of the first
# submission (gpuplat/simulate/job.py says why); a tenant's targetWait beyond it is never missed.
REPLAY_HORIZON_DAYS = 366
