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
ADDON_TYPE = "aws:eks/addon:Addon"
_EMITTED = "\0emitted"  # the index key of emitted objects: no release has this name


@dataclass
class View:
    emitted: list[Obj]
    releases: dict[str, Obj]  # release name -> recorded inputs
    charts: ChartDirectory = NO_CHARTS
    renderer: Renderer = render_release
    _rendered: dict[str, list[Obj] | None] = field(default_factory=lambda: {})
    # Objects by (release or "" for emitted, kind) and by (release, kind, name), in their order:
    # every journey step looks objects up, so scanning them all per look-up made verify
    # quadratic (minutes on the benchmark's large specs).
    _by_kind: dict[tuple[str, str], list[Obj]] = field(default_factory=lambda: {})
    _by_name: dict[tuple[str, str, str], list[Obj]] = field(default_factory=lambda: {})
    _by_namespace: dict[tuple[str, str, str], list[Obj]] = field(default_factory=lambda: {})
    _indexed: set[str] = field(default_factory=lambda: set())
    memo: dict[Any, Any] = field(default_factory=lambda: {})  # per-view results of steps' sums
    addons: set[str] = field(default_factory=lambda: set())  # aws: the EKS add-ons emitted, by name

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
        if _EMITTED not in self._indexed:
            self._index(_EMITTED, self.emitted)
        return self._lookup(_EMITTED, kind, name, namespace)

    def find_rendered(self, release: str, kind: str, *, name: str | None = None) -> list[Obj]:
        if release not in self._indexed:
            self._index(release, self.rendered(release) or [])
        return self._lookup(release, kind, name, None)

    def _lookup(self, key: str, kind: str, name: str | None, namespace: str | None) -> list[Obj]:
        if name is not None:
            found = self._by_name.get((key, kind, name), [])
        elif namespace is not None:
            found = self._by_namespace.get((key, kind, namespace), [])
        else:
            return list(self._by_kind.get((key, kind), []))
        return [o for o in found if _is(o, kind, name, namespace)]

    def _index(self, key: str, objs: list[Obj]) -> None:
        self._indexed.add(key)
        for o in objs:
            kind = o.get("kind")
            if not isinstance(kind, str):
                continue
            self._by_kind.setdefault((key, kind), []).append(o)
            name, namespace = dig(o, "metadata", "name"), dig(o, "metadata", "namespace")
            if isinstance(name, str):
                self._by_name.setdefault((key, kind, name), []).append(o)
            if isinstance(namespace, str):
                self._by_namespace.setdefault((key, kind, namespace), []).append(o)

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
    addons: set[str] = set()
    for resource in resources:
        type_ = str(resource.get("type", ""))
        inputs = as_map(resource.get("inputs"))
        if type_ == RELEASE_TYPE:
            releases[str(inputs.get("name") or resource.get("name"))] = inputs
        elif type_.startswith("kubernetes:") and "kind" in inputs:
            emitted.append(inputs)
        elif type_ == ADDON_TYPE:
            addons.add(str(inputs.get("addonName")))
    return View(emitted, releases, charts, renderer, addons=addons)
