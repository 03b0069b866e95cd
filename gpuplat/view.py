"""Forgiving typed reads of the merged spec data: what the semantic rules and the model share.

The rules run on every spec, also one the schema pass rejected elsewhere (one run reports
everything), so they cannot wait for the model. They read the spec through these accessors,
and the model is built through the same ones, so a fact such as "the GPUs of a pool", "its
sharing mode" or "its markets" is read from the YAML in one place, with one default.

A value of the wrong type is treated as absent (the schema pass reports it), never as a reason
for a second, confusing diagnostic; on data that passed validation every accessor returns what
the spec says, defaults filled.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard, cast

from gpuplat.catalog import GpuModel, gpu_model, instance_type
from gpuplat.vocabulary import (
    DEFAULT_ISOLATION,
    DEFAULT_MARKETS,
    DEFAULT_PRIORITY,
    DEFAULT_SHARING_MODE,
    Market,
    Provider,
    isolation_permits,
)

Data = Mapping[str, Any]


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


def section(data: Data, *keys: str) -> Data | None:
    node: Data | None = data
    for key in keys:
        if node is None:
            return None
        node = as_map(node.get(key))
    return node


def provider(data: Data) -> Provider | None:
    target = section(data, "target")
    value = target.get("provider") if target is not None else None
    return Provider(value) if value in tuple(Provider) else None


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
    """The pool's sharing mode, the default when `sharing` is absent, None when malformed."""
    sharing = pool.get("sharing")
    if sharing is None:
        return DEFAULT_SHARING_MODE.value
    fields = as_map(sharing)
    mode = fields.get("mode") if fields is not None else None
    return mode if isinstance(mode, str) else None


def markets(pool: Data) -> tuple[Market, ...]:
    """The markets a pool allows as written (the default when absent), unknown ones left out."""
    raw = pool.get("markets")
    if raw is None:
        return DEFAULT_MARKETS
    return tuple(Market(m) for m in as_list(raw) if m in tuple(Market))


def pool_procurement(pool: Data) -> dict[Market, float] | None:
    """A pool's own market mix, percent per market (a market left out: 0), or None when it has
    none (it is split fleet-wide) or it is malformed (the schema pass reports that)."""
    raw = as_map(pool.get("procurement"))
    if raw is None:
        return None
    shares: dict[Market, float] = {}
    for market in Market:
        value = raw.get(market.procurement_key, 0)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        shares[market] = float(value)
    return shares


def isolation(tenant: Data) -> Any:
    """The tenant's isolation as written, or the default (not necessarily a valid value)."""
    return tenant.get("isolation", DEFAULT_ISOLATION)


def allowed_pools(tenant: Data, modes: Mapping[str, str | None]) -> list[str]:
    """The pools a tenant may land on, in order: its allow-list `pools`, or every pool when it
    has none; either way only those its isolation permits. `modes`: pool name -> sharing mode."""
    explicit = [name for name in as_list(tenant.get("pools")) if isinstance(name, str)]
    kind = str(isolation(tenant))
    return [name for name in explicit or modes if name in modes and isolation_permits(kind, modes[name] or "")]


def priority(tenant: Data) -> Any:
    """The tenant's priority as written, or the default (not necessarily a valid value)."""
    return tenant.get("priority", DEFAULT_PRIORITY)


@dataclass(frozen=True)
class PoolGpu:
    model: GpuModel
    count: int
    source: str  # what the GPU was resolved from, for messages: "p5.48xlarge" or "gpu.model"


def pool_gpu(kind: Provider | None, pool: Data) -> PoolGpu | None:
    """The catalog GPU and GPUs per node of a pool: from its instance type on aws, its `gpu` on
    kubernetes; None when they cannot be resolved."""
    if kind is Provider.AWS:
        name = as_str(pool.get("instanceType"))
        itype = instance_type(name) if name is not None else None
        if itype is None:
            return None
        model = gpu_model(itype.gpu_model)
        return PoolGpu(model, itype.gpu_count, itype.name) if model is not None else None
    if kind is Provider.KUBERNETES:
        gpu = as_map(pool.get("gpu"))
        if gpu is None:
            return None
        name, count = as_str(gpu.get("model")), gpu.get("count")
        model = gpu_model(name) if name is not None else None
        if model is None or not is_int(count) or count < 1:
            return None
        return PoolGpu(model, count, "gpu.model")
    return None
