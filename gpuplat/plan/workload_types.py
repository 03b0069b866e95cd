"""The records of a reference workload's plan: memory per unit, the unit a pool offers, and the
workload sized on it (gpuplat/plan/workloads.py fills them; the plan and its reports read them).
"""

from __future__ import annotations

from dataclasses import dataclass

USABLE_FRACTION = 0.9  # of a unit's memory; the rest is CUDA context, buffers, fragmentation


@dataclass(frozen=True)
class Memory:
    """GiB per unit of the pool."""

    weights: float
    gradients: float
    optimizer: float
    activations: float
    kv_cache: float

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations + self.kv_cache

    @property
    def states(self) -> float:
        return self.total - self.activations


@dataclass(frozen=True)
class Unit:
    kind: str  # gpu | mig | share
    label: str  # "H100-SXM-80GB GPU", "1g.10gb MIG instance", "1/4 share of L40S-48GB"
    memory_gib: float
    per_node: int  # such units on one node of the pool
    profile: str | None = None  # MIG profile

    @property
    def usable_gib(self) -> float:
        return self.memory_gib * USABLE_FRACTION


@dataclass(frozen=True)
class Variant:
    """The same workload with one choice changed (without AMP, without checkpointing)."""

    memory: Memory
    fits: bool
    max_micro_batch: int | None


@dataclass(frozen=True)
class WorkloadPlan:
    name: str
    kind: str
    pool: str
    gpus: int
    precision: str
    unit: Unit
    memory: Memory
    fits: bool
    max_micro_batch: int | None
    checkpoint_gib: float | None  # training only
    keep_checkpoints: int  # 0 for inference
    checkpoint_write_seconds: float | None
    model_gib: float
    model_load_seconds: float | None
    without_amp: Variant
    without_checkpointing: Variant | None  # None for inference
    # What the workload would gain: AMP for an fp32 training run, checkpointing when it is off.
    with_amp: Variant | None = None
    with_checkpointing: Variant | None = None
