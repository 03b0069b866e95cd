"""Grafana dashboards generated from the spec and the plan (no pulumi here)."""

from __future__ import annotations

from .build import Dashboard, dashboards

__all__ = ["Dashboard", "dashboards"]
