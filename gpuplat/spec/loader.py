"""Load one YAML file into plain data plus a position tree, turning every failure into diagnostics.

ruamel.yaml's round-trip loader keeps the line/column of every key and item (`.lc`). We
normalise what it returns before the schema pass (keys as str, timestamps as ISO strings,
ruamel scalar subclasses as plain int/float/str) so the validators never see ruamel types.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.scalarbool import ScalarBoolean

from gpuplat.diagnostics import Diagnostic, Level, Origin
from gpuplat.spec.positions import Pos

# Specs are small; a larger file is almost certainly the wrong file (a log, a binary).
MAX_SPEC_BYTES = 8 * 1024 * 1024
# Aliases let a few lines expand to billions of values ("billion laughs"); a real spec has a
# few hundred, so stop expanding long before it costs minutes of CPU or gigabytes of memory.
MAX_SPEC_VALUES = 100_000


class _TooManyValues(Exception):
    pass


@dataclass(frozen=True)
class SourceDoc:
    file: str  # the name diagnostics show (as the user wrote it)
    data: Any
    pos: Pos


def _io_error(file: str, code: str, message: str, line: int = 1, col: int = 1) -> Diagnostic:
    return Diagnostic(code, Level.ERROR, message, "$", file, line, col)


def _normalise(node: Any, origin: Origin, file: str, budget: list[int]) -> tuple[Any, Pos]:
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooManyValues
    if isinstance(node, CommentedMap):
        cmap: Any = node
        out: dict[str, Any] = {}
        pos = Pos(origin)
        for key, value in cast("list[tuple[Any, Any]]", list(cmap.items())):
            key_line, key_col = cast("tuple[int, int]", cmap.lc.key(key))
            try:
                val_line, val_col = cast("tuple[int, int]", cmap.lc.value(key))
            except (KeyError, TypeError):
                val_line, val_col = key_line, key_col
            name = _key_text(key)
            child_value, child_pos = _normalise(value, Origin(file, val_line + 1, val_col + 1), file, budget)
            child_pos.key = Origin(file, key_line + 1, key_col + 1)
            out[name] = child_value
            pos.children[name] = child_pos
        return out, pos
    if isinstance(node, CommentedSeq):
        cseq: Any = node
        items: list[Any] = []
        pos = Pos(origin)
        values: list[Any] = list(cseq)
        for index, value in enumerate(values):
            try:
                line, col = cast("tuple[int, int]", cseq.lc.item(index))
                item_origin = Origin(file, line + 1, col + 1)
            except (KeyError, TypeError, IndexError):
                item_origin = origin
            child_value, child_pos = _normalise(value, item_origin, file, budget)
            items.append(child_value)
            pos.children[index] = child_pos
        return items, pos
    return _scalar(node), Pos(origin)


def _key_text(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return str(key)


def _scalar(value: Any) -> Any:
    # Order matters: ruamel's ScalarBoolean subclasses int, and bool subclasses int.
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, ScalarBoolean):  # anchored booleans: an int subclass in ruamel
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, datetime.date | datetime.datetime):
        return value.isoformat()
    return str(value)  # anything exotic: keep the text the user wrote


def parse_text(text: str, file: str, *, allow_empty: bool = False) -> tuple[SourceDoc | None, list[Diagnostic]]:
    """Parse one document. `allow_empty`: an empty file is an empty mapping (an overlay that
    changes nothing, e.g. only comments), not an error."""
    yaml: Any = YAML(typ="rt")
    try:
        root: Any = yaml.load(text)
    except MarkedYAMLError as exc:
        err: Any = exc  # ruamel's error attributes are untyped
        mark: Any = err.problem_mark or err.context_mark
        line, col = (int(mark.line) + 1, int(mark.column) + 1) if mark is not None else (1, 1)
        problem = str(err.problem or err.context or "invalid YAML")
        context = f" ({err.context})" if err.context and err.problem else ""
        return None, [_io_error(file, "GP002", f"YAML syntax error: {problem}{context}", line, col)]
    except YAMLError as err:
        return None, [_io_error(file, "GP002", f"YAML syntax error: {err}")]
    except RecursionError:
        return None, [_io_error(file, "GP002", "YAML nesting is too deep to be a platform spec")]
    if root is None and allow_empty:
        return SourceDoc(file, {}, Pos(Origin(file, 1, 1))), []
    if root is None:
        return None, [_io_error(file, "GP003", "the file is empty; expected a mapping of spec fields")]
    if not isinstance(root, CommentedMap):
        kind = "a list" if isinstance(root, CommentedSeq) else f"a single {type(_scalar(root)).__name__}"
        return None, [_io_error(file, "GP003", f"expected a mapping of spec fields at the top level, got {kind}")]
    try:
        data, pos = _normalise(root, Origin(file, 1, 1), file, [MAX_SPEC_VALUES])
    except RecursionError:
        return None, [_io_error(file, "GP002", "YAML nesting is too deep to be a platform spec")]
    except _TooManyValues:
        message = f"the YAML expands (through aliases) to more than {MAX_SPEC_VALUES} values; a spec is far smaller"
        return None, [_io_error(file, "GP004", message)]
    return SourceDoc(file, data, pos), []


def load_file(
    path: Path, display: str | None = None, *, allow_empty: bool = False
) -> tuple[SourceDoc | None, list[Diagnostic]]:
    """Read and parse `path`; on any failure return no document and the reason as diagnostics."""
    file = display if display is not None else str(path)
    try:
        if path.is_dir():
            return None, [_io_error(file, "GP001", "is a directory, not a spec file")]
        size = path.stat().st_size
        if size > MAX_SPEC_BYTES:
            return None, [_io_error(file, "GP004", f"file is {size} bytes; a spec is at most {MAX_SPEC_BYTES}")]
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, [_io_error(file, "GP001", "file not found")]
    except OSError as err:
        return None, [_io_error(file, "GP001", f"cannot read file: {err.strerror or err}")]
    if b"\x00" in raw:
        return None, [_io_error(file, "GP004", "file is binary (contains NUL bytes), not YAML text")]
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        return None, [_io_error(file, "GP004", f"file is not UTF-8 text (byte {err.start})", line, 1)]
    return parse_text(text, file, allow_empty=allow_empty)
