# pyright: strict
"""Where the catalog's charts are kept on this machine, once pulled.

One unpacked chart per catalog key and pinned version, `<cache>/<key>/<version>/Chart.yaml`:
a chart cache serves every project and every gpuplat version at once, and a release is only
ever rendered from the version it installs (a newer gpuplat pinning another version finds its
own directory missing, never an older chart). The cache is `$GPUPLAT_CHART_CACHE`, else
`$XDG_CACHE_HOME/gpuplat/charts`, else `~/.cache/gpuplat/charts`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, cast

import yaml

from gpuplat.catalog import Chart

CACHE_ENV = "GPUPLAT_CHART_CACHE"
PULL_COMMAND = "gpuplat charts pull"


def cache_root() -> Path:
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "gpuplat" / "charts"


def cached_chart(root: Path, chart: Chart) -> Path:
    """The directory of `chart` at its pinned version in the cache at `root`."""
    return root / chart.key / chart.version


def chart_metadata(directory: Path) -> dict[str, Any]:
    """The Chart.yaml of the chart unpacked at `directory` ({} when there is none or it is unreadable)."""
    try:
        loaded = yaml.safe_load((directory / "Chart.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    return cast("dict[str, Any]", loaded) if isinstance(loaded, dict) else {}


def chart_version(directory: Path) -> str:
    return str(chart_metadata(directory).get("version", ""))
