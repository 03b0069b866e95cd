"""What `check` says about reference workloads: the planner's findings on them.

- GP236 (workload-does-not-fit): a workload's memory per unit exceeds the usable 90 % of one
  unit of its pool. The message names the smallest changes that would make it fit, found by
  trying every combination of the levers the workload has: gradient checkpointing,
  FlashAttention, a higher ZeRO stage, AMP instead of fp32 or pure bf16 states (training),
  fewer bytes per weight (inference: bf16, fp8 where the GPU computes in FP8, int8), more GPUs
  (pools of whole GPUs only: shares of one GPU add no memory, and MIG instances have no
  peer-to-peer path between them, so data or tensor parallelism across them is not offered),
  and a larger MIG profile. A combination is named only when no subset of its changes already
  fits; changes count one each, a precision change two (it changes the numerics too); at most
  three are named. The best option on another pool of the platform (lightest, then fewest
  GPUs) is added when it needs fewer changes, the move aside, than any on the workload's own
  pool: a slice too small for a model is often answered by the platform's pool of whole GPUs.
- GP237 (hot-tier-checkpoints): the hot tier cannot hold the last `keepCheckpoints` (default 3)
  checkpoints of every training workload at once. They all run on one platform and each keeps
  its own, so the sizes add up.
- GP238 (workload-gpus-exceed-pool): a workload asks for more units than its pool has at max size.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from gpuplat.catalog import fsx
from gpuplat.catalog.precision import FP8_GPUS, INFERENCE_BYTES
from gpuplat.model import GpuNodePool, Platform, Provider
from gpuplat.model.workloads import SHARDING_STAGES, ReferenceWorkload
from gpuplat.plan.codes import HOT_TIER_CHECKPOINTS, WORKLOAD_DOES_NOT_FIT, WORKLOAD_GPUS_EXCEED_POOL
from gpuplat.plan.types import PlanFinding, StoragePlan
from gpuplat.plan.workload_types import Unit, WorkloadPlan
from gpuplat.plan.workloads import capacity, fits, larger_profiles, memory, pool_unit

MAX_REMEDIES = 3


@dataclass(frozen=True)
class Remedy:
    changes: tuple[tuple[str, str], ...]  # (field, new value), e.g. ("sharding", "zero3")
    total_gib: float
    unit: Unit

    def text(self) -> str:
        changes = ", ".join(f"{k}: {v}" for k, v in self.changes)
        return f"{changes} ({self.total_gib:.1f} of {self.unit.usable_gib:.1f} usable GiB)"


def _precisions(w: ReferenceWorkload, pool: GpuNodePool) -> list[str]:
    if w.training:  # fp32 -> AMP halves weights and gradients; pure bf16 also halves the states
        levers = ("amp", "bf16") if w.precision == "fp32" else ("bf16",)
        return [w.precision, *(p for p in levers if p != w.precision)]
    cheaper = [
        p
        for p in ("bf16", "fp8", "int8")
        if INFERENCE_BYTES[p] < INFERENCE_BYTES[w.precision] and (p != "fp8" or pool.gpu_model in FP8_GPUS)
    ]
    return [w.precision, *cheaper]


def _candidates(w: ReferenceWorkload, pool: GpuNodePool, unit: Unit) -> Iterator[tuple[ReferenceWorkload, Unit]]:
    checkpointing = [w.gradient_checkpointing] + ([True] if w.training and not w.gradient_checkpointing else [])
    flash = [w.flash_attention] + ([True] if w.training and not w.flash_attention else [])
    stages = SHARDING_STAGES[w.zero_stage :] if w.training else (w.sharding,)
    units = [unit, *larger_profiles(pool, unit)]
    for ckpt, fa, stage, precision, u in itertools.product(checkpointing, flash, stages, _precisions(w, pool), units):
        yield w.but(gradient_checkpointing=ckpt, flash_attention=fa, sharding=stage, precision=precision), u


def _fewest_gpus(w: ReferenceWorkload, unit: Unit, most: int) -> int | None:
    """The smallest GPU count above w.gpus (at most `most`) at which `w` fits, if any."""
    if w.training:
        if not fits(memory(w.but(gpus=most)), unit):
            return None
        low, high = w.gpus, most  # fits(high), not fits(low): memory never grows with GPUs
        while high - low > 1:
            mid = (low + high) // 2
            low, high = (low, mid) if fits(memory(w.but(gpus=mid)), unit) else (mid, high)
        return high
    n = w.gpus * 2  # tensor parallel: powers of two that divide the heads
    while n <= most:
        if w.heads % n == 0 and w.kv_heads % n == 0 and fits(memory(w.but(gpus=n)), unit):
            return n
        n *= 2
    return None


def _changes(
    w: ReferenceWorkload, c: ReferenceWorkload, pool: GpuNodePool, u: Unit, unit: Unit
) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if c.gradient_checkpointing != w.gradient_checkpointing:
        out.append(("gradientCheckpointing", "true"))
    if c.flash_attention != w.flash_attention:
        out.append(("flashAttention", "true"))
    if c.sharding != w.sharding:
        out.append(("sharding", c.sharding))
    if c.precision != w.precision:
        out.append(("precision", c.precision))
    if u.profile != unit.profile:
        out.append((f"pool {pool.name} sharing.profile", f"all-{u.profile}"))
    return out


def remedies(w: ReferenceWorkload, pool: GpuNodePool, unit: Unit) -> list[Remedy]:
    found: list[Remedy] = []
    most = capacity(pool, unit)
    for c, u in _candidates(w, pool, unit):
        changes = _changes(w, c, pool, u, unit)
        mem = memory(c)
        if not fits(mem, u):
            n = _fewest_gpus(c, u, most) if u.kind == "gpu" else None
            if n is None:
                continue
            changes.append(("gpus", str(n)))
            mem = memory(c.but(gpus=n))
        if changes:
            found.append(Remedy(tuple(changes), mem.total, u))
    return _minimal(found)


def elsewhere(model: Platform, w: ReferenceWorkload) -> Remedy | None:
    """The best remedy on another pool of the platform, with `pool: <name>` as its first change."""
    best: Remedy | None = None
    for other in model.pools:
        unit = pool_unit(other)
        if other.name == w.pool or w.gpus > capacity(other, unit):
            continue
        if w.precision == "fp8" and other.gpu_model not in FP8_GPUS:
            continue  # GP297: no FP8 tensor cores there
        moved = w.but(pool=other.name)
        mem = memory(moved)
        options = [Remedy((), mem.total, unit)] if fits(mem, unit) else remedies(moved, other, unit)
        for r in options:
            candidate = Remedy((("pool", other.name), *r.changes), r.total_gib, r.unit)
            if best is None or _rank(candidate) < _rank(best):
                best = candidate
    return best


def _weight(r: Remedy) -> int:
    """Changes count one each; a precision change two, since it changes the numerics too."""
    return len(r.changes) + sum(k == "precision" for k, _ in r.changes)


def _rank(r: Remedy) -> tuple[int, bool, int]:
    gpus = next((int(v) for k, v in r.changes if k == "gpus"), 0)
    return _weight(r), any(k == "precision" for k, _ in r.changes), gpus


def _minimal(found: list[Remedy]) -> list[Remedy]:
    """Lightest changes first; drop any remedy whose changed fields include a kept one's."""
    kept: list[Remedy] = []
    for r in sorted(found, key=_weight):  # stable: weakest stage / profile first
        fields = {k for k, _ in r.changes}
        if not any({k for k, _ in k_r.changes} <= fields for k_r in kept):
            kept.append(r)
    return kept[:MAX_REMEDIES]


def _tried(w: ReferenceWorkload, pool: GpuNodePool, unit: Unit) -> str:
    levers = ["lower precisions"]
    if w.training:
        levers = ["gradient checkpointing", "FlashAttention", "ZeRO stages", "AMP and bf16"]
    if unit.kind == "gpu":
        levers.append(f"up to {capacity(pool, unit)} GPUs")
    if unit.kind == "mig":
        levers.append("every MIG profile")
    return ", ".join(levers)


def _does_not_fit(model: Platform, index: int, w: ReferenceWorkload, plan: WorkloadPlan) -> PlanFinding:
    pool = model.pools_by_name[w.pool]
    m, unit = plan.memory, plan.unit
    parts = ", ".join(
        f"{name} {value:.1f}"
        for name, value in (
            ("weights", m.weights),
            ("gradients", m.gradients),
            ("optimizer", m.optimizer),
            ("activations", m.activations),
            ("KV cache", m.kv_cache),
        )
        if value > 0
    )
    head = (
        f"workload {w.name} needs {m.total:.1f} GiB per {unit.label} ({parts}) but one holds "
        f"{unit.memory_gib:g} GiB, {unit.usable_gib:.1f} usable (90 %), on pool {pool.name}"
    )
    options = remedies(w, pool, unit)
    if options:
        tail = "; it would fit with " + "; or with ".join(r.text() for r in options)
    else:
        tail = f"; nothing on this pool makes it fit (tried {_tried(w, pool, unit)})"
    other = elsewhere(model, w)
    if other is not None and options and _weight(other) - 1 >= min(_weight(r) for r in options):
        other = None  # moving pools is no lighter than what the pool itself offers
    if other is not None:
        tail += ("; or with " if options else "; it would fit with ") + other.text()
    elif not options:
        tail += ", nor on another pool: add a pool with larger GPUs"
    # At the workload's pool: where it does not fit, and what an overlay moving it changed.
    return WORKLOAD_DOES_NOT_FIT.finding(("workloads", index, "pool"), head + tail)


def _hot_tier(model: Platform, plans: tuple[WorkloadPlan, ...], storage: StoragePlan) -> list[PlanFinding]:
    kept = [(p, p.keep_checkpoints * p.checkpoint_gib) for p in plans if p.checkpoint_gib is not None]
    if storage.hot is None or not kept:
        return []
    need = sum(gib for _, gib in kept)
    if need <= storage.hot.capacity_gib:
        return []
    each = ", ".join(f"{p.name} {p.keep_checkpoints} x {p.checkpoint_gib:.1f}" for p, _ in kept)
    if model.target.provider is Provider.AWS:
        size = fsx.capacity_gib(need)
        fix = f"raise storage.hot.capacityTiB to {size / fsx.GIB_PER_TIB:g} (an FSx for Lustre size)"
    else:
        fix = f"raise storage.hot.capacityTiB to at least {need / fsx.GIB_PER_TIB:.2f}"
    return [
        HOT_TIER_CHECKPOINTS.finding(
            ("storage", "hot", "capacityTiB"),
            f"keeping the last checkpoints of every training workload ({each} GiB) needs {need:.1f} GiB but the "
            f"hot tier holds {storage.hot.capacity_gib} GiB; {fix} or lower the workloads' keepCheckpoints",
        )
    ]


def capacity_findings(model: Platform) -> list[PlanFinding]:
    """GP238; checked before the workloads are planned (a count beyond the pool means nothing)."""
    findings: list[PlanFinding] = []
    for index, w in enumerate(model.workloads):
        pool = model.pools_by_name[w.pool]
        unit = pool_unit(pool)
        most = capacity(pool, unit)
        if w.gpus > most:
            findings.append(
                WORKLOAD_GPUS_EXCEED_POOL.finding(
                    ("workloads", index, "gpus"),
                    f"workload {w.name} asks for {w.gpus} units but pool {pool.name} has {most} "
                    f"({unit.label}, {unit.per_node} per node x {pool.nodes.max} nodes at max size); "
                    f"raise the pool's nodes.max or lower gpus",
                )
            )
    return findings


def workload_findings(model: Platform, plans: tuple[WorkloadPlan, ...], storage: StoragePlan) -> list[PlanFinding]:
    findings = [
        _does_not_fit(model, i, w, p) for i, (w, p) in enumerate(zip(model.workloads, plans, strict=True)) if not p.fits
    ]
    return [*findings, *_hot_tier(model, plans, storage)]
