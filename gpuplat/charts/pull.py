# pyright: strict
"""Fetch the catalog's charts at their pinned versions with Helm's own SDK (helm-python-sdk,
the `verify` extra): an HTTP chart repository's index or an OCI registry, as `helm pull` would.

Each chart comes from its own repository (gpuplat/catalog/charts.py), or from one repository
holding them all (`repo`: a mirror, an air-gapped copy): an HTTP repository whose index lists each
chart under its chart name, or `oci://host/path` holding each at `oci://host/path/<chart name>`.
The archive is unpacked into the chart cache (cache.py) under a scratch name and moved into place
only once its Chart.yaml names the pinned chart and version, so the cache never holds a partial or
a wrong chart. A chart already in the cache is not fetched again.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuplat.catalog import Chart

from .cache import cached_chart, chart_metadata, chart_version


class PullUnavailable(Exception):
    """helm-python-sdk is not installed."""


class PullError(Exception):
    """The repository could not give the chart at its version (unreachable, no such chart or version)."""


class PullRefused(Exception):
    """What the repository gave is not the pinned chart, or a directory to fill holds another chart."""


@dataclass(frozen=True)
class Pulled:
    chart: Chart
    path: Path  # the chart's directory in the cache
    source: str  # where it was fetched from ("" when it was in the cache already)

    @property
    def fresh(self) -> bool:
        return bool(self.source)


def _helm() -> Any:
    try:
        import helm_python
    except ImportError as err:
        raise PullUnavailable(
            "pulling the Helm charts needs helm-python-sdk; install it with `pip install 'gpuplat[verify]'`"
        ) from err
    return helm_python


def reference(chart: Chart, repo: str | None = None) -> tuple[str, str | None]:
    """What Helm pulls: (chart reference, HTTP repository URL or None for an OCI reference)."""
    base = (repo or chart.repo).rstrip("/")
    if base.startswith("oci://"):
        return f"{base}/{chart.chart}", None
    return chart.chart, base


def describe(chart: Chart, repo: str | None = None) -> str:
    ref, url = reference(chart, repo)
    return ref if url is None else f"{url} (chart {ref})"


def pull(chart: Chart, cache: Path, repo: str | None = None, *, plain_http: bool = False) -> Pulled:
    """`chart` at its pinned version in the cache at `cache`, fetched unless it is there already."""
    target = cached_chart(cache, chart)
    if chart_version(target) == chart.version:
        return Pulled(chart, target, "")
    helm = _helm()
    ref, url = reference(chart, repo)
    where = describe(chart, repo)
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix=".pull-") as work:
        try:
            helm.pull(ref, repo_url=url, version=chart.version, destination=work, untar=True, untar_dir=work,
                      plain_http=plain_http)
        except helm.HelmError as err:
            raise PullError(f"{chart.key} {chart.version} from {where}: {err}") from err
        unpacked = Path(work) / chart.chart
        meta = chart_metadata(unpacked)
        got = (str(meta.get("name", "")), str(meta.get("version", "")))
        if got != (chart.chart, chart.version):
            raise PullRefused(
                f"{chart.key}: {where} gave chart {got[0] or '(none)'} {got[1] or '(no version)'}, "
                f"not {chart.chart} {chart.version}; nothing was cached"
            )
        if target.exists():  # a leftover of an interrupted pull: the cache is ours
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            unpacked.rename(target)
        except OSError:
            if chart_version(target) != chart.version:  # else another pull put it there meanwhile
                raise
    return Pulled(chart, target, where)


def place(pulled: Pulled, directory: Path) -> bool:
    """Copy the cached chart to `directory`/<key> (the layout of gpuplat:localCharts and verify
    --charts); False when it is there already. Never replaces another chart or version."""
    chart = pulled.chart
    target = directory / chart.key
    if target.exists():
        found = chart_version(target)
        if found == chart.version and chart_metadata(target).get("name") == chart.chart:
            return False
        held = f"version {found}" if found else "no chart"
        raise PullRefused(f"{target} holds {held}, not {chart.chart} {chart.version}: remove it, or choose another "
                          "directory")
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copytree(pulled.path, target, symlinks=True)
    return True
