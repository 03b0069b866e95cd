"""Charts for people: mermaid `xychart-beta` blocks for the pull-request comment.

GitHub renders a fenced ```mermaid block in a comment; xychart-beta draws bars and lines over
category or numeric axes, without a legend or grouped bars, so a before / after comparison is
one bar per pool and market side by side (`train spot: base`, `train spot: head`) under a title
that names the unit. The numbers come shaped from the plan JSON; the text goes through jinja2.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, cast

from ._templates import block, render

Json = dict[str, Any]
MAX_CATEGORIES = 40  # beyond this the labels overlap past reading; the table above still has every row


def xychart(
    title: str,
    categories: Sequence[str],
    y_label: str,
    bars: Sequence[Sequence[float]] = (),
    lines: Sequence[Sequence[float]] = (),
) -> str:
    values = [v for series in (*bars, *lines) for v in series]
    top = max(values, default=0)
    return block(
        render(
            "xychart.md.j2",
            title=title.replace('"', "'"),
            categories=list(categories),
            y_label=y_label,
            y_max=_nice_ceiling(top),
            bars=[[_number(v) for v in s] for s in bars],
            lines=[[_number(v) for v in s] for s in lines],
        )
    )


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.4g}"


def _nice_ceiling(value: float) -> int:
    """The axis top: 1, 2 or 5 times a power of ten at or above `value` (at least 1)."""
    if value <= 1:
        return 1
    power = 10 ** math.floor(math.log10(value))
    return next(int(m * power) for m in (1, 2, 5, 10) if m * power >= value)


def _nodes(plan: Json | None, markets: Sequence[tuple[str, str]]) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for pool in cast("list[Json]", (plan or {}).get("pools") or []):
        for key, market in markets:
            bought = cast("Json", pool.get("markets") or {})
            nodes = int(cast("Json", bought.get(key) or {}).get("nodes", 0))
            if nodes:
                out[str(pool["name"]), market] = nodes
    return out


def capacity_chart(head: Json, base: Json, markets: Sequence[tuple[str, str]]) -> str | None:
    """Nodes at max size per pool and market, base beside head, for the pools whose nodes moved;
    None when no pool's nodes moved (a chart of equal bars says nothing the table does not)."""
    now, before = _nodes(head, markets), _nodes(base, markets)
    moved = {
        pool for pool, market in now.keys() | before.keys() if now.get((pool, market)) != before.get((pool, market))
    }
    if not moved:
        return None
    order = [str(p["name"]) for p in cast("list[Json]", head.get("pools") or [])]
    order += [str(p["name"]) for p in cast("list[Json]", base.get("pools") or []) if str(p["name"]) not in order]
    pairs = [
        (pool, market)
        for pool in order
        if pool in moved
        for _, market in markets
        if (pool, market) in now or (pool, market) in before
    ]
    pairs = pairs[: MAX_CATEGORIES // 2]
    categories = [f"{pool} {market}: {side}" for pool, market in pairs for side in ("base", "head")]
    values = [side.get(pair, 0) for pair in pairs for side in (before, now)]
    return xychart("Nodes at max size by pool and market, base and head", categories, "nodes", bars=[values])


def _thin(values: Sequence[float], every: int, length: int) -> list[float]:
    """Every `every`-th sample up to `length` samples; after a replay's end, nothing runs (0)."""
    padded = [*values, *([0.0] * (length - len(values)))]
    return padded[::every]


def replay_charts(base: Mapping[str, Any], head: Mapping[str, Any]) -> list[str]:
    """GPUs in use and jobs waiting over the replay, base as bars, head as a line over them.

    Both timelines sample the same trace at the same step, so sample i is the same instant in
    both; the longer replay sets the axis and the shorter one is 0 after its end."""
    length = max(len(base["seconds"]), len(head["seconds"]))
    every = max(1, -(-length // MAX_CATEGORIES))
    seconds: list[float] = (base if len(base["seconds"]) == length else head)["seconds"][::every]
    span = seconds[-1] if seconds else 0
    labels = [f"{t / 86400:.1f}d" if span >= 3 * 86400 else f"{t / 3600:.1f}h" for t in seconds]
    charts: list[str] = []
    for title, unit, group, key in (
        ("GPUs in use", "GPUs", "gpus", "allocated"),
        ("Jobs waiting", "jobs", "waiting", "jobs"),
    ):
        bars = _thin(cast("list[float]", base[group][key]), every, length)
        line = _thin(cast("list[float]", head[group][key]), every, length)
        charts.append(xychart(f"{title} over the replay: bars base, line this change", labels, unit, [bars], [line]))
    return charts
