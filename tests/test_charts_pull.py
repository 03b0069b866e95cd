"""`gpuplat charts pull`: the catalog's charts at their pinned versions, from repositories of our own
on loopback (an HTTP chart repository and an OCI registry, tests/support_charts.py), into the chart
cache verify renders from. The charts are tiny ones the tests write, or the project's stand-ins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gpuplat.catalog import CHARTS
from gpuplat.cli import main
from tests.support_charts import http_repository, oci_registry, package, write_chart

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "charts"


def _meta(directory: Path) -> dict[str, str]:
    return yaml.safe_load((directory / "Chart.yaml").read_text(encoding="utf-8"))


def test_each_chart_is_pulled_at_its_pinned_version_into_cache_key_version(tmp_path: Path, capsys) -> None:
    hami, operator = CHARTS["hami"], CHARTS["gpu-operator"]
    archives = tmp_path / "repo"
    for chart, versions in ((hami, (hami.version, "99.0.0")), (operator, (operator.version,))):
        for version in versions:  # a newer hami beside the pinned one: the pin wins, not the newest
            package(write_chart(tmp_path / "src" / version, chart.chart, version, f"{chart.key} {version}"), archives)
    cache = tmp_path / "cache"
    with http_repository(archives) as (url, requests):
        assert main(["charts", "pull", "hami", "gpu-operator", "--repo", url, "--cache", str(cache)]) == 0
        out = capsys.readouterr().out
        assert f"pulled  hami {hami.version} from {url} (chart hami)\n" in out
        assert f"2 of 2 chart(s) in {cache} (2 pulled, 0 already there); gpuplat verify renders from there\n" in out
        for chart in (hami, operator):
            directory = cache / chart.key / chart.version
            assert _meta(directory)["version"] == chart.version
            assert (directory / "values.yaml").read_text() == f"note: {chart.key} {chart.version}\n"
        assert sorted(p.name for p in cache.iterdir()) == ["gpu-operator", "hami"]  # no scratch left behind
        asked = len(requests)
        assert main(["charts", "pull", "hami", "--repo", url, "--cache", str(cache)]) == 0
        assert f"cached  hami {hami.version}\n" in capsys.readouterr().out
        assert len(requests) == asked  # in the cache: the repository is not asked again


def test_a_chart_or_version_the_repository_lacks_is_an_error_naming_it(tmp_path: Path, capsys) -> None:
    hami = CHARTS["hami"]
    archives = tmp_path / "repo"
    package(write_chart(tmp_path / "src", hami.chart, "2.9.0"), archives)  # not the pinned version
    cache = tmp_path / "cache"
    with http_repository(archives) as (url, _):
        code = main(["charts", "pull", "hami", "keda", "--repo", url, "--cache", str(cache)])
    err = capsys.readouterr().err
    assert code == 2
    assert (f'gpuplat charts pull: error: hami {hami.version} from {url} (chart hami): chart "hami" version '
            f'"{hami.version}" not found in {url} repository\n') in err
    assert f'error: keda {CHARTS["keda"].version} from {url} (chart keda): chart "keda" version' in err
    assert not (cache / "hami").exists()


def test_a_repository_giving_another_version_than_it_lists_is_refused(tmp_path: Path, capsys) -> None:
    hami = CHARTS["hami"]
    archives = tmp_path / "repo"
    package(write_chart(tmp_path / "src", hami.chart, "2.9.0"), archives)
    with http_repository(archives) as (url, _):
        index = archives / "index.yaml"  # the index claims the pinned version for the 2.9.0 archive
        index.write_text(index.read_text().replace("version: 2.9.0", f"version: {hami.version}"))
        code = main(["charts", "pull", "hami", "--repo", url, "--cache", str(tmp_path / "cache")])
    assert code == 1
    refusal = f"refused: hami: {url} (chart hami) gave chart hami 2.9.0, not hami {hami.version}; nothing was cached"
    assert refusal in capsys.readouterr().err
    assert not (tmp_path / "cache" / "hami").exists()


def test_oci_charts_are_pulled_from_a_registry(tmp_path: Path, capsys) -> None:
    kueue = CHARTS["kueue"]
    assert kueue.is_oci
    archive = package(write_chart(tmp_path / "src", kueue.chart, kueue.version), tmp_path / "archives")
    with oci_registry([archive]) as (base, requests):
        args = ["charts", "pull", "kueue", "--repo", base, "--plain-http", "--cache", str(tmp_path / "cache")]
        assert main([*args, "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    (row,) = document["charts"]
    assert (row["status"], row["from"], row["version"]) == ("pulled", f"{base}/kueue", kueue.version)
    assert _meta(Path(row["path"]))["version"] == kueue.version
    assert any(r.endswith(f"/manifests/{kueue.version}") for r in requests)


def test_into_fills_a_local_charts_directory_and_never_replaces_another_chart(tmp_path: Path, capsys) -> None:
    hami = CHARTS["hami"]
    archives = tmp_path / "repo"
    package(write_chart(tmp_path / "src", hami.chart, hami.version), archives)
    into = tmp_path / "charts"
    with http_repository(archives) as (url, _):
        args = ["charts", "pull", "hami", "--repo", url, "--cache", str(tmp_path / "cache"), "--into", str(into)]
        assert main(args) == 0
        assert _meta(into / "hami")["version"] == hami.version
        assert main(args) == 0  # there already: left as it is
        (into / "hami" / "Chart.yaml").write_text("apiVersion: v2\nname: hami\nversion: 2.9.0\n")
        capsys.readouterr()
        assert main(args) == 1
    assert f"{into / 'hami'} holds version 2.9.0, not hami {hami.version}" in capsys.readouterr().err
    assert _meta(into / "hami")["version"] == "2.9.0"  # the user's file is untouched


def test_usage_errors(tmp_path: Path, capsys) -> None:
    assert main(["charts", "pull", "no-such-chart", "--cache", str(tmp_path)]) == 2
    assert "no chart no-such-chart in the catalog (charts: aws-efa-k8s-device-plugin, " in capsys.readouterr().err
    assert main(["charts"]) == 2
    assert "name a subcommand: pull" in capsys.readouterr().err


def test_unreachable_repository_is_an_io_error(tmp_path: Path, capsys) -> None:
    code = main(["charts", "pull", "hami", "--repo", "http://127.0.0.1:9", "--cache", str(tmp_path)])
    assert code == 2
    assert "error: hami 2.10.0 from http://127.0.0.1:9 (chart hami): " in capsys.readouterr().err


def test_verify_renders_from_the_pulled_charts(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    # The project's stand-ins (tests/fixtures/charts) served as a repository: after one pull, the
    # steps that read the GPU Operator's and Karpenter's charts are checked, with no flag or setting.
    archives = tmp_path / "repo"
    for key in ("gpu-operator", "karpenter"):
        package(FIXTURES / key, archives)
    monkeypatch.setenv("GPUPLAT_CHART_CACHE", str(tmp_path / "cache"))
    assert main(["verify", "--stack", "dev"]) == 0
    before = capsys.readouterr().out
    assert f"device-plugin: chart gpu-operator {CHARTS['gpu-operator'].version} is not pulled " \
           "(`gpuplat charts pull` fetches it)\n" in before
    with http_repository(archives) as (url, _):
        monkeypatch.setenv("GPUPLAT_CHART_REPO", url)
        assert main(["charts", "pull", "gpu-operator", "karpenter"]) == 0
    capsys.readouterr()
    assert main(["verify", "--stack", "dev"]) == 0
    after = capsys.readouterr().out
    assert "not checked" not in after and "    ok   device-plugin: " in after
