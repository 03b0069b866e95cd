"""The one Diagnostic record every stage produces, and its renderers (text, JSON, GitHub)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any


class Level(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, order=True)
class Origin:
    """Where a value was written: file, 1-based line and column."""

    file: str
    line: int
    col: int


@dataclass(frozen=True)
class Diagnostic:
    code: str
    level: Level
    message: str
    path: str  # JSON path, e.g. $.gpuNodePools[1].sharing.profile
    file: str
    line: int
    col: int

    @property
    def is_error(self) -> bool:
        return self.level is Level.ERROR

    def to_json(self) -> dict[str, Any]:
        record = asdict(self)
        record["level"] = str(self.level)
        return record


_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def json_path(parts: Sequence[str | int]) -> str:
    """`$.a[0].b`; keys that are not plain names are quoted: `$.labels["karpenter.sh/x"]`."""
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}"
        else:
            out += f"[{json.dumps(part)}]"
    return out


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    return any(d.is_error for d in diagnostics)


def sort_key(d: Diagnostic) -> tuple[str, int, int, str, str]:
    return (d.file, d.line, d.col, d.code, d.message)


def printable(text: str) -> str:
    """`text` with lone surrogates written as `\\udfff` escapes. YAML's "\\uDFFF" escape and
    undecodable bytes in file names (Python's surrogateescape) both yield them, and a UTF-8
    stream refuses to write one: the whole report would be lost to a UnicodeEncodeError."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def render_text(diagnostics: Sequence[Diagnostic]) -> str:
    return printable(
        "".join(
            f"{d.file}:{d.line}:{d.col}: {d.level} {d.code} {d.path}: {d.message}\n"
            for d in sorted(diagnostics, key=sort_key)
        )
    )


def _github_escape(value: str, *, prop: bool) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


def render_github(diagnostics: Sequence[Diagnostic]) -> str:
    lines: list[str] = []
    for d in sorted(diagnostics, key=sort_key):
        command = "error" if d.is_error else "warning"
        props = ",".join(
            [
                f"file={_github_escape(d.file, prop=True)}",
                f"line={d.line}",
                f"col={d.col}",
                f"title={_github_escape(d.code, prop=True)}",
            ]
        )
        lines.append(f"::{command} {props}::{_github_escape(f'{d.path}: {d.message}', prop=False)}\n")
    return printable("".join(lines))


def render_json(diagnostics: Sequence[Diagnostic]) -> str:
    document = {
        "valid": not has_errors(diagnostics),
        "diagnostics": [d.to_json() for d in sorted(diagnostics, key=sort_key)],
    }
    return json.dumps(document, indent=2) + "\n"
