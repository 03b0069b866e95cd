"""README.md and docs/ cannot go stale: every `$ gpuplat` example is run and its output compared,
every command and flag they cite exists, every example spec validates, every link resolves
(tests/doc_examples.py says how an example is written)."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpuplat.cli import build_parser
from gpuplat.compile import Sources, compile_sources
from gpuplat.diagnostics import Level
from tests.doc_examples import PAGES, ROOT, Block, all_blocks, citations, commands, expected_pattern, normalise, prose

ENV = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "COLUMNS": "100"}
ENV.pop("GPUPLAT_CHARTS", None)  # the examples show what a fresh clone prints
BLOCKS = all_blocks()
SESSIONS = [b for b in BLOCKS if commands(b)]
SPECS = [b for b in BLOCKS if b.lang == "yaml" and any(line.startswith("apiVersion: gpuplat/v1") for line in b.lines)]


def _where(block: Block) -> str:
    return block.where


def test_the_readme_is_a_first_read() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 250
    for page in ("docs/cli.md", "docs/spec-guide.md", "docs/catalog.md", "docs/deploying.md", "docs/rules.md"):
        assert f"]({page})" in readme, f"README does not lead to {page}"


def test_there_are_examples_to_run() -> None:
    readme = [b for b in SESSIONS if b.page.name == "README.md"]
    run = {c.argv[1] for b in readme for c in commands(b)}
    assert {"init", "check", "plan", "preview", "verify", "policy", "graph"} <= run, run


@pytest.mark.parametrize("block", SESSIONS, ids=_where)
def test_session_prints_what_the_page_shows(block: Block, tmp_path: Path) -> None:
    steps = commands(block)
    cwd = tmp_path if steps[0].argv[:2] == ["gpuplat", "init"] else ROOT
    for step in steps:
        assert step.argv[:1] == ["gpuplat"], f"{block.where}: only gpuplat commands are run: {step.argv}"
        cwd = cwd / step.cd if step.cd else cwd
        done = subprocess.run(
            [sys.executable, "-m", "gpuplat.cli", *step.argv[1:]],
            cwd=cwd,
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )
        shown = f"{block.page.relative_to(ROOT)}:{step.line}: $ {' '.join(step.argv)}"
        out = normalise(done.stdout)
        assert done.returncode == step.exit_code, f"{shown}: exit {done.returncode}\n{out}"
        assert expected_pattern(step.expected).fullmatch(out), (
            f"{shown}: the page shows\n" + "\n".join(step.expected) + f"\n--- the command prints\n{out}"
        )


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    """A command's flags, its subcommands' too (`gpuplat charts pull --into`)."""
    found = {o for a in parser._actions for o in a.option_strings}  # pyright: ignore[reportPrivateUsage]
    for action in parser._actions:  # pyright: ignore[reportPrivateUsage]
        if isinstance(action, argparse._SubParsersAction):  # pyright: ignore[reportPrivateUsage]
            for nested in action.choices.values():  # pyright: ignore[reportUnknownVariableType]
                found |= _flags(nested)  # pyright: ignore[reportUnknownArgumentType]
    return found


def _options() -> dict[str, set[str]]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # pyright: ignore[reportPrivateUsage]
    return {name: _flags(p) for name, p in sub.choices.items()}  # pyright: ignore[reportUnknownVariableType]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_cited_command_and_flag_exists(page: Path) -> None:
    options = _options()
    cited = citations(None, prose(page))
    cited += [c for b in BLOCKS if b.page == page for c in citations(b, "")]
    wrong = sorted(
        {f"gpuplat {cmd}" for cmd, _ in cited if cmd not in options}
        | {
            f"gpuplat {cmd} {flag}"
            for cmd, flags in cited
            if cmd in options
            for flag in flags
            if flag not in options[cmd]
        }
    )
    assert wrong == [], f"{page.relative_to(ROOT)} cites what the CLI does not have"


@pytest.mark.parametrize("block", SPECS, ids=_where)
def test_example_spec_validates(block: Block, tmp_path: Path) -> None:
    spec = tmp_path / "platform" / "platform.yaml"
    spec.parent.mkdir()
    spec.write_text("\n".join(block.lines) + "\n", encoding="utf-8")
    compiled = compile_sources(Sources(spec, None))
    errors = [d for d in compiled.diagnostics if d.level is Level.ERROR]
    assert errors == [], block.where


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_resolve(page: Path) -> None:
    text = re.sub(r"`[^`\n]*`", "", prose(page))  # a regex in code is not a link
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    missing = [t for t in targets if "://" not in t and not (page.parent / t).exists()]
    assert missing == [], page.name


def test_the_harness_tells_a_stale_example() -> None:
    """`...` abridges, nothing else does: a changed number or a missing line fails."""
    shown = ["a", "...", "c 1 ... 3", "..."]
    assert expected_pattern(shown).fullmatch("a\nb\nb\nc 1 2 3\nd\n")
    assert expected_pattern(shown).fullmatch("a\nc 1 x 3\n")
    assert not expected_pattern(shown).fullmatch("a\nc 1 2 4\n")
    assert not expected_pattern(["a", "b"]).fullmatch("a\nb\nc\n")
    assert not expected_pattern(["a", "b"]).fullmatch("a\n")
    block = Block(
        ROOT / "README.md", 1, "", ("$ gpuplat check --stack dev  # exits 1", "out", "$ cd x && gpuplat plan")
    )
    first, second = commands(block)
    assert (first.argv, first.exit_code, first.expected) == (["gpuplat", "check", "--stack", "dev"], 1, ["out"])
    assert (second.cd, second.argv) == ("x", ["gpuplat", "plan"])
    assert citations(None, "run `gpuplat check --nope` or `gpuplat frob`") == [("check", ["--nope"]), ("frob", [])]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_table_cells_stay_readable(page: Path) -> None:
    """A cell of a thousand characters is a paragraph in the wrong place."""
    long = [
        (n, len(cell))
        for n, line in enumerate(prose(page).splitlines(), 1)
        if line.startswith("|")
        for cell in line.split("|")
        if len(cell) > 750
    ]
    assert long == [], f"{page.name}: move these cells' text into a paragraph"
