"""Reference workloads: memory per GPU, whether it fits the pool, checkpoint and load times.

Model states (training), per parameter, from Rajbhandari et al., "ZeRO: Memory Optimizations
Toward Training Trillion Parameter Models" (SC 2020), section 3.1 and figure 1: mixed-precision
Adam keeps 16-bit weights (2 bytes) and gradients (2) plus fp32 master weights, momentum and
variance (K = 12): 16 bytes, 120 GB for 7.5B parameters. Over Nd data-parallel GPUs ZeRO stage
1 divides the optimizer states by Nd, stage 2 also the gradients, stage 3 also the weights
(7.5B on Nd = 64: 31.4, 16.6 and 1.88 GB per GPU).

Assumptions, bytes per parameter as weights / gradients / Adam states (the tables and their
reasons are in gpuplat/catalog/precision.py):

    fp32   4 / 4 / 8    master copy = the weights; 32-bit activations (twice the bytes)
    amp    2 / 2 / 12   mixed precision: 16-bit (fp16 or bf16) compute copies, fp32 master
                        weights, momentum and variance: ZeRO's K = 12
    bf16   2 / 2 / 4    pure bf16: no fp32 master copy, bf16 moments (what `amp` is not)
    fp8    2 / 2 / 12   FP8 is the GEMMs' compute format only: training memory as amp; FP8
                        optimizer states (FP8-LM) are not assumed, frameworks keep them fp32
    int8   -            inference only
    SGD keeps one state (momentum): 4 bytes in fp32, 8 with amp (master + momentum), 2 in bf16.
    Inference: 4 / 2 / 2 / 1 / 1 bytes per weight and per KV-cache element.

Activations (training), from Korthikanti et al., "Reducing Activation Recomputation in Large
Transformer Models" (2022), section 4, with s the sequence length, b the micro-batch, h the
hidden size, a the heads, L the layers, and no tensor or sequence parallelism (t = 1):

    per layer                    s·b·h·(34 + 5·a·s/h) bytes   (16-bit activations)
    with full recomputation      2·s·b·h per layer (each layer's input), plus, during the
                                 backward pass, one layer's activations recomputed in full
    with flashAttention          s·b·h·34 per layer: the 5·a·s/h term is the attention's
                                 s x s scores, softmax and dropout mask, which FlashAttention
                                 (like the paper's selective recomputation) never stores
    fp32                         twice the bytes

The paper's table 2 counts only 2·s·b·h·L under full recomputation; the layer being
recomputed is added here because it is resident at the backward pass's peak. Not counted:
CUDA context, NCCL buffers, allocator fragmentation, ZeRO-3's gathered layer and the logits.
For them a workload fits when its total is at most 90 % of the unit's memory, the share vLLM
reserves for the model by default (`gpu_memory_utilization` 0.9); the rest is headroom.

Inference: weights at the precision's bytes plus the KV cache, 2·L·h·(kvHeads/heads) elements
per token (keys and values of every layer; grouped-query attention shares them across heads),
at the same bytes; both split over the replica's GPUs (tensor parallel). Activations of a
forward pass are transient and not counted.

Memory per unit of the pool (GiB as the catalog gives them): a whole GPU; on a MIG pool the
instance of the largest profile the pool's layout carries (a job gets one instance per unit);
on MPS, time-slicing and fractional pools one replica's share, GPU memory / replicas (the
device plugin's MPS limit, HAMi's default vGPU memory, and the fair share of time-slicing).

Storage: a checkpoint is the weights and optimizer states (gradients are not saved), written
to the hot tier at its aggregate throughput (the best case, as gpuplat/plan/storage.py says).
Model load is the weights read from the warm tier (S3 Express One Zone, which provisions no
throughput): each node of the job reads the weights its GPUs hold, at most the whole model,
through one network card, the instance's bandwidth divided by its network cards: the VPC CNI
gives pods interfaces on network card 0 only, unless a pod opts into its multi-NIC mode
(ENABLE_MULTI_NIC and the `k8s.amazonaws.com/nicConfig` annotation, aws/amazon-vpc-cni-k8s
pull request 3347). Unknown (None) on provider kubernetes or without a warm tier.
"""

from __future__ import annotations

import math

from gpuplat.catalog import instance_type
from gpuplat.catalog.precision import INFERENCE_BYTES, TRAINING
from gpuplat.model import GpuNodePool, Platform, SharingMode, gpu_of
from gpuplat.model.workloads import ReferenceWorkload
from gpuplat.plan.sharing import mig_devices
from gpuplat.plan.storage import MB_PER_GIB, transfer_seconds
from gpuplat.plan.types import StoragePlan
from gpuplat.plan.workload_types import Memory, Unit, Variant, WorkloadPlan

GIB = 2**30


# ---- the papers' formulas, in bytes ----------------------------------------------------------


def model_state_bytes(
    parameters: float, precision: str, optimizer: str, stage: int, dp: int
) -> tuple[float, float, float]:
    """(weights, gradients, optimizer states) per GPU under ZeRO `stage` over `dp` GPUs."""
    b = TRAINING[precision]
    weights = parameters * b.weights / (dp if stage >= 3 else 1)
    gradients = parameters * b.gradients / (dp if stage >= 2 else 1)
    states = parameters * b.optimizer[optimizer] / (dp if stage >= 1 else 1)
    return weights, gradients, states


def layer_activation_bytes(s: int, b: int, h: int, a: int, t: int = 1, sequence_parallel: bool = False) -> float:
    """Korthikanti et al. 2022: one transformer layer's activations, 16-bit, tensor-parallel `t`."""
    if sequence_parallel:
        return s * b * h * (34 + 5 * a * s / h) / t
    return s * b * h * (10 + 24 / t + 5 * a * s / (h * t))


def activation_bytes(w: ReferenceWorkload) -> float:
    s, b, h = w.sequence_length, w.micro_batch, w.hidden
    layer = s * b * h * 34 if w.flash_attention else layer_activation_bytes(s, b, h, w.heads)
    stored = 2 * s * b * h * w.layers + layer if w.gradient_checkpointing else layer * w.layers
    return stored * TRAINING[w.precision].activation_factor


def kv_cache_bytes_per_token(layers: int, hidden: int, heads: int, kv_heads: int, nbytes: int) -> float:
    return 2 * layers * hidden * kv_heads / heads * nbytes


# ---- memory per GPU --------------------------------------------------------------------------


def memory(w: ReferenceWorkload) -> Memory:
    if w.training:
        weights, gradients, states = model_state_bytes(w.parameters, w.precision, w.optimizer, w.zero_stage, w.gpus)
        return Memory(weights / GIB, gradients / GIB, states / GIB, activation_bytes(w) / GIB, 0.0)
    nbytes = INFERENCE_BYTES[w.precision]
    per_token = kv_cache_bytes_per_token(w.layers, w.hidden, w.heads, w.kv_heads, nbytes)
    kv = per_token * w.batch * w.context_length
    return Memory(w.parameters * nbytes / w.gpus / GIB, 0.0, 0.0, 0.0, kv / w.gpus / GIB)


def max_micro_batch(w: ReferenceWorkload, available_gib: float) -> int | None:
    """The largest micro-batch whose memory fits (activations grow linearly with it)."""
    if not w.training:
        return None
    one = memory(w.but(micro_batch=1))
    if one.activations <= 0:
        return None
    return max(0, math.floor((available_gib - one.states) / one.activations + 1e-9))


# ---- the unit a workload's GPU count counts --------------------------------------------------


def pool_unit(pool: GpuNodePool) -> Unit:
    """What one unit of `pool` is and holds; on MIG pools the largest instance of the layout."""
    gpu, per_node = gpu_of(pool), pool.gpus_per_node
    mode = pool.sharing.mode
    if mode is SharingMode.MIG:
        devices = mig_devices(pool)
        largest = max(devices, key=lambda n: (p.memory_gib if (p := gpu.mig_profile(n)) else 0, n), default=None)
        found = gpu.mig_profile(largest) if largest else None
        if found is not None:
            count = devices[found.name]
            return Unit("mig", f"{found.name} MIG instance", found.memory_gib, count * per_node, found.name)
        if pool.sharing.profile != "all-disabled":
            return Unit("mig", "no MIG instance", 0.0, 0)  # all-enabled: MIG on, no instances
    elif mode is not SharingMode.EXCLUSIVE:
        replicas = pool.sharing.replicas or 1
        return Unit("share", f"1/{replicas} share of {gpu.name}", gpu.memory_gib / replicas, replicas * per_node)
    return Unit("gpu", f"{gpu.name} GPU", gpu.memory_gib, per_node)


def larger_profiles(pool: GpuNodePool, unit: Unit) -> list[Unit]:
    """MIG pools: a unit per profile of the GPU with more memory than `unit`, smallest first."""
    if pool.sharing.mode is not SharingMode.MIG:
        return []
    gpu = gpu_of(pool)
    bigger = sorted(
        (p for p in gpu.mig_profiles if p.memory_gib > unit.memory_gib and not p.media_extensions),
        key=lambda p: (p.memory_gib, p.compute_slices),
    )
    seen: set[float] = set()
    out: list[Unit] = []
    for p in bigger:
        if p.memory_gib not in seen:  # 2g.20gb and 1g.20gb hold the same: keep the smaller
            seen.add(p.memory_gib)
            out.append(Unit("mig", f"{p.name} MIG instance", p.memory_gib, p.max_count * pool.gpus_per_node, p.name))
    return out


def capacity(pool: GpuNodePool, unit: Unit) -> int:
    """Units of this kind in the pool at its max size."""
    return unit.per_node * pool.nodes.max


# ---- the plan of one workload ----------------------------------------------------------------


def fits(mem: Memory, unit: Unit) -> bool:
    return mem.total <= unit.usable_gib + 1e-9


def variant(w: ReferenceWorkload, unit: Unit) -> Variant:
    mem = memory(w)
    return Variant(mem, fits(mem, unit), max_micro_batch(w, unit.usable_gib))


def checkpoint_gib(w: ReferenceWorkload) -> float | None:
    """Weights and optimizer states of the whole model (every shard), as a checkpoint holds them."""
    if not w.training:
        return None
    b = TRAINING[w.precision]
    return w.parameters * (b.weights + b.optimizer[w.optimizer]) / GIB


def model_gib(w: ReferenceWorkload) -> float:
    nbytes = TRAINING[w.precision].weights if w.training else INFERENCE_BYTES[w.precision]
    return w.parameters * nbytes / GIB


def model_load_seconds(model: Platform, pool: GpuNodePool, w: ReferenceWorkload, unit: Unit) -> float | None:
    itype = instance_type(pool.instance_type) if pool.instance_type else None
    if model.storage.warm is None or itype is None or unit.per_node == 0:
        return None
    per_node = min(model_gib(w), memory(w).weights * min(w.gpus, unit.per_node))
    card_mbps = itype.card_gbps * 1000 / 8  # MB/s through one card
    return per_node * MB_PER_GIB / card_mbps


def plan_workload(model: Platform, w: ReferenceWorkload, storage: StoragePlan) -> WorkloadPlan:
    pool = model.pools_by_name[w.pool]
    unit = pool_unit(pool)
    now = variant(w, unit)
    ckpt = checkpoint_gib(w)
    hot_mbps = storage.hot.throughput_mbps if storage.hot is not None else None
    return WorkloadPlan(
        name=w.name,
        kind=w.kind,
        pool=w.pool,
        gpus=w.gpus,
        precision=w.precision,
        unit=unit,
        memory=now.memory,
        fits=now.fits,
        max_micro_batch=now.max_micro_batch,
        checkpoint_gib=ckpt,
        keep_checkpoints=w.keep_checkpoints if w.training else 0,
        checkpoint_write_seconds=transfer_seconds(ckpt, hot_mbps),
        model_gib=model_gib(w),
        model_load_seconds=model_load_seconds(model, pool, w, unit),
        without_amp=variant(w.but(precision="fp32"), unit),
        without_checkpointing=variant(w.but(gradient_checkpointing=False), unit) if w.training else None,
        with_amp=variant(w.but(precision="amp"), unit) if w.training and w.precision == "fp32" else None,
        with_checkpointing=variant(w.but(gradient_checkpointing=True), unit)
        if w.training and not w.gradient_checkpointing
        else None,
    )


def storage_sizes(model: Platform) -> tuple[float | None, float | None]:
    """(checkpoint GiB, model GiB) for the storage plan: the largest of the workloads, replacing
    storage.workload's hand-set sizes when workloads are given."""
    if not model.workloads:
        return model.storage.workload.checkpoint_gib, model.storage.workload.model_gib
    checkpoints = [c for w in model.workloads if (c := checkpoint_gib(w)) is not None]
    return (max(checkpoints) if checkpoints else None), max(model_gib(w) for w in model.workloads)


def plan_workloads(model: Platform, storage: StoragePlan) -> tuple[WorkloadPlan, ...]:
    return tuple(plan_workload(model, w, storage) for w in model.workloads)
