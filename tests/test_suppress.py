"""`--suppress`: several codes at once, counted in the verdict, and never a silent no-op."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplat.cli import main

ROOT = Path(__file__).resolve().parent.parent
WARNING_CASE = ROOT / "tests" / "cases" / "valid" / "warn-metrics-attribution"


def _check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["check", "--spec", "platform.yaml", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _codes(out: str) -> set[str]:
    return {line.split()[2] for line in out.splitlines() if " warning GP" in line}


def test_several_codes_comma_separated_or_repeated(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(WARNING_CASE)
    _, everything, _ = _check(capsys)
    assert _codes(everything) == {"GP302", "GP307", "GP352", "GP362"}
    code, out, _ = _check(capsys, "--suppress", "GP307,gp302", "--suppress", "GP352")
    assert code == 0
    assert _codes(out) == {"GP362"}
    assert out.splitlines()[-1] == "platform.yaml: valid (0 error(s), 1 warning(s), 3 suppressed (GP302, GP307, GP352))"


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("GP999", "--suppress GP999: no warning has this code"),
        ("GP201", "--suppress GP201: GP201 is an error, and only warnings can be suppressed"),
        ("GP3000", "did you mean GP300?"),
    ],
)
@pytest.mark.parametrize("command", ["check", "plan", "preview", "policy", "verify", "graph"])
def test_a_code_that_names_no_warning_is_a_usage_error(
    command: str, code: str, message: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    assert main([command, "--suppress", f"GP302,{code}"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and message in err
