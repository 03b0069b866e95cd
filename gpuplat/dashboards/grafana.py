"""Grafana dashboard JSON (schemaVersion 39), written as plain dicts.

Why no builder library: grafana-foundation-sdk would be a runtime dependency for what is, in
the end, one JSON document per dashboard; the handful of fields used here are Grafana's
dashboard model (docs: "JSON model"), and the tests check the structure Grafana relies on
(unique panel ids, a 24-column grid, a datasource per target, every variable defined).

Datasource: the `datasource` variable, preset to kube-prometheus-stack's Prometheus datasource
(the chart's `grafana.sidecar.datasources.uid`, "prometheus"), so a Grafana with another uid
still resolves it by picking its Prometheus.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = 39
DATASOURCE_UID = "prometheus"  # kube-prometheus-stack's grafana.sidecar.datasources.uid
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
GRID_COLUMNS = 24
UID_MAX = 40  # Grafana refuses longer dashboard uids


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str = ""


@dataclass(frozen=True)
class Panel:
    title: str
    queries: Sequence[Query]
    unit: str = "short"
    kind: str = "timeseries"  # timeseries | stat
    width: int = 12
    height: int = 8
    description: str = ""
    stacked: bool = False
    # Threshold lines drawn on the chart: (value, colour), e.g. the scaling thresholds or a quota.
    lines: Sequence[tuple[float, str]] = field(default_factory=lambda: ())


def or_zero(expr: str) -> str:
    """0 where `expr` has no series (nothing held, no event yet), so the panel reads 0, not "no data"."""
    return f"({expr} or vector(0))"


def over_range(series: str) -> str:
    """A per-hour rate summed over the dashboard's range, sampled each minute: hours (or USD)."""
    return f"sum(sum_over_time({series}[$__range:1m])) / 60"


def uid(*parts: str) -> str:
    """A stable dashboard uid: readable when short, hashed to Grafana's 40 characters when not."""
    text = "-".join(parts)
    if len(text) <= UID_MAX:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"{text[: UID_MAX - 9]}-{digest}"


def _field_config(panel: Panel) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [{"color": "green", "value": None}]
    steps += [{"color": colour, "value": value} for value, colour in sorted(panel.lines)]
    custom: dict[str, Any] = {}
    if panel.kind == "timeseries":
        custom = {
            "drawStyle": "line",
            "fillOpacity": 30 if panel.stacked else 10,
            "stacking": {"mode": "normal" if panel.stacked else "none", "group": "A"},
            "thresholdsStyle": {"mode": "line" if panel.lines else "off"},
        }
    return {
        "defaults": {"unit": panel.unit, "custom": custom, "thresholds": {"mode": "absolute", "steps": steps}},
        "overrides": [],
    }


def _panel(panel: Panel, panel_id: int, x: int, y: int) -> dict[str, Any]:
    targets = [
        {"datasource": DATASOURCE, "expr": q.expr, "legendFormat": q.legend or "__auto", "refId": chr(ord("A") + i)}
        for i, q in enumerate(panel.queries)
    ]
    out: dict[str, Any] = {
        "id": panel_id,
        "type": panel.kind,
        "title": panel.title,
        "datasource": DATASOURCE,
        "gridPos": {"h": panel.height, "w": panel.width, "x": x, "y": y},
        "targets": targets,
        "fieldConfig": _field_config(panel),
        "options": {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True}}
        if panel.kind == "timeseries"
        else {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}},
    }
    if panel.description:
        out["description"] = panel.description
    return out


def layout(panels: Sequence[Panel]) -> list[dict[str, Any]]:
    """Left to right, wrapping at 24 columns; a row is as tall as its tallest panel."""
    out: list[dict[str, Any]] = []
    x = y = row_height = 0
    for panel_id, panel in enumerate(panels, start=1):
        if x + panel.width > GRID_COLUMNS:
            x, y, row_height = 0, y + row_height, 0
        out.append(_panel(panel, panel_id, x, y))
        x += panel.width
        row_height = max(row_height, panel.height)
    return out


def datasource_variable() -> dict[str, Any]:
    return {
        "name": "datasource",
        "label": "Prometheus",
        "type": "datasource",
        "query": "prometheus",
        "current": {"text": "Prometheus", "value": DATASOURCE_UID},
        "hide": 0,
        "refresh": 1,
    }


def dashboard(
    title: str, dashboard_uid: str, panels: Sequence[Panel], tags: Sequence[str], links: Mapping[str, str] | None = None
) -> dict[str, Any]:
    return {
        "uid": dashboard_uid,
        "title": title,
        "tags": list(tags),
        "timezone": "utc",
        "editable": False,
        "graphTooltip": 1,
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "refresh": "1m",
        "time": {"from": "now-24h", "to": "now"},
        "templating": {"list": [datasource_variable()]},
        "annotations": {"list": []},
        "links": [
            {"title": name, "type": "link", "url": url, "targetBlank": False} for name, url in (links or {}).items()
        ],
        "panels": layout(panels),
    }
