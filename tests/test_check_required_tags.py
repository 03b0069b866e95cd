"""`check` applies the organisation policy's required tags, so a spec `check` accepts does not
then fail `gpuplat policy` with one violation per resource."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuplat.cli import main

ROOT = Path(__file__).resolve().parent.parent


def _without_cost_center(tmp_path: Path) -> Path:
    spec = tmp_path / "platform.yaml"
    text = (ROOT / "platform" / "platform.yaml").read_text()
    spec.write_text(text.replace('tags: {team: ml-infra, cost-center: "4711"}', "tags: {team: ml-infra}"))
    return spec


def test_check_and_policy_agree_on_a_missing_tag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = str(_without_cost_center(tmp_path))
    monkeypatch.chdir(ROOT)
    assert main(["check", "--stack", "dev", "--spec", spec, "--format", "json"]) == 1
    [error] = [d for d in json.loads(capsys.readouterr().out)["diagnostics"] if d["level"] == "error"]
    assert (error["code"], error["path"], error["line"]) == ("GP022", "$.metadata.tags", 6)
    assert "requires the tag(s) cost-center on every AWS resource" in error["message"]
    assert main(["plan", "--stack", "dev", "--spec", spec]) == 1


def test_the_stacks_default_tags_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _without_cost_center(tmp_path)
    (tmp_path / "policy").mkdir()
    (tmp_path / "policy" / "config.json").write_text(
        '{"aws-required-tags": {"requiredTagKeys": ["team", "environment"]}}'
    )
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "Pulumi.dev.yaml").write_text("config:\n  aws:defaultTags:\n    tags: {environment: dev}\n")
    (tmp_path / "Pulumi.yaml").write_text("name: gpu-platform\nruntime: python\n")
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--spec", str(spec), "--stack", "dev"]) == 0
    assert "GP022" not in capsys.readouterr().out
    assert main(["check", "--spec", str(spec), "--stack", "prod"]) == 1  # prod has no default tags here
    assert "GP022" in capsys.readouterr().out
