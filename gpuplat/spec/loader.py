"""Load one YAML file into plain data plus a position tree, turning every failure into diagnostics.

ruamel.yaml's round-trip loader keeps the line/column of every key and item (`.lc`). We
normalise what it returns before the schema pass (keys as str, timestamps as ISO strings,
ruamel scalar subclasses as plain int/float/str) so the validators never see ruamel types.
"""

from __future__ import annotations

import datetime
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from ruamel.yaml.comments import CommentedMap, CommentedSeq, merge_attrib
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.scalarbool import ScalarBoolean

from gpuplat.diagnostics import Diagnostic, Level, Origin, json_path
from gpuplat.spec.construct import load_round_trip
from gpuplat.spec.guard import scan
from gpuplat.spec.positions import PathPart, Pos

# Specs are small (the shipped ones a few KB, the largest benchmark spec of 200 pools and
# 400 tenants 120 KB); a larger file is almost certainly the wrong file (a log, a dump). ruamel's
# pure-Python scanner (used when libyaml is absent or refuses a file) costs 1 to 5 microseconds
# per character, blank lines the most, so this bound also keeps such files under a second.
MAX_SPEC_BYTES = 256 * 1024
# Aliases let a few lines expand to billions of values ("billion laughs"); a real spec has a
# few hundred (the largest benchmark spec 15,000), so stop expanding long before it costs
# seconds of CPU or gigabytes of memory.
MAX_SPEC_VALUES = 50_000
# ruamel's messages may quote whole values (a long scalar, a mapping with its aliases expanded).
MAX_MESSAGE = 300
# YAML's "\uDFFF" escape yields a lone surrogate: no UTF-8 file, JSON document or API can hold
# it, so every command that writes the value out (graph, preview, verify, policy) would fail.
_SURROGATE = re.compile("[\ud800-\udfff]")


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
        return _normalise_map(node, origin, file, budget)
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


def _normalise_map(cmap: Any, origin: Origin, file: str, budget: list[int]) -> tuple[Any, Pos]:
    out: dict[str, Any] = {}
    pos = Pos(origin)
    for key, value in cast("list[tuple[Any, Any]]", list(cmap.items())):
        # A key brought in by a merge (`<<: *defaults`) is written in the merged mapping:
        # its position is there, at the anchor, where the value is defined.
        owner = _owner(cmap, key)
        key_line, key_col = cast("tuple[int, int]", owner.lc.key(key))
        try:
            val_line, val_col = cast("tuple[int, int]", owner.lc.value(key))
        except (KeyError, TypeError):
            val_line, val_col = key_line, key_col
        name = _key_text(key)
        child_value, child_pos = _normalise(value, Origin(file, val_line + 1, val_col + 1), file, budget)
        child_pos.key = Origin(file, key_line + 1, key_col + 1)
        out[name] = child_value
        pos.children[name] = child_pos
    return out, pos


def _owner(cmap: Any, key: Any) -> Any:
    """The mapping that literally holds `key`: `cmap`, or the first merged mapping (merges
    nest: an anchor may merge others) that does. Merge order is YAML's: the first wins."""
    if key in cmap.lc.data:
        return cmap
    entries: list[Any] = list(getattr(cmap, merge_attrib, []))
    for entry in entries:
        merged: Any = cast("Any", entry[1]) if isinstance(entry, tuple) else entry  # older ruamel: (index, map)
        if isinstance(merged, CommentedMap) and key in merged:
            return _owner(merged, key)
    return cmap


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
    findings, syntax_error = scan(text)
    found = [Diagnostic(f.code, f.level, f.message, "$", file, f.line, f.col) for f in findings]
    if any(d.is_error for d in found):
        return None, found
    if syntax_error is not None:
        return None, [*found, _syntax_error(syntax_error, file)]
    doc, diags = _load(text, file, allow_empty=allow_empty)
    return doc, found + diags


def _syntax_error(exc: YAMLError, file: str) -> Diagnostic:
    if not isinstance(exc, MarkedYAMLError):
        return _io_error(file, "GP002", f"YAML syntax error: {exc}")
    err: Any = exc  # ruamel's error attributes are untyped
    mark: Any = err.problem_mark or err.context_mark
    line, col = (int(mark.line) + 1, int(mark.column) + 1) if mark is not None else (1, 1)
    problem = _shortened(str(err.problem or err.context or "invalid YAML"))
    context = f" ({_shortened(str(err.context))})" if err.context and err.problem else ""
    return _io_error(file, "GP002", f"YAML syntax error: {problem}{context}", line, col)


def _shortened(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE] + "..."


def _lone_surrogates(data: Any, pos: Pos | None, path: tuple[PathPart, ...], out: list[Diagnostic]) -> None:
    if isinstance(data, str):
        found = _SURROGATE.search(data)
        if found is not None and pos is not None:
            message = (
                f"the text holds a lone surrogate (\\u{ord(found.group()):04x}), which is no character: "
                "UTF-8 cannot write it to a file or an API; write the character itself"
            )
            out.append(Diagnostic("GP004", Level.ERROR, message, json_path(path), *_origin(pos.value)))
    elif isinstance(data, dict):
        for key, value in cast("dict[str, Any]", data).items():
            child = pos.child(key) if pos is not None else None
            if _SURROGATE.search(key) and child is not None:
                _lone_surrogates(key, Pos(child.key or child.value), (*path, key), out)
            _lone_surrogates(value, child, (*path, key), out)
    elif isinstance(data, list):
        for index, item in enumerate(cast("list[Any]", data)):
            _lone_surrogates(item, pos.child(index) if pos is not None else None, (*path, index), out)


def _origin(origin: Origin) -> tuple[str, int, int]:
    return origin.file, origin.line, origin.col


def _load(text: str, file: str, *, allow_empty: bool) -> tuple[SourceDoc | None, list[Diagnostic]]:
    try:
        root: Any = load_round_trip(text)
    except YAMLError as err:
        return None, [_syntax_error(err, file)]
    except RecursionError:
        return None, [_io_error(file, "GP005", "YAML nesting is too deep to be a platform spec")]
    except (AttributeError, TypeError, ValueError, KeyError, IndexError, AssertionError) as err:
        # The scan rejects every construct known to trip the loader; this is for the next one.
        return None, [_io_error(file, "GP007", f"YAML the loader cannot build ({type(err).__name__}: {err})")]
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
        return None, [_io_error(file, "GP005", "YAML nesting is too deep to be a platform spec")]
    except _TooManyValues:
        message = f"the YAML expands (through aliases) to more than {MAX_SPEC_VALUES} values; a spec is far smaller"
        return None, [_io_error(file, "GP006", message)]
    surrogates: list[Diagnostic] = []
    _lone_surrogates(data, pos, (), surrogates)
    if surrogates:
        return None, surrogates
    return SourceDoc(file, data, pos), []


def _read(path: Path, file: str) -> bytes | Diagnostic:
    """The file's bytes, at most MAX_SPEC_BYTES of them. Only regular files: a FIFO would
    block until some writer came, a device (`/dev/zero`, `/dev/stdin`) never ends and reports
    size 0, so the size is learnt by reading with a limit, never from `stat`."""
    # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            return _io_error(file, "GP001", "is a directory, not a spec file")
        if not stat.S_ISREG(mode):
            return _io_error(file, "GP001", "is not a regular file (a pipe, socket or device); give a spec file")
        with os.fdopen(os.dup(fd), "rb") as handle:
            raw = handle.read(MAX_SPEC_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > MAX_SPEC_BYTES:
        return _io_error(file, "GP004", f"file is larger than {MAX_SPEC_BYTES} bytes; a spec is far smaller")
    return raw


def load_file(
    path: Path, display: str | None = None, *, allow_empty: bool = False
) -> tuple[SourceDoc | None, list[Diagnostic]]:
    """Read and parse `path`; on any failure return no document and the reason as diagnostics."""
    file = display if display is not None else str(path)
    try:
        raw = _read(path, file)
    except FileNotFoundError:
        return None, [_io_error(file, "GP001", "file not found")]
    except OSError as err:
        return None, [_io_error(file, "GP001", f"cannot read file: {err.strerror or err}")]
    if isinstance(raw, Diagnostic):
        return None, [raw]
    if b"\x00" in raw:
        return None, [_io_error(file, "GP004", "file is binary (contains NUL bytes), not YAML text")]
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        return None, [_io_error(file, "GP004", f"file is not UTF-8 text (byte {err.start})", line, 1)]
    return parse_text(text, file, allow_empty=allow_empty)
