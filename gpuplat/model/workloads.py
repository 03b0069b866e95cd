"""The spec's reference workloads as frozen dataclasses, with their defaults.

Part of the model (gpuplat/model/__init__.py re-exports it); kept apart so each file stays readable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gpuplat import vocabulary as vocab
from gpuplat.vocabulary import DEFAULT_KEEP_CHECKPOINTS

SHARDING_STAGES: tuple[str, ...] = ("none", "zero1", "zero2", "zero3")


@dataclass(frozen=True)
class ReferenceWorkload:
    """A model the platform must train or serve; the plan sizes its memory and storage."""

    name: str
    kind: str  # training | inference
    pool: str
    gpus: int  # training: data-parallel GPUs; inference: GPUs of one replica (tensor parallel)
    parameters: float
    precision: str  # fp32 | amp | bf16 | fp8 | int8
    layers: int
    hidden: int
    heads: int
    kv_heads: int  # attention heads of K and V (grouped-query attention); = heads by default
    optimizer: str = vocab.DEFAULT_OPTIMIZER  # training
    gradient_checkpointing: bool = vocab.DEFAULT_GRADIENT_CHECKPOINTING  # training
    flash_attention: bool = vocab.DEFAULT_FLASH_ATTENTION  # training: attention scores recomputed, never stored
    sharding: str = vocab.DEFAULT_SHARDING  # training: none | zero1 | zero2 | zero3
    sequence_length: int = 0  # training
    micro_batch: int = vocab.DEFAULT_MICRO_BATCH  # training: sequences per GPU per step
    keep_checkpoints: int = DEFAULT_KEEP_CHECKPOINTS  # training: checkpoints kept on the hot tier
    batch: int = vocab.DEFAULT_BATCH  # inference: concurrent sequences of one replica
    context_length: int = 0  # inference: tokens per sequence held in the KV cache

    @property
    def training(self) -> bool:
        return self.kind == "training"

    @property
    def zero_stage(self) -> int:
        return SHARDING_STAGES.index(self.sharding)

    def but(self, **changes: Any) -> ReferenceWorkload:
        """A copy with some fields changed (what-if variants of the plan)."""
        return replace(self, **changes)


def build_workloads(raw: Sequence[Mapping[str, Any]] | None) -> tuple[ReferenceWorkload, ...]:
    return tuple(_workload(w) for w in raw or [])


def _workload(raw: Mapping[str, Any]) -> ReferenceWorkload:
    training = raw["kind"] == "training"
    return ReferenceWorkload(
        name=raw["name"],
        kind=raw["kind"],
        pool=raw["pool"],
        gpus=raw["gpus"],
        parameters=float(raw["parameters"]),
        precision=raw["precision"],
        layers=raw["layers"],
        hidden=raw["hidden"],
        heads=raw["heads"],
        kv_heads=raw.get("kvHeads", raw["heads"]),
        optimizer=raw.get("optimizer", vocab.DEFAULT_OPTIMIZER) if training else "",
        gradient_checkpointing=bool(raw.get("gradientCheckpointing", vocab.DEFAULT_GRADIENT_CHECKPOINTING)),
        flash_attention=bool(raw.get("flashAttention", vocab.DEFAULT_FLASH_ATTENTION)),
        sharding=raw.get("sharding", vocab.DEFAULT_SHARDING),
        sequence_length=raw.get("sequenceLength", 0),
        micro_batch=raw.get("microBatch", vocab.DEFAULT_MICRO_BATCH),
        keep_checkpoints=raw.get("keepCheckpoints", DEFAULT_KEEP_CHECKPOINTS),
        batch=raw.get("batch", vocab.DEFAULT_BATCH),
        context_length=raw.get("contextLength", 0),
    )
