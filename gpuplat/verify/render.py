# pyright: strict
"""Render a recorded `kubernetes:helm.sh/v3:Release` with Helm's own library, offline.

The chart comes from a chart directory the user gives (`gpuplat verify --charts DIR`, or the
stack setting `gpuplat:localCharts`): one subdirectory per catalog chart key, e.g. DIR/hami,
holding that chart at the version the catalog pins; else from the chart cache `gpuplat charts
pull` fills (DIR/<key>/<version>, gpuplat/charts/cache.py). The values, release name and namespace
are the release's recorded inputs. Helm merges the values into the chart's defaults (maps
deep-merged, `null` deleting a default), which is exactly where emitted values and what a
cluster really runs part ways: so verify reads the rendered objects, never the values alone.

Without the chart, a release is not rendered: verify then says which steps it could not check
(not a failure) and the command that fetches the chart. helm-python-sdk (import `helm_python`)
is an optional dependency (`pip install gpuplat[verify]`); rendering without it raises
RenderUnavailable, which the CLI reports as a usage error.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import yaml

from gpuplat.catalog import Chart
from gpuplat.catalog.charts import LOCAL_CHARTS_SETTING, chart_of_release
from gpuplat.charts.cache import PULL_COMMAND, cached_chart, chart_version

RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
HOW_TO_GIVE = f"`{PULL_COMMAND}` fetches it, or give --charts DIR or set the stack setting {LOCAL_CHARTS_SETTING}"


class RenderUnavailable(Exception):
    """helm_python is not installed: nothing can be rendered."""


class RenderError(Exception):
    """A chart failed to render with the recorded values, or is not the pinned version."""


@dataclass(frozen=True)
class ChartDirectory:
    """Where charts are read from: `root`/<chart key>/Chart.yaml; with `cache`, the chart cache's
    `root`/<chart key>/<version>/Chart.yaml; or nowhere (root None)."""

    root: Path | None
    cache: bool = False

    def chart_dir(self, chart: Chart) -> Path | None:
        if self.root is None:
            return None
        directory = cached_chart(self.root, chart) if self.cache else self.root / chart.key
        return directory if (directory / "Chart.yaml").is_file() else None

    def missing(self, chart: Chart) -> str:
        """Why `chart` cannot be rendered here and how to fix it (for a step that could not be checked)."""
        if self.root is None:
            return f"no chart directory to render {chart.key} from ({HOW_TO_GIVE})"
        if self.cache:
            return f"chart {chart.key} {chart.version} is not pulled (`{PULL_COMMAND}` fetches it)"
        return (
            f"no chart {chart.key} under {self.root} ({self.root / chart.key}/Chart.yaml; "
            f"`{PULL_COMMAND} --into {self.root}` puts it there)"
        )


NO_CHARTS = ChartDirectory(None)


def catalog_chart(release: Mapping[str, Any]) -> Chart | None:
    """The catalog chart a release installs (its repository reference or local directory)."""
    return chart_of_release(release.get("chart"))


def as_values(value: Any) -> dict[str, Any]:
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


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


# libyaml's parser where PyYAML was built with it: the same documents, and a chart of hundreds of
# templates parses in a tenth of the pure-Python scanner's time.
SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_manifests(manifests: Mapping[str, str]) -> list[dict[str, Any]]:
    """Every object of the rendered templates, in template order (NOTES.txt is prose, skipped)."""
    objects: list[dict[str, Any]] = []
    for path, text in manifests.items():
        if path.endswith("NOTES.txt"):
            continue
        for document in yaml.load_all(text, Loader=SAFE_LOADER):
            if isinstance(document, dict):
                objects.append(cast("dict[str, Any]", document))
    return objects


def render_release(release: Mapping[str, Any], charts: ChartDirectory) -> list[dict[str, Any]] | None:
    """The objects a recorded release installs (its `inputs`), parsed; None when `charts` has no
    chart for it. A chart of another version than the release's is refused, never rendered."""
    chart = catalog_chart(release)
    directory = charts.chart_dir(chart) if chart is not None else None
    if chart is None or directory is None:
        return None
    found = chart_version(directory)
    if release.get("version") != found:
        raise RenderError(
            f"release {release.get('name')} installs {chart.key} {release.get('version')}, but {directory} "
            f"holds version {found or '(none)'}: put that version there"
        )
    if release.get("valueYamlFiles"):
        # Their merge with `values` is the provider's, not Helm's; guessing it could pass a broken chart.
        raise RenderError(f"release {release.get('name')}: valueYamlFiles are not read; pass the values inline")
    values = as_values(release.get("values"))
    name = str(release.get("name") or chart.key)
    namespace = str(release.get("namespace") or "default")
    manifests = _render_cached(str(directory), json.dumps(values, sort_keys=True), name, namespace)
    return parse_manifests(dict(manifests))
