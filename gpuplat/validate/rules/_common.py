"""Typed, forgiving accessors the rules share.

Rules also run when the schema pass failed elsewhere, so they read the merged plain data
defensively: a value of the wrong type is treated as absent (the schema pass reports it),
never as a reason for a second, confusing diagnostic.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard, cast

from gpuplat.catalog import GpuModel, gpu_model, instance_type

Data = Mapping[str, Any]

MARKETS = ("reserved", "spot", "on-demand")
DEFAULT_MARKETS = ("on-demand",)
# Modes that share one GPU between processes without memory or fault isolation.
SHARED_MODES = frozenset({"mps", "time-slicing"})
REPLICA_MODES = frozenset({"mps", "time-slicing", "fractional"})


def as_map(value: Any) -> Data | None:
    return cast("Data", value) if isinstance(value, dict) else None


def as_list(value: Any) -> list[Any]:
    return cast("list[Any]", value) if isinstance(value, list) else []


def is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> TypeGuard[int | float]:
    """A finite int or float: NaN and infinity are the schema pass's to report."""
    if isinstance(value, float):
        return math.isfinite(value)
    return is_int(value)


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def repeats(items: Iterable[tuple[int, Mapping[str, Any]]], key: str) -> Iterator[tuple[int, str, int]]:
    """(index, value, index of its first use) for every item whose string `key` an earlier item has."""
    first: dict[str, int] = {}
    for index, item in items:
        value = as_str(item.get(key))
        if value is None:
            continue
        if value in first:
            yield index, value, first[value]
        else:
            first[value] = index


def section(data: Data, *keys: str) -> Data | None:
    node: Data | None = data
    for key in keys:
        if node is None:
            return None
        node = as_map(node.get(key))
    return node


def provider(data: Data) -> str | None:
    target = section(data, "target")
    value = target.get("provider") if target is not None else None
    return value if value in ("aws", "kubernetes") else None


def pools(data: Data) -> Iterator[tuple[int, Data]]:
    for index, item in enumerate(as_list(data.get("gpuNodePools"))):
        pool = as_map(item)
        if pool is not None:
            yield index, pool


def tenants(data: Data) -> Iterator[tuple[int, Data]]:
    for index, item in enumerate(as_list(data.get("tenants"))):
        tenant = as_map(item)
        if tenant is not None:
            yield index, tenant


def pool_name(pool: Data, index: int) -> str:
    name = pool.get("name")
    return name if isinstance(name, str) else f"gpuNodePools[{index}]"


def sharing_mode(pool: Data) -> str | None:
    """The pool's sharing mode, `exclusive` when `sharing` is absent, None when malformed."""
    sharing = pool.get("sharing")
    if sharing is None:
        return "exclusive"
    fields = as_map(sharing)
    mode = fields.get("mode") if fields is not None else None
    return mode if isinstance(mode, str) else None


def markets(pool: Data) -> tuple[str, ...]:
    raw = pool.get("markets")
    if raw is None:
        return DEFAULT_MARKETS
    return tuple(m for m in as_list(raw) if m in MARKETS)


@dataclass(frozen=True)
class PoolGpu:
    model: GpuModel
    count: int
    source: str  # what the GPU was resolved from, for messages: "p5.48xlarge" or "gpu.model"


def pool_gpu(data: Data, pool: Data) -> PoolGpu | None:
    """The catalog GPU and GPUs per node of a pool, or None when they cannot be resolved."""
    kind = provider(data)
    if kind == "aws":
        name = as_str(pool.get("instanceType"))
        itype = instance_type(name) if name is not None else None
        if itype is None:
            return None
        model = gpu_model(itype.gpu_model)
        return PoolGpu(model, itype.gpu_count, itype.name) if model is not None else None
    if kind == "kubernetes":
        gpu = as_map(pool.get("gpu"))
        if gpu is None:
            return None
        name, count = as_str(gpu.get("model")), gpu.get("count")
        model = gpu_model(name) if name is not None else None
        if model is None or not is_int(count) or count < 1:
            return None
        return PoolGpu(model, count, "gpu.model")
    return None


def pool_max_gpus(data: Data, pool: Data) -> int | None:
    gpu = pool_gpu(data, pool)
    nodes = as_map(pool.get("nodes"))
    top = nodes.get("max") if nodes is not None else None
    if gpu is None or not is_int(top) or top < 0:
        return None
    return gpu.count * top


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return close[0] if close else None


def listing(names: Iterable[Any]) -> str:
    return ", ".join(str(n) for n in names)


def show_number(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
