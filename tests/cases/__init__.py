"""Golden cases: a folder per spec, with the diagnostics it must produce.

`tests/cases/{valid,invalid}/<case>/` holds `platform.yaml`, optionally `overlay.yaml`, and
`expected.txt` with one `<file>:<line>:<col> <code> <message>` line per expected error or
warning (files relative to the case folder; a newline in a message is written as `\\n`), so
a changed position, code or message fails the case. Invalid cases always carry one; valid cases only when they
expect warnings. `python -m tests.cases.regen` rewrites them from the current output.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from gpuplat.compile import Compiled, Sources, compile_sources
from gpuplat.diagnostics import Diagnostic, Level

CASES = Path(__file__).resolve().parent
KINDS = ("valid", "invalid")
EXPECTED = "expected.txt"


def case_dirs(kind: str | None = None) -> list[Path]:
    kinds = [kind] if kind else list(KINDS)
    return sorted(d for k in kinds for d in (CASES / k).iterdir() if d.is_dir())


def case_id(case: Path) -> str:
    return f"{case.parent.name}/{case.name}"


def compile_here() -> Compiled:
    """Compile the case in the current directory, so diagnostics name files relative to it."""
    overlay = Path("overlay.yaml")
    sources = Sources(Path("platform.yaml"), overlay if overlay.exists() else None)
    return compile_sources(sources)


def line_of(d: Diagnostic) -> str:
    message = d.message.replace("\\", "\\\\").replace("\n", "\\n")
    return f"{d.file}:{d.line}:{d.col} {d.code} {message}"


def lines_of(diagnostics: Iterable[Diagnostic]) -> set[str]:
    return {line_of(d) for d in diagnostics if d.level in (Level.ERROR, Level.WARNING)}


def code_of(line: str) -> str:
    return line.split(" ", 2)[1]


def read_expected(case: Path) -> set[str]:
    path = case / EXPECTED
    if not path.exists():
        return set()
    return {line.rstrip("\n") for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}


def sort_lines(lines: Iterable[str]) -> list[str]:
    def key(line: str) -> tuple[str, int, int, str]:
        where, rest = line.split(" ", 1)
        file, number, col = where.rsplit(":", 2)
        return file, int(number), int(col), rest

    return sorted(lines, key=key)
