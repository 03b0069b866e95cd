"""The reference workloads in the plan: the JSON `workloads` list and the text section.

JSON, one object per workload: `name`, `kind`, `pool`, `gpus`, `precision`, `unit`,
`perGpuGiB` {weights, gradients, optimizer, activations, kvCache, total}, `gpuMemoryGiB` (what
one unit holds), `usableGiB` (90 % of it, what `fits` compares the total with), `fits`,
`maxMicroBatch` (training), `checkpointGiB`, `keepCheckpoints`, `checkpointWriteSeconds`,
`modelGiB`, `modelLoadSeconds`, and the what-ifs `withoutAmp` (the same workload in fp32) and
`withoutCheckpointing` (training; null for inference), and what the workload would gain,
`withAmp` (fp32 training) and `withCheckpointing` (training without it), null otherwise; each
{perGpuGiB, fits, maxMicroBatch}. GiB to 2 decimals, seconds to 2; null when unknown.

Text: a table of GiB per unit, then per workload what AMP and checkpointing buy (memory per
GPU before -> after, the largest micro-batch that fits) and the checkpoint and load times.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuplat.plan.workload_types import Memory, Variant, WorkloadPlan

Json = dict[str, Any]


def _gib(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _memory_json(m: Memory) -> Json:
    return {
        "weights": _gib(m.weights),
        "gradients": _gib(m.gradients),
        "optimizer": _gib(m.optimizer),
        "activations": _gib(m.activations),
        "kvCache": _gib(m.kv_cache),
        "total": _gib(m.total),
    }


def _variant_json(v: Variant | None) -> Json | None:
    if v is None:
        return None
    return {"perGpuGiB": _memory_json(v.memory), "fits": v.fits, "maxMicroBatch": v.max_micro_batch}


def workload_json(w: WorkloadPlan) -> Json:
    return {
        "name": w.name,
        "kind": w.kind,
        "pool": w.pool,
        "gpus": w.gpus,
        "precision": w.precision,
        "unit": w.unit.label,
        "perGpuGiB": _memory_json(w.memory),
        "gpuMemoryGiB": _gib(w.unit.memory_gib),
        "usableGiB": _gib(w.unit.usable_gib),
        "fits": w.fits,
        "maxMicroBatch": w.max_micro_batch,
        "checkpointGiB": _gib(w.checkpoint_gib),
        "keepCheckpoints": w.keep_checkpoints,
        "checkpointWriteSeconds": _gib(w.checkpoint_write_seconds),
        "modelGiB": _gib(w.model_gib),
        "modelLoadSeconds": _gib(w.model_load_seconds),
        "withoutAmp": _variant_json(w.without_amp),
        "withoutCheckpointing": _variant_json(w.without_checkpointing),
        "withAmp": _variant_json(w.with_amp),
        "withCheckpointing": _variant_json(w.with_checkpointing),
    }


def workloads_json(plans: tuple[WorkloadPlan, ...]) -> list[Json]:
    return [workload_json(w) for w in plans]


# ---- text -----------------------------------------------------------------------------------


def _n(value: float) -> str:
    return f"{value:.1f}" if value else "-"


def _change(now: Variant | WorkloadPlan, other: Variant, this: str, without: str) -> str:
    """`this` 15.2 GiB per GPU, `without` 26.2 GiB: saves 11.1 GiB (42 %); max micro-batch 6, `without` 3."""
    before, after = other.memory.total, now.memory.total
    fits = " (does not fit)" if not other.fits else ""
    saved = "no saving"
    if before > after:
        saved = f"saves {before - after:.1f} GiB ({100 * (before - after) / before:.0f} %)"
    batch = (
        f"; max micro-batch {now.max_micro_batch}, {without} {other.max_micro_batch}"
        if now.max_micro_batch is not None and other.max_micro_batch != now.max_micro_batch
        else ""
    )
    return f"{this} {after:.1f} GiB per GPU, {without} {before:.1f} GiB{fits}: {saved}{batch}"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def _details(w: WorkloadPlan) -> list[str]:
    lines: list[str] = []
    now = Variant(w.memory, w.fits, w.max_micro_batch)
    if w.precision != "fp32":
        lines.append(_change(w, w.without_amp, w.precision, "fp32"))
    if w.with_amp is not None:
        lines.append(_change(w.with_amp, now, "amp would need", "fp32 now"))
    if w.without_checkpointing is not None and w.without_checkpointing.memory != w.memory:
        lines.append(_change(w, w.without_checkpointing, "checkpointing", "without"))
    if w.with_checkpointing is not None:
        lines.append(_change(w.with_checkpointing, now, "checkpointing would need", "now"))
    if w.checkpoint_gib is not None:
        lines.append(
            f"checkpoint {w.checkpoint_gib:.1f} GiB, written in {_seconds(w.checkpoint_write_seconds)} "
            "to the hot tier, "
            f"last {w.keep_checkpoints} kept: {w.keep_checkpoints * w.checkpoint_gib:.1f} GiB"
        )
    lines.append(f"model {w.model_gib:.1f} GiB, loaded in {_seconds(w.model_load_seconds)} from the warm tier")
    return lines


def workload_details(plans: tuple[WorkloadPlan, ...]) -> list[tuple[str, str]]:
    """(workload, line): what AMP and checkpointing buy, the checkpoint and load times."""
    return [(w.name, line) for w in plans for line in _details(w)]


def workloads_table(plans: tuple[WorkloadPlan, ...], table: Callable[..., str]) -> str | None:
    """`table` is the plan report's aligned-table helper (passed in to keep one import direction)."""
    if not plans:
        return None
    rows = [
        [
            w.name,
            w.kind,
            w.pool,
            str(w.gpus),
            w.precision,
            _n(w.memory.weights),
            _n(w.memory.gradients),
            _n(w.memory.optimizer),
            _n(w.memory.activations),
            _n(w.memory.kv_cache),
            f"{w.memory.total:.1f}",
            f"{w.unit.usable_gib:.1f} of {w.unit.memory_gib:g} ({w.unit.label})",
            "yes" if w.fits else "NO",
        ]
        for w in plans
    ]
    header = ["workload", "kind", "pool", "GPUs", "precision", "weights", "grads", "optim", "activ", "KV", "total"]
    return table([*header, "usable GiB", "fits"], rows, frozenset({3, *range(5, 11)}))
