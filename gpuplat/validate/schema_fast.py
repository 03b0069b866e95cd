"""A quick yes to "does this document satisfy the schema?", so jsonschema runs only when it does not.

jsonschema's iter_errors builds a validator object and a reference resolver for every value it
descends into: about 25 microseconds a value, 0.15 s of CPU on a 200-pool spec, most of `check`.
A spec is valid nearly every time it is checked (on every save, in CI), and then jsonschema
finds nothing to report. This module compiles the schema once into nested closures over the
keywords it uses and answers True only when jsonschema would report no error; on False the
schema pass runs jsonschema as before, which finds the errors and words them. So it must be
sound in one direction only: True => no error. Whatever it is unsure of (a keyword it does not
know, a type it would have to compare the way jsonschema does, a non-finite number) is False.

The same type rules as the schema pass (gpuplat/validate/schema.py): an integer is an int that
is not a bool (2.0 is not an integer), a number a finite float or such an int. Formats are
annotations only, as for the validator the schema pass builds (it has no format checker).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, cast

Check = Callable[[Any], bool]

# Keywords with no effect on validity.
_ANNOTATIONS = frozenset({"$schema", "$id", "$defs", "title", "description", "default", "examples", "format"})


class _Unsupported(Exception):
    """The schema uses a keyword (or a form of one) this module does not decide."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _plain(value: Any) -> bool:
    """A string or an int that is not a bool: these compare the same in jsonschema as in a
    Python set (True == 1 in Python, not in jsonschema; 2.0 == 2 in both, so floats are left
    to jsonschema)."""
    return isinstance(value, str) or _is_int(value)


def _is_number(value: Any) -> bool:
    return math.isfinite(value) if isinstance(value, float) else _is_int(value)


_TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": _is_int,
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def compile_schema(schema: Any, defs: Mapping[str, Any]) -> Check | None:
    """A check for `schema` (local `$ref`s resolved in `defs`), or None when some keyword is
    beyond this module: then every document goes to jsonschema."""
    try:
        return _compile(schema, defs, {})
    except _Unsupported:
        return None


def _compile(schema: Any, defs: Mapping[str, Any], seen: dict[str, Check]) -> Check:
    if schema is True:
        return lambda _v: True
    if schema is False:
        return lambda _v: False
    if not isinstance(schema, dict):
        raise _Unsupported(repr(schema))
    node = cast("dict[str, Any]", schema)
    checks = [_keyword(key, value, node, defs, seen) for key, value in node.items() if key not in _ANNOTATIONS]
    parts = [c for c in checks if c is not None]
    if len(parts) == 1:
        return parts[0]
    return lambda v: all(c(v) for c in parts)


def _keyword(
    key: str, value: Any, node: dict[str, Any], defs: Mapping[str, Any], seen: dict[str, Check]
) -> Check | None:
    if key == "$ref":
        return _ref(value, defs, seen)
    if key == "type":
        if not isinstance(value, str) or value not in _TYPES:
            raise _Unsupported("type")
        return _TYPES[value]
    if key in ("properties", "additionalProperties", "required", "propertyNames", "minProperties", "maxProperties"):
        return _object_keyword(key, value, node, defs, seen)
    if key in ("items", "minItems", "maxItems", "uniqueItems"):
        return _array_keyword(key, value, defs, seen)
    if key in ("pattern", "minLength", "maxLength"):
        return _string_keyword(key, value)
    if key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return _number_keyword(key, value)
    if key in ("enum", "const"):
        allowed = value if key == "enum" else [value]
        if not isinstance(allowed, list) or not all(_plain(a) for a in cast("list[Any]", allowed)):
            raise _Unsupported(key)
        names = frozenset(cast("list[str | int]", allowed))
        return lambda v: _plain(v) and v in names
    raise _Unsupported(key)


def _ref(value: Any, defs: Mapping[str, Any], seen: dict[str, Check]) -> Check:
    if not isinstance(value, str) or not value.startswith("#/$defs/") or value[8:] not in defs:
        raise _Unsupported(f"$ref {value!r}")
    name = value[8:]
    if name not in seen:
        box: list[Check] = []
        seen[name] = lambda v: box[0](v)  # a definition may refer to itself
        box.append(_compile(defs[name], defs, seen))
    return seen[name]


def _object_keyword(
    key: str, value: Any, node: dict[str, Any], defs: Mapping[str, Any], seen: dict[str, Check]
) -> Check | None:
    if key == "properties":
        props = {name: _compile(sub, defs, seen) for name, sub in cast("dict[str, Any]", value).items()}
        return lambda v: (
            not isinstance(v, dict)
            or all(props[k](item) for k, item in cast("dict[str, Any]", v).items() if k in props)
        )
    if key == "additionalProperties":
        known = frozenset(cast("dict[str, Any]", node.get("properties", {})))
        if value is False:
            return lambda v: not isinstance(v, dict) or known.issuperset(cast("dict[str, Any]", v))
        extra = _compile(value, defs, seen)
        return lambda v: (
            not isinstance(v, dict)
            or all(extra(item) for k, item in cast("dict[str, Any]", v).items() if k not in known)
        )
    if key == "required":
        needed = tuple(cast("list[str]", value))
        return lambda v: not isinstance(v, dict) or all(k in v for k in needed)
    if key == "propertyNames":
        names = _compile(value, defs, seen)
        return lambda v: not isinstance(v, dict) or all(names(k) for k in cast("dict[str, Any]", v))
    bound = _bound(value)
    if key == "maxProperties":
        return lambda v: not isinstance(v, dict) or len(cast("dict[str, Any]", v)) <= bound
    return lambda v: not isinstance(v, dict) or len(cast("dict[str, Any]", v)) >= bound


def _array_keyword(key: str, value: Any, defs: Mapping[str, Any], seen: dict[str, Check]) -> Check | None:
    if key == "items":
        each = _compile(value, defs, seen)
        return lambda v: not isinstance(v, list) or all(each(item) for item in cast("list[Any]", v))
    if key == "uniqueItems":
        if value is not True:
            return None
        # Only strings: jsonschema's equality of numbers, booleans and containers differs from Python's.
        return lambda v: not isinstance(v, list) or _unique_strings(cast("list[Any]", v))
    bound = _bound(value)
    if key == "minItems":
        return lambda v: not isinstance(v, list) or len(cast("list[Any]", v)) >= bound
    return lambda v: not isinstance(v, list) or len(cast("list[Any]", v)) <= bound


def _unique_strings(items: list[Any]) -> bool:
    return all(isinstance(item, str) for item in items) and len(set(items)) == len(items)


@cache
def ecma_regex(pattern: str) -> re.Pattern[str]:
    """`pattern` with the meaning JSON Schema gives it (ECMA-262, as editors apply it), for
    Python's `re.search`. Python's `$` also matches before a final line break, so `10m\\n`
    (what a block scalar `|` ends in) would pass `^...m$`; ECMA's matches only at the end.
    Python's `\\d` and `\\w` match any script's digits and letters; ECMA's only ASCII ones."""
    out: list[str] = []
    escaped = in_class = False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "$":
            out.append("\\Z")
            continue
        out.append(char)
    return re.compile("".join(out), re.ASCII)


def _string_keyword(key: str, value: Any) -> Check:
    if key == "pattern":
        search = ecma_regex(cast("str", value)).search
        return lambda v: not isinstance(v, str) or search(v) is not None
    bound = _bound(value)
    if key == "minLength":
        return lambda v: not isinstance(v, str) or len(v) >= bound
    return lambda v: not isinstance(v, str) or len(v) <= bound


def _number_keyword(key: str, value: Any) -> Check:
    if not _is_number(value):
        raise _Unsupported(key)
    limit = cast("float", value)
    compares: dict[str, Callable[[float], bool]] = {
        "minimum": lambda v: v >= limit,
        "maximum": lambda v: v <= limit,
        "exclusiveMinimum": lambda v: v > limit,
        "exclusiveMaximum": lambda v: v < limit,
    }
    compare = compares[key]

    def check(v: Any) -> bool:
        if isinstance(v, bool) or not isinstance(v, int | float):
            return True  # not a number: the keyword does not apply (`type` decides)
        if isinstance(v, float) and not math.isfinite(v):
            return False  # jsonschema's own answer is not worth guessing
        return compare(v)

    return check


def _bound(value: Any) -> int:
    if not _is_int(value) or value < 0:
        raise _Unsupported(repr(value))
    return cast("int", value)
