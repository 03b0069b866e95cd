"""`gpuplat preview` as a user runs it: invalid specs, JSON on failure, the tree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuplat.cli import main

ROOT = Path(__file__).resolve().parent.parent


def test_invalid_spec_prints_the_diagnostics_document_in_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    spec = tmp_path / "bad.yaml"
    spec.write_text("apiVersion: gpuplat/v1\nkind: Platform\n", encoding="utf-8")
    assert main(["preview", "--spec", str(spec), "--format", "json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["valid"] is False and {d["code"] for d in document["diagnostics"]} == {"GP102"}


def test_invalid_spec_in_text_goes_to_stderr_with_positions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    spec = tmp_path / "bad.yaml"
    spec.write_text("apiVersion: gpuplat/v1\nkind: Platfrom\n", encoding="utf-8")
    assert main(["preview", "--spec", str(spec)]) == 1
    err = capsys.readouterr().err
    assert "bad.yaml:2:7: error GP104 $.kind" in err


def test_text_tree_of_the_dev_stack(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    assert main(["preview", "--stack", "dev"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "+ pulumi:pulumi:Stack  gpu-platform-dev"
    assert "    + gpuplat:index:Cluster  atlas-cluster" in lines
    fsx = "aws:fsx/lustreFileSystem:LustreFileSystem  atlas-storage-hot  [protect, retainOnDelete"
    assert any(fsx in line for line in lines)
    assert lines[-1].endswith("components)")
