"""The stack setting `gpuplat:localCharts`: every Helm release installs from DIR/<chart key>
(no repository), and verify follows the same releases rendered from that directory."""

from __future__ import annotations

from pathlib import Path

from gpuplat.catalog import CHARTS
from gpuplat.model import Platform
from gpuplat.plan import Plan
from gpuplat.preview import RecordedResource, record_program
from gpuplat.verify import render_text, verify
from tests.support_k8s import PROJECT, RELEASE, compile_kubernetes_example
from tests.support_verify import FIXTURE_CHARTS


def _record(model: Platform, plan: Plan, config: dict[str, str]) -> list[RecordedResource]:
    def program() -> None:
        import pulumi_kubernetes as k8s

        from components.kubernetes import build_kubernetes_side

        build_kubernetes_side(None, model.metadata.name, model, plan, k8s.Provider("k8s"), storage=None)

    return record_program(program, project=PROJECT, stack="dev", config=config)

def test_releases_install_from_the_local_chart_directory(tmp_path: Path) -> None:
    model, plan = compile_kubernetes_example()
    local = [r for r in _record(model, plan, {"gpuplat:localCharts": str(tmp_path)}) if r.type == RELEASE]
    remote = {r.name: r for r in _record(model, plan, {}) if r.type == RELEASE}
    assert local and {r.name for r in local} == set(remote)
    for release in local:
        key = str(release.inputs["name"])
        assert release.inputs["chart"] == str(tmp_path / key)
        assert "repositoryOpts" not in release.inputs
        assert release.inputs["version"] == CHARTS[key].version
        assert remote[release.name].inputs["chart"] == CHARTS[key].release_chart

def test_a_relative_setting_is_made_absolute() -> None:
    model, plan = compile_kubernetes_example()
    (release, *_) = [r for r in _record(model, plan, {"gpuplat:localCharts": "charts"}) if r.type == RELEASE]
    assert release.inputs["chart"] == str(Path.cwd() / "charts" / str(release.inputs["name"]))

def test_verify_renders_the_local_chart_releases_from_the_same_directory() -> None:
    assert FIXTURE_CHARTS.root is not None
    model, plan = compile_kubernetes_example()
    resources = [r.to_json() for r in _record(model, plan, {"gpuplat:localCharts": str(FIXTURE_CHARTS.root)})]
    journeys = verify(model, plan, resources, FIXTURE_CHARTS)
    assert journeys and all(j.ok and not j.unchecked for j in journeys), render_text(journeys)
