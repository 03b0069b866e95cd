"""Reading the inputs beside the spec (traces, Capacity Block schedules, account facts,
recordings): one place for what the spec's loader does for the spec (gpuplat/spec/loader.py).

- Only regular files: a FIFO would block for a writer, a device (`/dev/zero`) never ends.
- A size limit per kind of input, from `fstat` first (a 2 GB sparse file is refused before a
  byte is read) and again while reading (a `/proc` file reports size 0).
- Binary input is refused at once (a NUL in the first block, or anywhere in a JSON file), text
  must be UTF-8 (a byte-order mark is dropped, as spreadsheets write one).
- JSON is read by one reader with limits: nesting depth, integers of at most
  MAX_INTEGER_DIGITS digits, no NaN / Infinity and no float past the double's range, each
  refusal at its line and column.

Unreadable files (missing, a directory, a device, no permission) are InputUnreadable, a usage
error (exit 2); files read but not acceptable are InputInvalid (exit 1), positioned.
"""

from __future__ import annotations

import codecs
import json
import math
import os
import re
import stat
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, cast

from gpuplat.diagnostics import Diagnostic, Level

# What each kind of input may weigh. A trace of a real cluster (Philly: 82,247 jobs, 9 MB; a
# Prometheus export of three days at a 60 s step: 43 MB) is far below; JSON is read whole (about
# ten times its size in memory), so its limit is lower than that of text read a line at a time.
MAX_TRACE_BYTES = 256 * 1024 * 1024
MAX_JSON_TRACE_BYTES = 64 * 1024 * 1024
MAX_SCHEDULE_BYTES = 1024 * 1024
MAX_FACTS_BYTES = 16 * 1024 * 1024
MAX_RECORDING_BYTES = 64 * 1024 * 1024
MAX_POLICY_CONFIG_BYTES = 1024 * 1024
# The deepest JSON gpuplat reads is a recording's Helm values (about 15 levels); Python's own
# parser fails past about 1,000 and everything that walks the document recursively before that.
MAX_JSON_DEPTH = 64
# No number gpuplat reads needs more (a millisecond timestamp has 13); Python converts longer
# decimal integers in quadratic time and no float holds them.
MAX_INTEGER_DIGITS = 20
_HEAD = 64 * 1024


class InputUnreadable(Exception):
    """The file cannot be read at all: a usage or IO error (exit 2)."""

    def __init__(self, file: str, reason: str) -> None:
        super().__init__(f"cannot read {file}: {reason}")
        self.file = file


class InputInvalid(Exception):
    """The file was read but is not the input asked for: positioned, exit 1."""

    def __init__(self, code: str, file: str, message: str, line: int = 1, col: int = 1, path: str = "$") -> None:
        super().__init__(f"{file}:{line}:{col}: {message}")
        self.diagnostic = Diagnostic(code, Level.ERROR, message, path, file, line, col)


def _open_regular(path: str | Path, file: str, limit: int, what: str) -> int:
    try:
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputUnreadable(file, "no such file") from None
    except OSError as err:
        raise InputUnreadable(file, err.strerror or str(err)) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InputUnreadable(file, f"it is a directory; give the {what} file")
        if not stat.S_ISREG(info.st_mode):
            raise InputUnreadable(file, f"it is not a regular file (a pipe, socket or device); give the {what} file")
        if info.st_size > limit:
            raise InputInvalid("GP030", file, _too_large(info.st_size, limit, what))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _too_large(size: int, limit: int, what: str) -> str:
    return f"the file is {size:,} bytes; a {what} is at most {limit // (1024 * 1024)} MiB, so this is another file"


def _binary(file: str, what: str, head: bytes, offset: int = 0) -> InputInvalid:
    at = head.index(b"\x00")
    line = head[:at].count(b"\n") + 1
    return InputInvalid("GP030", file, f"the file is binary (a NUL byte at offset {offset + at:,}), not a {what}", line)


def _not_utf8(file: str, what: str, raw: bytes, err: UnicodeDecodeError, offset: int = 0) -> InputInvalid:
    line = raw[: err.start].count(b"\n") + 1
    col = err.start - (raw.rfind(b"\n", 0, err.start) + 1) + 1
    return InputInvalid("GP030", file, f"the {what} is not UTF-8 text (byte {offset + err.start:,})", line, col)


def read_text(path: str | Path, what: str, limit: int, display: str | None = None) -> str:
    """The whole file as text (UTF-8, BOM dropped), within `limit` bytes."""
    file = display or str(path)
    fd = _open_regular(path, file, limit, what)
    with os.fdopen(fd, "rb") as handle:
        try:
            raw = handle.read(limit + 1)
        except OSError as err:
            raise InputUnreadable(file, err.strerror or str(err)) from None
    if len(raw) > limit:
        raise InputInvalid("GP030", file, _too_large(len(raw), limit, what))
    if b"\x00" in raw:
        raise _binary(file, what, raw)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise _not_utf8(file, what, raw, err) from None


class _LimitedText:
    """Text over a file's bytes that refuses binary, non-UTF-8 and oversized input as it reads:
    a CSV is read a line at a time, never whole."""

    def __init__(self, handle: BinaryIO, file: str, what: str, limit: int) -> None:
        self.handle, self.file, self.what, self.limit = handle, file, what, limit
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")("strict")
        self.consumed = 0
        self.lines = 0  # newlines in what was decoded so far, to place a bad byte

    def chunks(self) -> Iterator[str]:
        while True:
            try:
                raw = self.handle.read(_HEAD)
            except OSError as err:
                raise InputUnreadable(self.file, err.strerror or str(err)) from None
            offset = self.consumed
            self.consumed += len(raw)
            if self.consumed > self.limit:
                raise InputInvalid("GP030", self.file, _too_large(self.consumed, self.limit, self.what))
            if b"\x00" in raw:
                error = _binary(self.file, self.what, raw, offset)
                line = error.diagnostic.line + self.lines
                raise InputInvalid("GP030", self.file, error.diagnostic.message, line)
            try:
                text = self.decoder.decode(raw, final=not raw)
            except UnicodeDecodeError as err:
                bad = _not_utf8(self.file, self.what, raw, err, offset).diagnostic
                raise InputInvalid("GP030", self.file, bad.message, bad.line + self.lines, bad.col) from None
            self.lines += raw.count(b"\n")
            if text:
                yield text
            if not raw:
                return


def text_lines(path: str | Path, what: str, limit: int, display: str | None = None) -> Generator[str]:
    """The file's lines (with their endings, `\\r\\n` kept for csv), read as they are needed."""
    file = display or str(path)
    fd = _open_regular(path, file, limit, what)
    with os.fdopen(fd, "rb") as handle:
        stream = _LimitedText(handle, file, what, limit)
        pending = ""
        for chunk in stream.chunks():
            pending += chunk
            lines = pending.splitlines(keepends=True)
            # The last piece may be a line cut by the block (or a \r whose \n comes next).
            pending = lines.pop() if lines and not lines[-1].endswith("\n") else ""
            yield from lines
        if pending:
            yield pending


# ---------------------------------------------------------------- JSON with limits
class _BadNumber(Exception):
    def __init__(self, token: str, reason: str) -> None:
        super().__init__(token)
        self.token, self.reason = token, reason


def _constant(token: str) -> Any:
    raise _BadNumber(token, f"{token} is not a number JSON allows (JSON has no NaN or Infinity)")


def _float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise _BadNumber(token, f"the number {_short(token)} is beyond the range of a double")
    return value


def _int(token: str) -> int:
    if len(token.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise _BadNumber(token, f"the integer of {len(token.lstrip('-'))} digits is longer than any value takes")
    return int(token)


def _short(token: str) -> str:
    return token if len(token) <= 40 else token[:20] + "..." + token[-10:]


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]|-?Infinity|NaN|-?[0-9][0-9.eE+-]*')


def _position(text: str, at: int) -> tuple[int, int]:
    line = text.count("\n", 0, at) + 1
    return line, at - (text.rfind("\n", 0, at) + 1) + 1


def _find(text: str, token: str | None, depth: int | None) -> int:
    """Where the bad token (or the first bracket past `depth`) is, outside strings. Only the error
    path pays for this pass."""
    level = 0
    for match in _TOKEN.finditer(text):
        found = match.group()
        if found in ("[", "{"):
            level += 1
            if depth is not None and level > depth:
                return match.start()
        elif found in ("]", "}"):
            level -= 1
        elif token is not None and found == token:
            return match.start()
    return 0


def _too_deep(document: Any) -> bool:
    """Whether json.loads' `document` nests past MAX_JSON_DEPTH: level by level, testing exact
    types (json.loads makes plain dicts and lists), a third of a second per million samples of an
    export where a walk of (node, depth) pairs took nearly two."""
    level: list[Any] = [document] if type(document) is dict or type(document) is list else []
    depth = 1
    while level:
        if depth > MAX_JSON_DEPTH:
            return True
        below: list[Any] = []
        for node in level:
            children: Iterable[Any] = cast("dict[str, Any]", node).values() if type(node) is dict else node
            below += [c for c in children if type(c) is list or type(c) is dict]
        level, depth = below, depth + 1
    return False


def parse_json(text: str, file: str, what: str) -> Any:
    """The JSON document `text`, within the limits above; InputInvalid (GP031) at the position of
    the first thing past them."""
    depth_message = f"the JSON nests more than {MAX_JSON_DEPTH} levels deep; a {what} needs far fewer"
    try:
        document: Any = json.loads(text, parse_constant=_constant, parse_float=_float, parse_int=_int)
    except json.JSONDecodeError as err:
        raise InputInvalid("GP031", file, f"not JSON: {err.msg}", err.lineno, err.colno) from None
    except _BadNumber as err:
        line, col = _position(text, _find(text, err.token, None))
        raise InputInvalid("GP031", file, err.reason, line, col) from None
    except RecursionError:
        line, col = _position(text, _find(text, None, MAX_JSON_DEPTH))
        raise InputInvalid("GP031", file, depth_message, line, col) from None
    if _too_deep(document):
        line, col = _position(text, _find(text, None, MAX_JSON_DEPTH))
        raise InputInvalid("GP031", file, depth_message, line, col)
    return document


def _ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def locate(text: str, path: tuple[str | int, ...]) -> int:
    """The line of the JSON value at `path` (keys and indices) in `text`."""
    return locate_at(text, path)[0]


def locate_at(text: str, path: tuple[str | int, ...]) -> tuple[int, int]:
    """(line, column) of the JSON value at `path` (keys and indices) in `text`, a document
    parse_json accepted, or of the object that lacks its key. Only bad input pays for this walk:
    json.loads keeps no positions."""
    decoder = json.JSONDecoder()
    i = _ws(text, 0)
    try:
        for step in path:
            start = i
            if text[i] == "{":
                i = _ws(text, i + 1)
                while text[i] != "}":
                    key, i = decoder.raw_decode(text, i)  # a key is a JSON string
                    i = _ws(text, _ws(text, i) + 1)  # past the colon
                    if key == step:
                        break
                    i = _ws(text, decoder.raw_decode(text, i)[1])
                    i = _ws(text, i + 1) if text[i] == "," else i
                else:
                    i = start  # no such key: the object that lacks it
                    break
            elif text[i] == "[" and isinstance(step, int):
                i = _ws(text, i + 1)
                for _ in range(step):
                    i = _ws(text, decoder.raw_decode(text, i)[1])
                    i = _ws(text, i + 1) if text[i] == "," else i
            else:
                break
    except (IndexError, ValueError):
        pass
    return _position(text, min(i, len(text)))


def read_json(path: str | Path, what: str, limit: int, display: str | None = None) -> tuple[Any, str]:
    """(document, text) of the JSON file at `path`; the text places later complaints."""
    file = display or str(path)
    text = read_text(path, what, limit, file)
    return parse_json(text, file, what), text
