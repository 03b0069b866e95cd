"""`gpuplat simulate --plot FILE.svg`: the picture is the replay's timeline, series for series.

The SVG is read back with the standard XML parser: each polyline's points, through its panel's
scale, must give the values `--format json` carries as `timeline`. The timeline itself is held
to the replay's totals: integrating the sampled GPUs gives the GPU-hours the report states.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from gpuplat.cli import main
from gpuplat.compile import load_for_stack
from gpuplat.simulate import Options, load_trace, simulate

SVG = "{http://www.w3.org/2000/svg}"
# Two tenants asking for more GPUs within 40 minutes than their quotas hold: the queue fills and drains.
TRACE = "submit,duration,gpus,tenant\n" + "".join(
    f"{i * 60},{3600 + 600 * (i % 4)},{32 * (1 + i % 3)},{'ab'[i % 2]}\n" for i in range(40)
)


def _trace(tmp_path: Path) -> Path:
    path = tmp_path / "short.csv"
    path.write_text(TRACE)
    return path


def _lookup(timeline: dict[str, Any], key: str) -> list[float]:
    node: Any = timeline
    for part in key.split(".", 1) if not key.startswith("nodesByMarket.") else ["nodesByMarket", key[14:]]:
        node = node[part]
    return node


def _read_back(svg: str) -> dict[str, list[tuple[float, float]]]:
    """series key -> (seconds, value) per point, inverted through the panel's scale."""
    root = ET.fromstring(svg)
    out: dict[str, list[tuple[float, float]]] = {}
    for panel in root.iter(f"{SVG}g"):
        left, top = float(panel.get("data-left", 0)), float(panel.get("data-top", 0))
        width, height = float(panel.get("data-width", 1)), float(panel.get("data-height", 1))
        x_max, y_max = float(panel.get("data-x-max", 1)), float(panel.get("data-y-max", 1))
        for line in panel.iter(f"{SVG}polyline"):
            points = [tuple(map(float, p.split(","))) for p in str(line.get("points")).split()]
            out[str(line.get("data-series"))] = [
                ((x - left) / width * x_max, (top + height - y) / height * y_max) for x, y in points
            ]
    return out


def test_the_plot_draws_the_series_the_json_carries(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plot = tmp_path / "replay.svg"
    args = ["simulate", "--stack", "prod", "--trace", str(_trace(tmp_path)), "--tenant-map", "a=research"]
    args += ["--tenant-map", "b=product", "--format", "json", "--plot", str(plot)]
    assert main(args) == 0
    timeline = json.loads(capsys.readouterr().out)["timeline"]
    drawn = _read_back(plot.read_text(encoding="utf-8"))
    assert set(drawn) >= {"gpus.provisioned", "gpus.allocated", "gpus.busy", "waiting.jobs", "waiting.gpus"}
    assert any(k.startswith("nodesByMarket.") for k in drawn)
    for key, points in drawn.items():
        values = _lookup(timeline, key)
        assert len(points) == len(values) == len(timeline["seconds"]), key
        y_max = max(max(values), 1)
        for (t, v), expected_t, expected in zip(points, timeline["seconds"], values, strict=True):
            assert t == pytest.approx(expected_t, abs=timeline["seconds"][-1] / 500)
            assert v == pytest.approx(expected, abs=y_max / 1000), key
    assert max(timeline["waiting"]["jobs"]) > 0, "the trace was meant to queue: the plot shows nothing"


def test_the_timeline_adds_up_to_the_reported_gpu_hours(tmp_path: Path) -> None:
    model, plan = load_for_stack("prod")
    result = simulate(model, plan, load_trace(_trace(tmp_path)), Options(tenant_map={"a": "research", "b": "product"}))
    assert result.timeline is not None
    tl = result.timeline
    step = tl.step
    for series, total in ((tl.allocated, "allocated_gpu_h"), (tl.busy, "busy_gpu_h")):
        sampled = sum(series) * step / 3600
        # Sampling at a step misses what changes between samples: within a step of each change.
        assert sampled == pytest.approx(result.total(total), rel=0.1), total
    assert all(p >= a >= b - 1e-9 for p, a, b in zip(tl.provisioned, tl.allocated, tl.busy, strict=True))


def test_an_unwritable_plot_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["simulate", "--stack", "prod", "--trace", str(_trace(tmp_path)), "--plot", str(tmp_path / "no" / "x.svg")]
    assert main(args) == 2
    assert "cannot write" in capsys.readouterr().err


def test_the_pull_request_table_charts_base_and_head_over_time(tmp_path: Path) -> None:
    """Bars are the base's GPUs in use (and jobs waiting), the line the head's, sample for sample."""
    import dataclasses
    import re

    from gpuplat.render.charts import MAX_CATEGORIES
    from gpuplat.simulate.report import render_markdown

    model, plan = load_for_stack("prod")
    trace, options = load_trace(_trace(tmp_path)), Options(tenant_map={"a": "research", "b": "product"})
    head = simulate(model, plan, trace, options)
    base = simulate(model, plan, trace, dataclasses.replace(options, autoscaling=False))
    assert head.timeline is not None and base.timeline is not None
    markdown = render_markdown(head, base)
    charts = re.findall(r"```mermaid\nxychart-beta\n(.*?)```", markdown, re.S)
    assert len(charts) == 2
    length = max(len(base.timeline.times), len(head.timeline.times))
    every = max(1, -(-length // MAX_CATEGORIES))
    for chart, pick in zip(charts, ("allocated", "waiting_jobs"), strict=True):
        bars = json.loads(re.search(r"bar (\[.*\])", chart).group(1))  # type: ignore[union-attr]
        line = json.loads(re.search(r"line (\[.*\])", chart).group(1))  # type: ignore[union-attr]
        for drawn, timeline in ((bars, base.timeline), (line, head.timeline)):
            values = getattr(timeline, pick)
            expected = [values[i] if i < len(values) else 0 for i in range(0, length, every)]
            assert drawn == pytest.approx(expected, rel=1e-3), pick
        assert len(bars) <= MAX_CATEGORIES
    assert render_markdown(head).count("```mermaid") == 0  # without a base: the table alone
