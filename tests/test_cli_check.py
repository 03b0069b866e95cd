"""`gpuplat check`: exit codes, the three output formats, and no pulumi import."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuplat.cli import main

ROOT = Path(__file__).resolve().parent.parent
INVALID_CASE = ROOT / "tests" / "cases" / "invalid" / "mig-profile-wrong-gpu"
WARNING_CASE = ROOT / "tests" / "cases" / "valid" / "warn-metrics-attribution"
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
    line = next(text for text in out.splitlines() if " GP201 " in text)  # warnings of the case come first
    assert re.fullmatch(
        r"platform\.yaml:22:35: error GP201 \$\.gpuNodePools\[1\]\.sharing\.profile: "
        r"all-1g\.5gb is not a MIG profile of H100-SXM-80GB \(valid: all-1g\.10gb, .*\)",
        line,
    ), line
    assert re.fullmatch(r"platform\.yaml: invalid \(1 error\(s\), \d+ warning\(s\)\)", out.splitlines()[-1])


def test_text_line_format_for_every_diagnostic(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    code, out, _ = _check(capsys, "--stack", "prod")
    form = re.compile(r"^[^:]+:\d+:\d+: (error|warning|acknowledged) GP\d{3} \$\S*: .+$")
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
    [diagnostic] = [d for d in document["diagnostics"] if d["level"] == "error"]
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
    monkeypatch.chdir(WARNING_CASE)
    code, out, _ = _check(capsys, "--spec", "platform.yaml", "--format", "json")
    document = json.loads(out)
    assert code == 0 and document["valid"] is True
    assert document["diagnostics"], "the case carries a warning (metrics of a shared GPU)"
    assert all(set(d) == DIAGNOSTIC_KEYS and d["level"] == "warning" for d in document["diagnostics"])


def test_github_annotations(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(INVALID_CASE)
    code, out, _ = _check(capsys, "--spec", "platform.yaml", "--format", "github")
    assert code == 1
    errors = [line for line in out.splitlines() if line.startswith("::error")]
    assert len(errors) == 1
    expected = "::error file=platform.yaml,line=22,col=35,title=GP201::$.gpuNodePools[1].sharing.profile: "
    assert errors[0].startswith(expected)
    monkeypatch.chdir(WARNING_CASE)
    code, out, _ = _check(capsys, "--spec", "platform.yaml", "--format", "github")
    assert code == 0
    assert out and all(line.startswith("::warning file=") for line in out.splitlines())


def test_suppress_warning(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(WARNING_CASE)
    _, out, _ = _check(capsys, "--spec", "platform.yaml", "--format", "json")
    assert {d["code"] for d in json.loads(out)["diagnostics"]} == {"GP302", "GP307", "GP352", "GP362"}
    suppress = ("--suppress", "GP302", "--suppress", "GP307", "--suppress", "GP352", "--suppress", "GP362")
    _, out, _ = _check(capsys, "--spec", "platform.yaml", "--format", "json", *suppress)
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


@pytest.mark.parametrize(
    ("stack", "words"),
    [
        ("../platform/platform", "letters, digits"),
        ("stacks/dev", "letters, digits"),
        ("Pulumi.dev", "did you mean --stack dev?"),
        (".dev", "does not start with '.'"),
        ("a" * 101, "1 to 100"),
    ],
)
def test_a_stack_is_a_name_not_a_path(
    stack: str, words: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    for command in ("check", "plan"):
        with pytest.raises(SystemExit) as exit_info:
            main([command, "--stack", stack])
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and "is not a stack name" in err and words in err, err


def test_resolve_sources_refuses_a_path_as_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuplat.compile import UnknownStackError, resolve_sources

    monkeypatch.chdir(ROOT)
    with pytest.raises(UnknownStackError):
        resolve_sources("../platform/platform")  # what __main__ (pulumi) reaches, without argparse


def test_lone_surrogates_are_escaped_in_every_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    spec = (ROOT / "tests" / "cases" / "valid" / "minimal" / "platform.yaml").read_text(encoding="utf-8")
    spec = spec.replace("instanceType: g6.xlarge", 'instanceType: "g6.\\uDFFF"')
    spec += 'tenants:\n  - {name: a, gpus: 1, pools: ["\\uDFFF"]}\n'
    Path("platform.yaml").write_text(spec, encoding="utf-8")
    for fmt in ("text", "github", "json"):
        code, out, err = _check(capsys, "--spec", "platform.yaml", "--format", fmt)
        assert code == 1 and not err, err
        out.encode("utf-8")  # what writing it to a UTF-8 stream needs
        assert "udfff" in out


def test_hostile_inputs_exit_1_with_a_position_within_a_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    files = {
        "deep.yaml": "[" * 10_000,
        "wide.yaml": "[" + "1," * 300_000 + "1]",
        "merge-self.yaml": "a: &s {<<: *s}\n",
        "omap.yaml": "x: !!omap [a: 1]\n",
        "huge-int.yaml": "a: " + "9" * 5000 + "\n",
    }
    for name, text in files.items():
        Path(name).write_text(text, encoding="utf-8")
    targets = [*files, "/dev/zero"]
    if hasattr(os, "mkfifo"):
        os.mkfifo("fifo.yaml")
        targets.append("fifo.yaml")
    for target in targets:
        start = time.perf_counter()
        code, out, err = _check(capsys, "--spec", target)
        assert code == 1 and not err, (target, err)
        assert re.match(rf"^{re.escape(target)}:\d+:\d+: error GP0\d\d ", out), (target, out)
        assert time.perf_counter() - start < 2.0, target


def test_numbers_near_float_range_are_check_errors_not_plan_crashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    spec = (ROOT / "platform" / "platform.yaml").read_text(encoding="utf-8")
    for old, new in [
        ("nodes: {min: 4, max: 32}", "nodes: {min: 4, max: 1" + "0" * 400 + "}"),
        ("capacityTiB: 200", "capacityTiB: 1.7e308"),
        ("expireAfterDays: 1095", "expireAfterDays: 99999999999"),
        ("window: 5m", "window: 99999999999999999999m"),
        ("retention: 15d", "retention: 999999999y"),
        ("gpus: 64", "gpus: 1" + "0" * 30),
    ]:
        assert old in spec
        Path("platform.yaml").write_text(spec.replace(old, new), encoding="utf-8")
        for command in ("check", "plan"):
            code = main([command, "--spec", "platform.yaml"])
            out, err = capsys.readouterr()
            assert code == 1 and "internal error" not in err and " GP104 " in out, (new, out, err)
