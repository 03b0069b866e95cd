"""The spec reference's rows: every field of schemas/platform.schema.json, flattened to a path.

A field whose schema is an object with `properties` (directly or through a `$ref`) gets a row and
then rows for its children (`a.b`); an array of such objects continues with `a[].b`; a map
(`additionalProperties` a schema) continues with `a.<key>`. A `$ref` to a scalar definition
(shortName, duration, percent ...) lends its type and bounds; the field's own description wins.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

Schema = Mapping[str, Any]

_NONE: Schema = {}

_BOUNDS = (
    ("minimum", ">= {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "<= {}"),
    ("exclusiveMaximum", "< {}"),
    ("minLength", "length >= {}"),
    ("maxLength", "length <= {}"),
    ("minItems", "items >= {}"),
    ("maxItems", "items <= {}"),
    ("minProperties", "keys >= {}"),
    ("pattern", "pattern `{}`"),
    ("format", "format {}"),
)


@dataclass(frozen=True)
class Field:
    path: str
    type: str
    default: str
    bounds: str
    description: str
    required: bool


def _resolve(node: Schema, root: Schema) -> Schema:
    """The node with its `$ref` merged in (the node's own keys win)."""
    if "$ref" not in node:
        return node
    target = _resolve(root["$defs"][node["$ref"].rsplit("/", 1)[-1]], root)
    return {**target, **{k: v for k, v in node.items() if k != "$ref"}}


def _show(value: Any) -> str:
    return "`" + json.dumps(value) + "`"


def _type_of(node: Schema, root: Schema) -> str:
    if "const" in node:
        return f"const {_show(node['const'])}"
    kind = node.get("type", "any")
    if kind == "array":
        return f"array of {_type_of(_resolve(node.get('items', _NONE), root), root)}"
    if kind == "object" and "properties" not in node and isinstance(node.get("additionalProperties"), dict):
        return f"map of {_type_of(_resolve(node['additionalProperties'], root), root)}"
    return str(kind)


def _bounds_of(node: Schema) -> str:
    parts = [fmt.format(node[key]) for key, fmt in _BOUNDS if key in node]
    if node.get("uniqueItems"):
        parts.append("unique")
    if "enum" in node:
        parts.append("one of " + ", ".join(_show(v) for v in node["enum"]))
    return "; ".join(parts)


def _row(path: str, node: Schema, root: Schema, required: bool) -> Field:
    items = _resolve(node.get("items", _NONE), root) if node.get("type") == "array" else _NONE
    bounds = "; ".join(b for b in (_bounds_of(node), _bounds_of(items) and f"each: {_bounds_of(items)}") if b)
    default = _show(node["default"]) if "default" in node else ""
    text = " ".join(str(node.get("description", "")).split())
    return Field(path, _type_of(node, root), default, bounds, text, required)


def _children(path: str, node: Schema, root: Schema) -> Iterator[tuple[str, Schema, bool]]:
    if node.get("type") == "array":
        items = _resolve(node.get("items", _NONE), root)
        yield from _children(f"{path}[]", items, root) if "properties" in items else ()
        return
    required = set(node.get("required", ()))
    for name, child in node.get("properties", {}).items():
        yield f"{path}.{name}" if path else name, child, name in required
    extra: object = node.get("additionalProperties")
    if "properties" not in node and isinstance(extra, Mapping):
        values = _resolve(cast(Schema, extra), root)
        yield from _children(f"{path}.<key>", values, root) if "properties" in values else ()


def fields(root: Schema) -> list[Field]:
    """Depth first, in the schema's own order: each field, then its children."""
    out: list[Field] = []

    def visit(path: str, raw: Schema, required: bool, seen: frozenset[str]) -> None:
        node = _resolve(raw, root)
        out.append(_row(path, node, root, required))
        ref = raw.get("$ref", "")
        if ref in seen:
            return
        for child_path, child, child_required in _children(path, node, root):
            visit(child_path, child, child_required, seen | {ref})

    for path, child, required in _children("", root, root):
        visit(path, child, required, frozenset())
    return out
