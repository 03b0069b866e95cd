# pyright: strict
"""What the cluster would hold: the recorded Kubernetes objects plus what each Helm release renders.

Built from recorded resources as plain dicts (`{"type", "name", "inputs", ...}`, the preview's
JSON form). Emitted objects are the inputs of `kubernetes:*` resources (not releases or
providers); a release's objects are rendered from the chart directory on first use (render.py),
and remember which release they came from so a step can name it. A release whose chart is not
in the directory is not rendered: `not_rendered` says why, and the steps reading it report
themselves as not checked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .k8s import Obj, as_map, dig
from .render import NO_CHARTS, RELEASE_TYPE, ChartDirectory, catalog_chart, render_release

Renderer = Callable[[Mapping[str, Any], ChartDirectory], "list[Obj] | None"]


@dataclass
class View:
    emitted: list[Obj]
    releases: dict[str, Obj]  # release name -> recorded inputs
    charts: ChartDirectory = NO_CHARTS
    renderer: Renderer = render_release
    _rendered: dict[str, list[Obj] | None] = field(default_factory=lambda: {})

    def rendered(self, release: str) -> list[Obj] | None:
        """The objects release `release` installs; [] when it is not emitted, None when its chart
        is not in the chart directory (what it installs is then unknown)."""
        if release not in self._rendered:
            inputs = self.releases.get(release)
            self._rendered[release] = [] if inputs is None else self.renderer(inputs, self.charts)
        return self._rendered[release]

    def not_rendered(self, release: str) -> str | None:
        """Why release `release` cannot be rendered here, or None when it can (or is not emitted)."""
        chart = catalog_chart(self.releases.get(release) or {})
        if chart is None or self.rendered(release) is not None:
            return None
        return self.charts.missing(chart)

    def find(self, kind: str, *, name: str | None = None, namespace: str | None = None) -> list[Obj]:
        """Emitted objects of `kind` (optionally by name / namespace)."""
        return [o for o in self.emitted if _is(o, kind, name, namespace)]

    def find_rendered(self, release: str, kind: str, *, name: str | None = None) -> list[Obj]:
        return [o for o in self.rendered(release) or [] if _is(o, kind, name, None)]

    def release_of_chart(self, chart_key: str) -> str | None:
        """The name of the release installing catalog chart `chart_key`."""
        for name, inputs in self.releases.items():
            chart = catalog_chart(inputs)
            if chart is not None and chart.key == chart_key:
                return name
        return None


def _is(obj: Obj, kind: str, name: str | None, namespace: str | None) -> bool:
    if obj.get("kind") != kind:
        return False
    if name is not None and dig(obj, "metadata", "name") != name:
        return False
    return namespace is None or dig(obj, "metadata", "namespace") == namespace


def build_view(
    resources: Sequence[Mapping[str, Any]], charts: ChartDirectory = NO_CHARTS, renderer: Renderer = render_release
) -> View:
    emitted: list[Obj] = []
    releases: dict[str, Obj] = {}
    for resource in resources:
        type_ = str(resource.get("type", ""))
        inputs = as_map(resource.get("inputs"))
        if type_ == RELEASE_TYPE:
            releases[str(inputs.get("name") or resource.get("name"))] = inputs
        elif type_.startswith("kubernetes:") and "kind" in inputs:
            emitted.append(inputs)
    return View(emitted, releases, charts, renderer)
