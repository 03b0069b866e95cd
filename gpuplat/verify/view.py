# pyright: strict
"""What the cluster would hold: the recorded Kubernetes objects plus what each Helm release renders.

Built from recorded resources as plain dicts (`{"type", "name", "inputs", ...}`, the preview's
JSON form). Emitted objects are the inputs of `kubernetes:*` resources (not releases or
providers); a release's objects are rendered from the vendored chart sources on first use,
and remember which release they came from so a step can name it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .k8s import Obj, as_map, dig
from .render import RELEASE_TYPE, catalog_chart, render_release, renderable

Renderer = Callable[[Mapping[str, Any]], list[Obj]]


@dataclass
class View:
    emitted: list[Obj]
    releases: dict[str, Obj]  # release name -> recorded inputs
    renderer: Renderer = render_release
    _rendered: dict[str, list[Obj]] = field(default_factory=lambda: {})

    def rendered(self, release: str) -> list[Obj]:
        """The objects release `release` installs; [] when absent or without vendored sources."""
        if release not in self._rendered:
            inputs = self.releases.get(release)
            self._rendered[release] = self.renderer(inputs) if inputs is not None and renderable(inputs) else []
        return self._rendered[release]

    def find(self, kind: str, *, name: str | None = None, namespace: str | None = None) -> list[Obj]:
        """Emitted objects of `kind` (optionally by name / namespace)."""
        return [o for o in self.emitted if _is(o, kind, name, namespace)]

    def find_rendered(self, release: str, kind: str, *, name: str | None = None) -> list[Obj]:
        return [o for o in self.rendered(release) if _is(o, kind, name, None)]

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


def build_view(resources: Sequence[Mapping[str, Any]], renderer: Renderer = render_release) -> View:
    emitted: list[Obj] = []
    releases: dict[str, Obj] = {}
    for resource in resources:
        type_ = str(resource.get("type", ""))
        inputs = as_map(resource.get("inputs"))
        if type_ == RELEASE_TYPE:
            releases[str(inputs.get("name") or resource.get("name"))] = inputs
        elif type_.startswith("kubernetes:") and "kind" in inputs:
            emitted.append(inputs)
    return View(emitted, releases, renderer)
