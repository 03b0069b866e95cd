"""Helpers the rules share. The forgiving reads of the spec data live in gpuplat/view.py.

Rules also run when the schema pass failed elsewhere, so they read the merged plain data
defensively: a value of the wrong type is treated as absent (the schema pass reports it),
never as a reason for a second, confusing diagnostic. The model is built through the same
reads, so the rules and the model agree on every default.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from gpuplat import view
from gpuplat.view import (
    Data,
    PoolGpu,
    as_list,
    as_map,
    as_str,
    is_int,
    is_number,
    markets,
    pool_name,
    pools,
    provider,
    section,
    sharing_mode,
    tenants,
)
from gpuplat.vocabulary import REPLICA_MODES, SHARED_MODES

__all__ = [
    "REPLICA_MODES",
    "SHARED_MODES",
    "Data",
    "PoolGpu",
    "as_list",
    "as_map",
    "as_str",
    "did_you_mean",
    "is_int",
    "is_number",
    "listing",
    "markets",
    "pool_gpu",
    "pool_max_gpus",
    "pool_name",
    "pools",
    "provider",
    "repeats",
    "section",
    "sharing_mode",
    "show_number",
    "tenants",
]


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


def pool_gpu(data: Data, pool: Data) -> PoolGpu | None:
    """The catalog GPU and GPUs per node of a pool, or None when they cannot be resolved."""
    return view.pool_gpu(provider(data), pool)


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
