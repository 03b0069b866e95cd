"""The copy of the spec's JSON Schema a project keeps for editors, and whether it is current.

Editors with the YAML language server (VS Code's YAML extension, and others) check and complete
a file against the schema its `# yaml-language-server: $schema=PATH` line names. `gpuplat init`
writes `schemas/platform.schema.json` and that line at the top of `platform/platform.yaml`; the
copy is the installed gpuplat's schema, so after an upgrade it is another version's:
`gpuplat schema` rewrites it, and `gpuplat check` warns (GP023) while it differs. A line naming
a URL is the editor's business and not checked.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from gpuplat import __version__
from gpuplat.diagnostics import Diagnostic, Level
from gpuplat.vocabulary import SCHEMA_PATH

CODE = "GP023"
DEFAULT = Path("schemas") / "platform.schema.json"
_HEAD_BYTES = 16 * 1024  # the leading comments, where the modeline is looked for
_MODELINE = re.compile(r"^#\s*yaml-language-server:\s*\$schema=(\S+)")


@dataclass(frozen=True)
class Named:
    """The schema file a spec's modeline names: as written, resolved, and where it is written."""

    written: str
    path: Path
    line: int
    col: int



def named(spec: Path) -> Named | None:
    """The local schema file the spec's leading comments name; None for none or a URL."""
    try:
        if not spec.is_file():  # a pipe or device (/dev/zero) is the loader's to report, never read here
            return None
        with spec.open("rb") as handle:
            head = handle.read(_HEAD_BYTES)
    except OSError:
        return None
    lines = head.decode("utf-8", errors="replace").splitlines()
    for number, line in enumerate(lines, 1):
        if not line.startswith("#"):
            return None  # the modeline is read among the comments the file starts with
        match = _MODELINE.match(line)
        if match is None:
            continue
        written = match[1]
        if "://" in written:
            return None
        return Named(written, Path(os.path.normpath(spec.parent / written)), number, match.start(1) + 1)
    return None


def schema_text() -> str:
    return SCHEMA_PATH.read_text(encoding="utf-8")


def _same(path: Path) -> bool:
    """Whether the regular file at `path` is this gpuplat's schema (sizes first: nothing large is read)."""
    expected = schema_text().encode("utf-8")
    try:
        return path.is_file() and path.stat().st_size == len(expected) and path.read_bytes() == expected
    except OSError:
        return False


def stale(spec: Path) -> Diagnostic | None:
    """GP023 when the schema file the spec names is missing or not this gpuplat's schema."""
    found = named(spec)
    if found is None:
        return None
    if not found.path.is_file():
        message = (
            f"the editor schema {found.written} does not exist, so editors check nothing; `gpuplat schema` writes it"
        )
    elif not _same(found.path):
        message = (
            f"the editor schema {found.written} is not the installed gpuplat {__version__}'s, so editors check the "
            "spec against another version's fields; `gpuplat schema` rewrites it"
        )
    else:
        return None
    return Diagnostic(CODE, Level.WARNING, message, "$", str(spec), found.line, found.col)


class NotOurs(Exception):
    """The file the spec's editor line names is not gpuplat's to write."""


def _check_ours(target: Path) -> None:
    if not target.resolve().is_relative_to(Path.cwd().resolve()):
        raise NotOurs(f"{target} is outside the project")
    if target.is_file():
        try:
            found = json.loads(target.read_bytes()[: 4 * 1024 * 1024])
        except (ValueError, UnicodeDecodeError):
            return  # not JSON: no schema of anyone's, a copy that was cut short
        their = cast("dict[str, Any]", found).get("$id") if isinstance(found, dict) else None
        ours = cast("dict[str, Any]", json.loads(schema_text())).get("$id")
        if their is not None and their != ours:
            raise NotOurs(f"{target} is another schema ($id {their}), not gpuplat's ({ours})")


def write(spec: Path) -> tuple[Path, bool]:
    """Write this gpuplat's schema where the spec's modeline points (else schemas/ of the project,
    which commands run from); the path, and whether it changed. NotOurs when that file belongs
    to something else: outside the project, or another schema."""
    found = named(spec)
    target = found.path if found is not None else DEFAULT
    if _same(target):
        return target, False
    _check_ours(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(schema_text(), encoding="utf-8")
    return target, True
