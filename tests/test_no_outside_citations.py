"""Code cites the repository (docs/, README, the catalog's upstream URLs), never a file a user of
the repository does not have: the team's design notes or a shared upstream mirror beside it.
The one place that names where the upstream data sits is the tests' helper that reads it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = re.compile(r"DESIGN|CHARTS\.md|FORMATS\.md|shared/upstream")
FOLDERS = ("gpuplat", "components", "policy", "tests", "bench", "docs")
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".j2", ".toml"}
SKIP = ("tests/snapshots/",)
# Where the tests read upstream CRDs and values from (its default location, named once).
READS_UPSTREAM = {"tests/upstream.py": re.compile(r"DESIGN|CHARTS\.md|FORMATS\.md")}


def offending_lines(root: Path) -> list[str]:
    hits: list[str] = []
    files = [root / "README.md", root / "__main__.py", root / "pyproject.toml", root / "Makefile"]
    for folder in FOLDERS:
        files += [p for p in (root / folder).rglob("*") if p.is_file() and p.suffix in SUFFIXES]
    for path in files:
        rel = path.relative_to(root).as_posix()
        if not path.is_file() or rel.startswith(SKIP) or path == Path(__file__).resolve():
            continue
        forbidden = READS_UPSTREAM.get(rel, FORBIDDEN)
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if forbidden.search(line):
                hits.append(f"{rel}:{number}: {line.strip()}")
    return hits


def test_no_source_cites_a_file_outside_the_repository() -> None:
    assert offending_lines(ROOT) == []


def test_the_check_finds_a_citation(tmp_path: Path) -> None:
    (tmp_path / "gpuplat").mkdir()
    (tmp_path / "gpuplat" / "x.py").write_text('"""Rules (DESIGN section 2)."""\n')
    assert offending_lines(tmp_path) == ["gpuplat/x.py:1: \"\"\"Rules (DESIGN section 2).\"\"\""]
