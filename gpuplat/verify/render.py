# pyright: strict
"""Render a recorded `kubernetes:helm.sh/v3:Release` with Helm's own library, offline.

The chart comes from the sources vendored under gpuplat/catalog/chart_sources/<chart>/ (the
catalog pins which chart and version a release installs); the values, release name and
namespace are the release's recorded inputs. Helm merges the values into the chart's defaults
(maps deep-merged, `null` deleting a default), which is exactly where emitted values and what
a cluster really runs part ways: so verify and the tests read the rendered objects, never the
values alone.

helm-python-sdk (import `helm_python`) is an optional dependency (`pip install gpuplat[verify]`);
without it rendering raises RenderUnavailable, which the CLI reports as a usage error.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

import yaml

from gpuplat.catalog import CHARTS, Chart

CHART_SOURCES = Path(__file__).resolve().parent.parent / "catalog" / "chart_sources"
RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
# The published chart version of each vendored source (chart_sources/SOURCES.md). Some upstream
# Chart.yaml files carry a development version, so the version is recorded here; a release of
# another version is refused, never rendered from the wrong templates.
VENDORED_VERSIONS: Mapping[str, str] = MappingProxyType(
    {"hami": "2.10.0", "gpu-operator": "v26.7.0", "karpenter": "1.14.1", "karpenter-crd": "1.14.1", "kueue": "0.19.2"}
)


class RenderUnavailable(Exception):
    """helm_python is not installed: nothing can be rendered."""


class RenderError(Exception):
    """A chart failed to render with the recorded values."""


def catalog_chart(release: Mapping[str, Any]) -> Chart | None:
    """The catalog chart a release installs (matched on its chart reference)."""
    for chart in CHARTS.values():
        if release.get("chart") == chart.release_chart:
            return chart
    return None


def source_dir(chart: Chart) -> Path | None:
    """The vendored chart sources of `chart`, or None when they are not vendored."""
    directory = CHART_SOURCES / chart.key
    return directory if chart.key in VENDORED_VERSIONS and (directory / "Chart.yaml").is_file() else None


def as_values(value: Any) -> dict[str, Any]:
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def renderable(release: Mapping[str, Any]) -> bool:
    chart = catalog_chart(release)
    return chart is not None and source_dir(chart) is not None


def _helm() -> Any:
    try:
        import helm_python
    except ImportError as err:
        raise RenderUnavailable(
            "rendering the Helm charts needs helm-python-sdk; install it with `pip install 'gpuplat[verify]'`"
        ) from err
    return helm_python


@functools.lru_cache(maxsize=32)
def _render_cached(directory: str, values_json: str, name: str, namespace: str) -> tuple[tuple[str, str], ...]:
    helm = _helm()
    try:
        chart = helm.Chart.load(directory)
        manifests = cast("dict[str, str]", chart.render(json.loads(values_json), name=name, namespace=namespace))
    except helm.HelmError as err:
        raise RenderError(f"{Path(directory).name}: {err}") from err
    return tuple(sorted(manifests.items()))


def parse_manifests(manifests: Mapping[str, str]) -> list[dict[str, Any]]:
    """Every object of the rendered templates, in template order (NOTES.txt is prose, skipped)."""
    objects: list[dict[str, Any]] = []
    for path, text in manifests.items():
        if path.endswith("NOTES.txt"):
            continue
        for document in yaml.safe_load_all(text):
            if isinstance(document, dict):
                objects.append(cast("dict[str, Any]", document))
    return objects


def render_release(release: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The objects a recorded release installs (its `inputs`), parsed; [] without vendored sources."""
    chart = catalog_chart(release)
    directory = source_dir(chart) if chart is not None else None
    if directory is None:
        return []
    vendored = VENDORED_VERSIONS[chart.key] if chart else ""
    if release.get("version") != vendored:
        raise RenderError(
            f"release {release.get('name')} installs {release.get('chart')} {release.get('version')}, but the "
            f"vendored sources are {vendored}: vendor that version under {directory}"
        )
    if release.get("valueYamlFiles"):
        # Their merge with `values` is the provider's, not Helm's; guessing it could pass a broken chart.
        raise RenderError(f"release {release.get('name')}: valueYamlFiles are not read; pass the values inline")
    values = as_values(release.get("values"))
    name = str(release.get("name") or (chart.key if chart else ""))
    namespace = str(release.get("namespace") or "default")
    manifests = _render_cached(str(directory), json.dumps(values, sort_keys=True), name, namespace)
    return parse_manifests(dict(manifests))
