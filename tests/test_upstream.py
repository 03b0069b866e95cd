"""Upstream data from anywhere (e2e/upstream.py): the data directory beside the clone, else the Go
modules of the pinned releases through the module proxy (checked against go.sum), else a skip
with its reason, never a failure."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from e2e import upstream
from e2e.tools.build import TOOLCHAIN, go_env
from gpuplat.catalog import CHARTS

ROOT = Path(__file__).resolve().parents[1]


def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """Neither the data directory nor the module proxy (nor a module cache holding the modules)."""
    env = {"GPUPLAT_UPSTREAM": str(tmp_path / "no-data"), "GOPROXY": "off", "GOFLAGS": "-mod=mod -modcacherw",
           "GOMODCACHE": str(tmp_path / "no-modules")}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(upstream, "_FOUND", {})
    return env


def test_the_modules_are_the_releases_the_catalog_pins() -> None:
    releases = {
        upstream.KUEUE: f"v{CHARTS['kueue'].version}",
        upstream.KARPENTER: f"v{CHARTS['karpenter'].version}",
        upstream.KEDA: f"v{CHARTS['keda'].app_version}",
        upstream.PROMETHEUS_OPERATOR: CHARTS["kube-prometheus-stack"].app_version,
        upstream.SRIOV: CHARTS["sriov-network-operator"].app_version,
    }
    assert upstream.required() == releases
    assert all(f"{module}@{version}" in upstream.sums() for module, version in releases.items())
    assert {module for module, _ in upstream.IN_MODULES.values()} == set(releases)


def test_every_chart_and_crd_directory_has_a_source_or_a_reason() -> None:
    known = set(upstream.IN_MODULES) | set(upstream.NOT_IN_MODULES)
    assert not set(upstream.IN_MODULES) & set(upstream.NOT_IN_MODULES)
    assert {f"charts/{key}" for key in CHARTS} <= known
    assert {c.split("/")[0] for c in upstream.CRDS} <= known
    for crd in upstream.CRDS:
        name = crd.split("/")[1]
        assert name.count("_") == 1 and name.endswith(".yaml"), crd  # <group>_<plural>.yaml: looked up by group


def test_the_data_directory_holds_exactly_the_crds_the_table_names() -> None:
    root = upstream.data_dir()
    present = sorted(p.relative_to(root).as_posix() for p in root.glob("*/*.yaml") if p.parent.name != "charts")
    if not present:
        pytest.skip(f"no upstream data directory at {root}")
    assert present == sorted(upstream.CRDS)
    charts = {p.name for p in (root / "charts").iterdir() if p.is_dir()}
    assert {f"charts/{c}" for c in charts} <= set(upstream.IN_MODULES) | set(upstream.NOT_IN_MODULES)


def test_without_the_data_directory_files_come_from_the_pinned_modules(monkeypatch: pytest.MonkeyPatch,
                                                                        tmp_path: Path) -> None:
    monkeypatch.setenv("GPUPLAT_UPSTREAM", str(tmp_path / "no-data"))
    monkeypatch.setattr(upstream, "_FOUND", {})
    served = [c for c in upstream.CRDS if c.split("/")[0] in upstream.IN_MODULES]
    for crd in served:  # a module this machine cannot get skips the test (tests/conftest.py)
        path = upstream.resolve(crd)
        module, _ = upstream.IN_MODULES[crd.split("/")[0]]
        assert f"@{upstream.required()[module]}" in str(path), path
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        group, plural = Path(crd).stem.split("_")
        assert (document["kind"], document["metadata"]["name"]) == ("CustomResourceDefinition", f"{plural}.{group}")
    for key in ("kueue", "karpenter", "karpenter-crd", "sriov-network-operator"):
        values = upstream.resolve(f"charts/{key}/values.yaml")
        assert yaml.safe_load(values.read_text(encoding="utf-8")) is not None, key
    with pytest.raises(upstream.UpstreamMissing, match=r"github.com/Project-HAMi/HAMi is not served"):
        upstream.resolve("charts/hami/values.yaml")
    assert len(upstream.crd_files(group="kueue.x-k8s.io")) == 11


def _data_directory_of_release(tmp_path: Path, chart: str, app_version: str) -> Path:
    """A data directory holding one CRD and the chart that says which release it is of."""
    root = tmp_path / "data"
    (root / "charts" / chart).mkdir(parents=True)
    (root / "charts" / chart / "Chart.yaml").write_text(f"name: {chart}\nappVersion: {app_version}\n")
    (root / "kueue").mkdir()
    (root / "kueue" / "kueue.x-k8s.io_cohorts.yaml").write_text("kind: CustomResourceDefinition\n")
    return root


def test_the_data_directory_is_read_in_place_when_its_chart_says_the_pinned_release(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _offline(monkeypatch, tmp_path)
    root = _data_directory_of_release(tmp_path, "kueue", f'"{upstream.required()[upstream.KUEUE]}"')
    monkeypatch.setenv("GPUPLAT_UPSTREAM", str(root))
    assert upstream.resolve("kueue/kueue.x-k8s.io_cohorts.yaml") == root / "kueue" / "kueue.x-k8s.io_cohorts.yaml"


def test_a_data_directory_of_another_release_is_not_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(upstream, "_FOUND", {})
    root = _data_directory_of_release(tmp_path, "kueue", "v0.1.0")
    monkeypatch.setenv("GPUPLAT_UPSTREAM", str(root))
    path = upstream.resolve("kueue/kueue.x-k8s.io_cohorts.yaml")  # skipped where the module cannot be had
    assert f"@{upstream.required()[upstream.KUEUE]}" in str(path), path
    _offline(monkeypatch, tmp_path)
    monkeypatch.setenv("GPUPLAT_UPSTREAM", str(root))
    with pytest.raises(upstream.UpstreamMissing) as missing:
        upstream.resolve("kueue/kueue.x-k8s.io_cohorts.yaml")
    assert str(missing.value).startswith(
        f"{root} holds kueue v0.1.0, not the pinned {upstream.required()[upstream.KUEUE]}, and sigs.k8s.io/kueue ")


def test_a_module_whose_hash_is_not_go_sum_s_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GPUPLAT_UPSTREAM", str(tmp_path / "no-data"))
    monkeypatch.setattr(upstream, "_FOUND", {})
    upstream.module_dir(upstream.KUEUE)  # reachable here (else skipped): then only the hash decides
    pins = tmp_path / "pins"
    shutil.copytree(upstream.GO_MODULE, pins)
    pinned = upstream.sums()[f"{upstream.KUEUE}@{upstream.required()[upstream.KUEUE]}"]
    forged = pinned[:-5] + ("AAAA=" if not pinned.endswith("AAAA=") else "BBBB=")
    (pins / "go.sum").write_text((pins / "go.sum").read_text().replace(pinned, forged))
    monkeypatch.setattr(upstream, "GO_MODULE", pins)
    monkeypatch.setattr(upstream, "_FOUND", {})
    with pytest.raises(upstream.UpstreamMissing, match="checksum mismatch"):
        upstream.resolve("kueue/kueue.x-k8s.io_cohorts.yaml")


def test_with_neither_a_file_is_missing_with_a_one_line_reason(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _offline(monkeypatch, tmp_path)
    with pytest.raises(upstream.UpstreamMissing) as missing:
        upstream.resolve("kueue/kueue.x-k8s.io_cohorts.yaml")
    reason = str(missing.value)
    assert reason.startswith(f"sigs.k8s.io/kueue {upstream.required()[upstream.KUEUE]} could not be downloaded: ")
    assert "\n" not in reason
    if go_env(upstream.GO_MODULE)["GOTOOLCHAIN"] == "local":
        pinned = f"sigs.k8s.io/kueue@{upstream.required()[upstream.KUEUE]}"
        assert reason.endswith(f"{pinned}: module lookup disabled by GOPROXY=off")
    else:  # the pins need a newer Go than the machine's (Karpenter 1.15): that toolchain is missing first
        assert f"download {TOOLCHAIN} for " in reason and reason.endswith("toolchain not available")
    with pytest.raises(LookupError, match="add it to the table"):  # a path of no project: a bug, not a skip
        upstream.resolve("kueu/kueue.x-k8s.io_cohorts.yaml")


def test_a_test_without_upstream_data_is_skipped_saying_why(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env = {**os.environ, **_offline(monkeypatch, tmp_path)}
    test = "tests/test_k8s_services.py::test_kueue_configuration_keeps_the_chart_default"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", test], cwd=ROOT,
                          env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SKIPPED [1] " in done.stdout
    assert "upstream data: sigs.k8s.io/kueue v0.19.2 could not be downloaded: " in done.stdout
