"""`--help` on the CLI and every command: a line per command and flag, defaults shown, one
exit-code contract; usage errors are 2 on every command, inside a project or not."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuplat.cli import build_parser
from gpuplat.commands import ABOUT, EXIT_CODES

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
# The positional argument a command requires, so a bad flag is what argparse reports.
POSITIONAL = {"explain": ("GP201",), "docs": ("spec",)}
# Commands that read only the installed package: they run anywhere.
ANYWHERE = {"init", "explain", "docs", "charts"}


def _commands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))  # pyright: ignore[reportPrivateUsage]
    return dict(sub.choices)  # pyright: ignore[reportUnknownArgumentType]


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuplat.cli", *args], cwd=cwd, env=ENV, capture_output=True, text=True, check=False
    )


def test_every_command_is_described_once() -> None:
    assert set(_commands()) == set(ABOUT)


def test_top_level_help_lists_every_command_and_the_exit_codes(tmp_path: Path) -> None:
    done = _run("--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for name, (summary, _) in ABOUT.items():
        assert f"    {name} " in done.stdout and summary in done.stdout, name
    assert EXIT_CODES in done.stdout


@pytest.mark.parametrize("name", sorted(ABOUT))
def test_every_option_has_help_and_shows_its_default(name: str) -> None:
    parser = _commands()[name]
    assert parser.description and ABOUT[name][1] in parser.description
    for action in parser._actions:  # pyright: ignore[reportPrivateUsage]
        if isinstance(action, argparse._HelpAction):  # pyright: ignore[reportPrivateUsage]
            continue
        label = "/".join(action.option_strings) or action.dest
        assert action.help, f"gpuplat {name} {label} has no help"
        if action.default not in (None, False, [], argparse.SUPPRESS):
            assert "default" in action.help and str(action.default) in action.help, f"gpuplat {name} {label}"


@pytest.mark.parametrize("name", sorted(ABOUT))
def test_help_exits_0_and_a_bad_flag_exits_2_outside_a_project(name: str, tmp_path: Path) -> None:
    done = _run(name, "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: gpuplat {name} ") and EXIT_CODES in " ".join(done.stdout.split())
    bad = _run(name, *POSITIONAL.get(name, ()), "--no-such-flag", cwd=tmp_path)
    assert (bad.returncode, bad.stdout) == (2, "")
    assert "unrecognized arguments: --no-such-flag" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.parametrize("name", sorted(set(ABOUT) - ANYWHERE))
def test_a_command_outside_a_project_is_a_usage_error(name: str, tmp_path: Path) -> None:
    """Every command that needs the project exits 2 the same way when there is none."""
    done = _run(name, *(["--stack", "dev"] if name != "schema" else []), cwd=tmp_path)
    assert done.returncode == 2, (name, done.stderr)
    assert "no Pulumi.yaml" in done.stderr and "gpuplat init" in done.stderr
