"""Bounds and YAML features checked on the event stream, before anything is built from it.

ruamel.yaml's round-trip loader costs tens of microseconds per node and recurses once per
nesting level, so a small hostile file (10,000 levels of `[`, a flat list of 300,000 items)
costs seconds to minutes before any check of ours could run. The event stream is cheap
(libyaml's C parser when available, a few microseconds per event, no recursion) and lazy,
so scanning it first and stopping at the first bound exceeded keeps every file fast; only a
document within the bounds is handed to the round-trip loader.

The same pass reports the YAML features a spec cannot use: tags other than the core ones
(`!!omap`, `!!set`, `!!binary`, application tags), an alias inside the node it names (a
cycle, e.g. a mapping merging itself), and decimal integers too long for Python to convert.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    MappingStartEvent,
    NodeEvent,
    ScalarEvent,
)
from ruamel.yaml.parser import Parser
from ruamel.yaml.scanner import Scanner

from gpuplat.diagnostics import Level
from gpuplat.spec.construct import editor_lines

# The deepest path of a spec is six levels (procurement.prices.onDemandHourly.<type> in a
# document); 32 leaves room for any layout and stops nesting bombs at once.
MAX_DEPTH = 32
# Nodes as written (aliases count once). The shipped specs have a few hundred and the largest
# benchmark spec (200 pools, 400 tenants) about 15,000. ruamel's round-trip constructor costs
# about 35 microseconds a node even when libyaml composes them (gpuplat/spec/construct.py),
# so this many take under a second.
MAX_NODES = 20_000
# Python refuses to convert decimal integers past 4,300 digits (a guard against quadratic
# conversion); no spec field needs more than ten.
MAX_INTEGER_DIGITS = 1_000

_CORE = "tag:yaml.org,2002:"
ALLOWED_TAGS = frozenset({"!", *(_CORE + t for t in ("str", "int", "float", "bool", "null", "map", "seq"))})
# Every integer form ruamel converts with int(): decimal, 0x / 0o / 0b, and YAML 1.1's
# sexagesimal (`%YAML 1.1`: 1:30:00), whose value grows by a factor of 60 per part.
_INTEGER = re.compile(r"[-+]?(?:[0-9][0-9_]*(?::[0-9_]+)*|0x[0-9a-fA-F_]+|0o[0-7_]+|0b[01_]+)")
# What ruamel's YAML 1.2 loader reads; its version setter asserts on any other (a `%YAML 1.3`).
YAML_VERSIONS = frozenset({(1, 1), (1, 2)})
_DIRECTIVE = re.compile(r"%YAML[ \t]+([0-9]+)\.([0-9]+)[ \t]*(?:#.*)?$")
MAX_KEY_SHOWN = 60


@dataclass(frozen=True)
class Finding:
    code: str
    level: Level
    message: str
    line: int  # 1-based
    col: int


def _show_tag(tag: str) -> str:
    return "!!" + tag.removeprefix(_CORE) if tag.startswith(_CORE) else tag


def _c_events(text: str) -> Iterator[Any]:
    import importlib

    cyaml: Any = importlib.import_module("ruamel.yaml.cyaml")  # the libyaml binding; absent on some platforms
    parser: Any = cyaml.CParser(text)
    try:
        while True:
            event = parser.get_event()
            if event is None:
                return
            yield event
    finally:
        parser.dispose()


class _Keys:
    """The scalar keys of one mapping being read, and whether its next node is a key."""

    def __init__(self) -> None:
        self.lines: dict[str, int] = {}
        self.at_key = True


class _Scan:
    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.depth = 0
        self.nodes = 0
        self.anchors: set[str] = set()
        self.open: list[str | None] = []  # anchors of the collections being read, outermost first
        self.keys: list[_Keys | None] = []  # per open collection: its keys (None for a sequence)

    def add(self, code: str, level: Level, message: str, event: Any) -> None:
        mark: Any = event.start_mark
        self.findings.append(Finding(code, level, message, int(mark.line) + 1, int(mark.column) + 1))

    def event(self, event: Any) -> bool:
        """Record one event; False when a bound is exceeded and the scan must stop."""
        if isinstance(event, CollectionEndEvent):
            self.depth -= 1
            if self.open:
                self.open.pop()
            if self.keys:
                self.keys.pop()
            return True
        if not isinstance(event, NodeEvent):
            return True
        self._key(event)
        self.nodes += 1
        if self.nodes > MAX_NODES:
            self.add("GP006", Level.ERROR, f"the YAML has more than {MAX_NODES} values; a spec is far smaller", event)
            return False
        if isinstance(event, AliasEvent):
            self._alias(event)
            return True
        self._anchor_and_tag(event)
        if isinstance(event, CollectionStartEvent):
            self.depth += 1
            anchor: str | None = getattr(event, "anchor", None)
            self.open.append(anchor)
            self.keys.append(_Keys() if isinstance(event, MappingStartEvent) else None)
            if self.depth > MAX_DEPTH:
                message = f"the YAML nests more than {MAX_DEPTH} levels deep; a spec needs six"
                self.add("GP005", Level.ERROR, message, event)
                return False
        elif isinstance(event, ScalarEvent):
            self._scalar(event)
        return True

    def _key(self, event: Any) -> None:
        """Report a key written twice in one mapping. Left to the loader, ruamel's message
        quotes both values with every alias in them expanded: a few hundred bytes of aliases
        cost it minutes and gigabytes before the message existed."""
        keys = self.keys[-1] if self.keys else None
        if keys is None:
            return
        at_key, keys.at_key = keys.at_key, not keys.at_key
        if not at_key or not isinstance(event, ScalarEvent):
            return
        scalar: Any = event  # ruamel's events are untyped
        text = str(scalar.value)
        if text == "<<" and not scalar.style:
            return  # merge keys: the loader reports what it cannot merge
        first = keys.lines.get(text)
        line = int(scalar.start_mark.line) + 1
        if first is None:
            keys.lines[text] = line
            return
        shown = text if len(text) <= MAX_KEY_SHOWN else text[:MAX_KEY_SHOWN] + "..."
        message = f'found duplicate key "{shown}" (first at line {first}); a mapping names each key once'
        self.add("GP002", Level.ERROR, f"YAML syntax error: {message}", event)

    def _alias(self, event: Any) -> None:
        anchor = str(event.anchor)
        if anchor in self.open:
            self.add(
                "GP007",
                Level.ERROR,
                f"alias *{anchor} is inside the node &{anchor} it names (a cycle); a spec is a tree",
                event,
            )

    def _anchor_and_tag(self, event: Any) -> None:
        anchor: str | None = event.anchor
        if anchor is not None:
            if anchor in self.anchors:
                self.add(
                    "GP008",
                    Level.WARNING,
                    f"anchor &{anchor} is defined again; aliases after this point mean the new value",
                    event,
                )
            self.anchors.add(anchor)
        tag: str | None = event.tag
        if tag is not None and tag not in ALLOWED_TAGS:
            self.add(
                "GP007",
                Level.ERROR,
                f"the YAML tag {_show_tag(tag)} is not supported in a spec; write plain mappings, lists and scalars",
                event,
            )

    def _scalar(self, event: Any) -> None:
        value: str = event.value
        plain = not event.style and event.tag is None
        if plain and len(value) > MAX_INTEGER_DIGITS and _INTEGER.fullmatch(value):
            self.add(
                "GP004",
                Level.ERROR,
                f"an integer of {len(value)} digits; no spec field takes more than a few",
                event,
            )


def _run(events: Iterator[Any], state: _Scan) -> None:
    for event in events:
        if not state.event(event):
            return


class _Unreadable(Exception):
    """ruamel's pure parser failed with something other than a YAMLError, at (line, col)."""

    def __init__(self, err: Exception, line: int, col: int) -> None:
        super().__init__(str(err))
        self.err, self.line, self.col = err, line, col


def _pure_events(text: str) -> Iterator[Any]:
    yaml: Any = YAML(typ="rt")
    yaml.Scanner, yaml.Parser = Scanner, Parser  # no comment gathering (see construct.py)
    _, parser = yaml.get_constructor_parser(text)
    try:
        while parser.check_event():
            yield parser.get_event()
    except YAMLError:
        raise
    except Exception as err:  # e.g. chr() of an escape past U+10FFFF: the reader knows where
        reader: Any = yaml.reader
        raise _Unreadable(err, int(reader.line) + 1, int(reader.column) + 1) from err
    finally:
        parser.dispose()


def _unreadable(exc: _Unreadable) -> Finding:
    if isinstance(exc.err, ValueError) and "0x110000" in str(exc.err):
        problem = "an escape names a code point past \\U0010FFFF, which is no character"
    else:
        problem = f"the text cannot be read ({type(exc.err).__name__}: {str(exc.err)[:200]})"
    return Finding("GP002", Level.ERROR, f"YAML syntax error: {problem}", exc.line, exc.col)


def _directives(text: str) -> list[Finding]:
    """`%YAML` directives of a version ruamel cannot load (it asserts instead of reporting)."""
    found: list[Finding] = []
    for match in re.finditer(r"^%YAML\b.*$", text, re.MULTILINE):
        version = _DIRECTIVE.fullmatch(match.group())
        if version is None or (int(version[1]), int(version[2])) in YAML_VERSIONS:
            continue  # malformed directives are syntax errors the parser reports itself
        line = text.count("\n", 0, match.start()) + 1
        shown = f"{version[1]}.{version[2]}"[:20]
        message = (
            f"YAML syntax error: %YAML {shown} is not a version the loader reads (1.1 or 1.2); "
            "write %YAML 1.2 or leave it out"
        )
        found.append(Finding("GP002", Level.ERROR, message, line, 1))
    return found


def scan(text: str) -> tuple[list[Finding], YAMLError | None]:
    """Findings of the event pass, and the syntax error that ended it, if any. libyaml reads
    the events when it is installed; when it is not, or rejects the text (it parses YAML 1.1,
    the loader 1.2), ruamel's own pure-Python parser reads them, so a document the loader
    accepts is always bounded. An error of ruamel's parser is the one the loader would raise
    (same scanner and parser), so the caller reports it without loading the text again; any
    other failure of that parser becomes a finding at the reader's position."""
    directives = _directives(text)
    if directives:
        return directives, None
    if editor_lines(text):
        state = _Scan()
        try:
            _run(_c_events(text), state)
            return state.findings, None
        except Exception:  # ImportError, libyaml's YAMLError, or anything else: the pure parser decides
            pass
    state = _Scan()
    try:
        _run(_pure_events(text), state)
    except YAMLError as err:
        return state.findings, err
    except _Unreadable as exc:
        return [*state.findings, _unreadable(exc)], None
    return state.findings, None
