"""The workload table of the pull-request comment: whether the reference models still fit.

Read from the plan JSON's `workloads` on both sides (a base planner without workloads gives
none), so a change of pool, MIG profile or precision shows each model's memory per GPU and
fit before and after. Nothing is printed when neither side has workloads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from ._templates import block, md_table, render

Json = dict[str, Any]


def _by_name(plan: Json | None) -> dict[str, Json]:
    items = cast("list[Json]", (plan or {}).get("workloads") or [])
    return {str(w["name"]): w for w in items}


def _gib(value: object) -> str:
    return f"{value:g} GiB" if isinstance(value, int | float) else "-"


def _usable(w: Json) -> str:
    usable = w.get("usableGiB")
    return f"{usable:g} of " if isinstance(usable, int | float) else ""


def _cells(w: Json | None) -> tuple[str, str, str, str]:
    if w is None:
        return "-", "-", "-", "-"
    total = cast("Json", w.get("perGpuGiB") or {}).get("total")
    return (
        f"{w.get('pool')} ×{w.get('gpus')}",
        _gib(total),
        f"{_usable(w)}{_gib(w.get('gpuMemoryGiB'))} ({w.get('unit')})",
        "yes" if w.get("fits") else "**no**",
    )


def _arrow(before: str, after: str) -> str:
    return after if before == after else f"{before} → {after}"


def workloads_section(head: Json, base: Json | None) -> str:
    """The comment's Workloads section, "" when neither side has workloads."""
    now, before = _by_name(head), _by_name(base)
    if not now and not before:
        return ""
    names = [*now, *(n for n in before if n not in now)]
    rows: list[Sequence[str]] = []
    for name in names:
        after_cells, before_cells = _cells(now.get(name)), _cells(before.get(name))
        if base is None:
            rows.append([name, *after_cells])
        else:
            rows.append([name, *(_arrow(b, a) for b, a in zip(before_cells, after_cells, strict=True))])
    header = ["workload", "pool × GPUs", "per GPU", "usable of GPU memory", "fits"]
    return render("comment_workloads.md.j2", compared=base is not None, table=block(md_table(header, rows)))
