"""Rules on `workloads`: the reference models the plan sizes (whether they fit is the planner's:
GP236-GP238, gpuplat/plan/workload_fit.py)."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplat.catalog.precision import FP8_GPUS
from gpuplat.diagnostics import Level
from gpuplat.validate.registry import Finding, rule
from gpuplat.validate.rules._common import Data, as_list, as_map, as_str, is_int, pool_gpu, pools, repeats, section

# Fields that only one kind of workload reads; the other kind's planner never looks at them.
TRAINING_ONLY = (
    "optimizer",
    "gradientCheckpointing",
    "flashAttention",
    "sharding",
    "sequenceLength",
    "microBatch",
    "keepCheckpoints",
)
INFERENCE_ONLY = ("kvHeads", "batch", "contextLength")
REQUIRED = {"training": "sequenceLength", "inference": "contextLength"}


def _workloads(data: Data) -> Iterator[tuple[int, Data]]:
    for index, item in enumerate(as_list(data.get("workloads"))):
        workload = as_map(item)
        if workload is not None:
            yield index, workload


def _name(workload: Data, index: int) -> str:
    return as_str(workload.get("name")) or f"workloads[{index}]"


def _pools_by_name(data: Data) -> dict[str, Data]:
    return {name: pool for _, pool in pools(data) if (name := as_str(pool.get("name"))) is not None}


@rule(
    "GP294",
    "workload-pool-exists",
    Level.ERROR,
    "A workload is sized against its pool's GPUs; a pool that does not exist has none.",
    fix="Name an existing pool in the workload's `pool`.",
)
def workload_pool_exists(data: Data) -> Iterator[Finding]:
    by_name = _pools_by_name(data)
    for i, workload in _workloads(data):
        name = as_str(workload.get("pool"))
        if name is not None and by_name and name not in by_name:
            yield Finding(
                ("workloads", i, "pool"),
                f"workload {_name(workload, i)} runs on pool {name}, which does not exist "
                f"(pools: {', '.join(by_name)})",
            )


@rule(
    "GP295",
    "workload-kind-fields",
    Level.ERROR,
    "Training memory needs the sequence length (activations), inference the context length (KV cache).",
    fix="Give a training workload `sequenceLength` and an inference one `contextLength`, each only its own.",
)
def workload_kind_fields(data: Data) -> Iterator[Finding]:
    for i, workload in _workloads(data):
        kind = workload.get("kind")
        if kind not in REQUIRED:
            continue
        required = REQUIRED[kind]
        if required not in workload:
            yield Finding(
                ("workloads", i, "kind"),
                f"{kind} workload {_name(workload, i)} needs {required}: the plan sizes its "
                + ("activations" if kind == "training" else "KV cache")
                + " from it",
            )
        other = INFERENCE_ONLY if kind == "training" else TRAINING_ONLY
        for key in other:
            if key in workload:
                yield Finding(
                    ("workloads", i, key),
                    f"{key} is for {'inference' if kind == 'training' else 'training'} workloads and means nothing "
                    f"for {kind} workload {_name(workload, i)}; remove it",
                    at_key=True,
                )


@rule(
    "GP296",
    "workload-attention-shape",
    Level.ERROR,
    "Multi-head attention splits the hidden size over the heads, and grouped-query attention the heads over kvHeads.",
    fix="Make `hidden` a multiple of `heads`, and `heads` a multiple of `kvHeads`.",
)
def workload_attention_shape(data: Data) -> Iterator[Finding]:
    for i, workload in _workloads(data):
        hidden, heads, kv = workload.get("hidden"), workload.get("heads"), workload.get("kvHeads")
        if is_int(hidden) and is_int(heads) and heads > 0 and hidden % heads:
            yield Finding(
                ("workloads", i, "heads"),
                f"workload {_name(workload, i)}: hidden {hidden} is not a multiple of heads {heads}",
            )
        if is_int(heads) and is_int(kv) and kv > 0 and heads % kv:
            yield Finding(
                ("workloads", i, "kvHeads"),
                f"workload {_name(workload, i)}: kvHeads {kv} does not divide heads {heads}",
            )


@rule(
    "GP297",
    "workload-precision-supported",
    Level.ERROR,
    "No training framework trains in int8; FP8 needs FP8 tensor cores (Hopper, Ada, Blackwell; not Ampere).",
    source="https://docs.nvidia.com/deeplearning/transformer-engine/user-guide/examples/fp8_primer.html",
    fix=(
        "Choose a `precision` the workload can run in: no int8 for training; fp8 only on GPUs with FP8 tensor cores"
        " (Hopper, Ada, Blackwell)."
    ),
)
def workload_precision_supported(data: Data) -> Iterator[Finding]:
    by_name = _pools_by_name(data)
    for i, workload in _workloads(data):
        precision, kind = workload.get("precision"), workload.get("kind")
        if precision == "int8" and kind == "training":
            yield Finding(
                ("workloads", i, "precision"),
                f"training workload {_name(workload, i)} cannot train in int8; use amp, bf16 or fp8",
            )
        name = as_str(workload.get("pool")) or ""
        pool = by_name.get(name)
        gpu = pool_gpu(data, pool) if pool is not None and precision == "fp8" else None
        if gpu is not None and gpu.model.name not in FP8_GPUS:
            yield Finding(
                ("workloads", i, "precision"),
                f"workload {_name(workload, i)} uses fp8 but pool {name} has {gpu.model.name} GPUs, "
                f"which have no FP8 tensor cores; use amp or bf16 (or int8 for inference)",
            )


@rule(
    "GP298",
    "workload-names-unique",
    Level.ERROR,
    "The plan, its JSON and the pull-request table name workloads; two with one name cannot be told apart.",
    fix="Rename one of the workloads.",
)
def workload_names_unique(data: Data) -> Iterator[Finding]:
    for i, name, first in repeats(_workloads(data), "name"):
        yield Finding(
            ("workloads", i, "name"),
            f"workload name {name} is already used by workloads[{first}]; workload names must be unique",
        )


@rule(
    "GP305",
    "workload-sizes-superseded",
    Level.WARNING,
    "With workloads, the storage plan takes checkpoint and model sizes from them, not from storage.workload.",
    fix="Remove `storage.workload`; the workloads size checkpoints and models.",
)
def workload_sizes_superseded(data: Data) -> Iterator[Finding]:
    if as_list(data.get("workloads")) and section(data, "storage", "workload"):
        yield Finding(
            ("storage", "workload"),
            "storage.workload is ignored because workloads are given: the plan computes checkpoint and model "
            "sizes from them; remove storage.workload",
            at_key=True,
        )
