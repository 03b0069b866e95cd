"""`gpuplat simulate --plot FILE.svg`: the replay over time as an SVG, drawn by our own code.

Three panels over the replay's hours: GPUs provisioned, allocated and busy; the queue (jobs
waiting and the GPUs they ask for); nodes by market. The numbers are the timeline the JSON
carries (`timeline` in `--format json`), point for point; no plotting library, because an SVG
of polylines is a page of markup (templates/replay.svg.j2) and a dependency would be for that alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._templates import render

WIDTH, PANEL_HEIGHT, LEFT, RIGHT, TOP, GAP = 960, 180, 70, 150, 50, 50
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")


@dataclass(frozen=True)
class Series:
    key: str  # its path in the timeline JSON, e.g. gpus.busy
    label: str
    values: Sequence[float]


def nice_max(value: float) -> float:
    """The axis top: 1, 2 or 5 times a power of ten at or above `value` (1 when nothing is drawn)."""
    if value <= 0:
        return 1.0
    power = 1.0
    while power * 10 < value:
        power *= 10
    while power > value:
        power /= 10
    return next(m * power for m in (1, 2, 5, 10) if m * power >= value)


def panels_of(timeline: dict[str, Any]) -> list[tuple[str, str, list[Series]]]:
    gpus, waiting = timeline["gpus"], timeline["waiting"]
    return [
        ("gpus", "GPUs", [Series(f"gpus.{k}", k, gpus[k]) for k in ("provisioned", "allocated", "busy")]),
        (
            "waiting",
            "Queue",
            [
                Series("waiting.jobs", "jobs waiting", waiting["jobs"]),
                Series("waiting.gpus", "GPUs asked for", waiting["gpus"]),
            ],
        ),
        (
            "nodes",
            "Nodes by market",
            [Series(f"nodesByMarket.{m}", m, v) for m, v in timeline["nodesByMarket"].items()],
        ),
    ]


def _hours_label(seconds: float, span: float) -> str:
    return f"{seconds / 86400:g}d" if span >= 3 * 86400 else f"{seconds / 3600:g}h"


def _x_ticks(x_max: float, plot_width: float) -> list[dict[str, Any]]:
    unit = 86400.0 if x_max >= 3 * 86400 else 3600.0
    step = nice_max(x_max / unit / 6) * unit
    ticks: list[dict[str, Any]] = []
    t = 0.0
    while t <= x_max + 1e-9:
        ticks.append({"x": round(LEFT + t / x_max * plot_width, 2), "label": _hours_label(t, x_max)})
        t += step
    return ticks


def plot_svg(timeline: dict[str, Any], title: str) -> str:
    times: list[float] = timeline["seconds"]
    x_max = max(times[-1] if times else 0.0, 1.0)
    plot_width = WIDTH - LEFT - RIGHT
    panels: list[dict[str, Any]] = []
    for index, (key, panel_title, series) in enumerate(panels_of(timeline)):
        top = TOP + index * (PANEL_HEIGHT + GAP)
        y_max = nice_max(max((v for s in series for v in s.values), default=0.0))

        def y(value: float, top: float = top, y_max: float = y_max) -> float:
            return round(top + PANEL_HEIGHT - value / y_max * PANEL_HEIGHT, 2)

        drawn = [
            {
                "key": s.key,
                "label": s.label,
                "colour": COLOURS[i % len(COLOURS)],
                "points": " ".join(
                    f"{round(LEFT + t / x_max * plot_width, 2)},{y(v)}" for t, v in zip(times, s.values, strict=True)
                ),
            }
            for i, s in enumerate(series)
        ]
        ticks = [{"y": y(f * y_max), "label": f"{f * y_max:g}"} for f in (0, 0.5, 1)]
        panels.append({"key": key, "title": panel_title, "top": top, "y_max": y_max, "y_ticks": ticks, "series": drawn})
    return render(
        "replay.svg.j2",
        title=title,
        width=WIDTH,
        height=TOP + len(panels) * (PANEL_HEIGHT + GAP),
        left=LEFT,
        plot_width=plot_width,
        panel_height=PANEL_HEIGHT,
        x_max=x_max,
        x_ticks=_x_ticks(x_max, plot_width),
        panels=panels,
    )
