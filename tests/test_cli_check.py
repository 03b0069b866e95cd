"""`gpuplat check`: exit codes, the three output formats, and no pulumi import (DESIGN section 7)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpuplat.cli import main

ROOT = Path(__file__).resolve().parent.parent
INVALID_CASE = ROOT / "tests" / "cases" / "invalid" / "mig-profile-wrong-gpu"
DIAGNOSTIC_KEYS = {"code", "level", "message", "path", "file", "line", "col"}


def _check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_shipped_stacks_pass(stack: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    code, out, _ = _check(capsys, "--stack", stack)
    assert code == 0, out
    assert f"platform/platform.yaml + stacks/{stack}.yaml: valid (0 error(s)" in out


def test_invalid_spec_text_lines(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(INVALID_CASE)
    code, out, _ = _check(capsys, "--spec", "platform.yaml")
    assert code == 1
    line = out.splitlines()[0]
    assert re.fullmatch(
        r"platform\.yaml:22:35: error GP201 \$\.gpuNodePools\[1\]\.sharing\.profile: "
        r"all-1g\.5gb is not a MIG profile of H100-SXM-80GB \(valid: all-1g\.10gb, .*\)",
        line,
    ), line
    assert out.splitlines()[-1] == "platform.yaml: invalid (1 error(s), 0 warning(s))"


def test_text_line_format_for_every_diagnostic(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    code, out, _ = _check(capsys, "--stack", "prod")
    form = re.compile(r"^[^:]+:\d+:\d+: (error|warning) GP\d{3} \$\S*: .+$")
    body = out.splitlines()[:-1]
    assert code == 0 and body
    assert all(form.match(line) for line in body), body


def test_json_document_shape(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(INVALID_CASE)
    code, out, _ = _check(capsys, "--spec", "platform.yaml", "--format", "json")
    assert code == 1
    document = json.loads(out)
    assert set(document) == {"valid", "diagnostics"}
    assert document["valid"] is False
    [diagnostic] = document["diagnostics"]
    assert set(diagnostic) == DIAGNOSTIC_KEYS
    assert diagnostic == {
        "code": "GP201",
        "level": "error",
        "message": diagnostic["message"],
        "path": "$.gpuNodePools[1].sharing.profile",
        "file": "platform.yaml",
        "line": 22,
        "col": 35,
    }
    assert diagnostic["message"].startswith("all-1g.5gb is not a MIG profile of H100-SXM-80GB")


def test_json_valid_with_warnings(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    code, out, _ = _check(capsys, "--stack", "dev", "--format", "json")
    document = json.loads(out)
    assert code == 0 and document["valid"] is True
    assert document["diagnostics"], "dev carries warnings (time-slicing metrics, FSx rounding)"
    assert all(set(d) == DIAGNOSTIC_KEYS and d["level"] == "warning" for d in document["diagnostics"])


def test_github_annotations(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(INVALID_CASE)
    code, out, _ = _check(capsys, "--spec", "platform.yaml", "--format", "github")
    assert code == 1
    assert out.startswith("::error file=platform.yaml,line=22,col=35,title=GP201::$.gpuNodePools[1].sharing.profile: ")
    monkeypatch.chdir(ROOT)
    code, out, _ = _check(capsys, "--stack", "dev", "--format", "github")
    assert code == 0
    assert out and all(line.startswith("::warning file=") for line in out.splitlines())


def test_suppress_warning(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    _, out, _ = _check(capsys, "--stack", "dev", "--format", "json")
    assert {d["code"] for d in json.loads(out)["diagnostics"]} == {"GP300", "GP302", "GP352"}
    suppress = ("--suppress", "GP300", "--suppress", "GP302", "--suppress", "GP352")
    _, out, _ = _check(capsys, "--stack", "dev", "--format", "json", *suppress)
    assert json.loads(out)["diagnostics"] == []


def test_missing_spec_is_a_diagnostic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, _ = _check(capsys, "--spec", "nowhere.yaml", "--format", "json")
    assert code == 1
    [diagnostic] = json.loads(out)["diagnostics"]
    assert (diagnostic["code"], diagnostic["file"], diagnostic["line"]) == ("GP001", "nowhere.yaml", 1)


def test_missing_overlay_is_a_diagnostic(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    code, out, _ = _check(capsys, "--overlay", "stacks/nowhere.yaml")
    assert code == 1
    assert out.startswith("stacks/nowhere.yaml:1:1: error GP001 $: ")


@pytest.mark.parametrize(
    "argv",
    [[], ["check", "--format", "xml"], ["frobnicate"], ["check", "--stack"], ["check", "--no-such-flag"]],
    ids=["no-command", "bad-format", "bad-command", "missing-value", "unknown-flag"],
)
def test_bad_usage_exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert "usage:" in capsys.readouterr().err


def test_check_imports_no_pulumi() -> None:
    code = (
        "import sys; from gpuplat.cli import main; main(['check','--stack','dev']); "
        "assert not any(m == 'pulumi' or m.startswith('pulumi.') or m.startswith('pulumi_') for m in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_unknown_stack_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    code, _, err = _check(capsys, "--stack", "prdo")
    assert code == 2 and "unknown stack 'prdo'" in err and "prod" in err
