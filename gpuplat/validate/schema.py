"""Pass 1: JSON Schema, every error turned into a positioned Diagnostic with a useful message."""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any, cast

from gpuplat.diagnostics import Diagnostic, Level, json_path
from gpuplat.spec.positions import PathPart, Pos
from gpuplat.validate.schema_fast import compile_schema, ecma_regex
from gpuplat.vocabulary import SCHEMA_PATH

if TYPE_CHECKING:
    # jsonschema is imported only to word the errors of a spec the fast check rejected: its
    # import is a fifth of a valid `gpuplat plan` of a large spec (bench/results.md).
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError


@cache
def schema() -> dict[str, Any]:
    return cast("dict[str, Any]", json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))


def _is_integer(_checker: Any, instance: Any) -> bool:
    # JSON Schema counts 2.0 as an integer; the model and planner must never see a float
    # node count, day or replica number, so `max: 2.0` is a type error here.
    return isinstance(instance, int) and not isinstance(instance, bool)


def _is_number(_checker: Any, instance: Any) -> bool:
    # YAML's .nan and .inf are floats but no quantity: NaN even passes every min/max check.
    if isinstance(instance, float):
        return math.isfinite(instance)
    return isinstance(instance, int) and not isinstance(instance, bool)


# Keywords that only annotate: a `$ref` beside nothing else but these is its definition.
_ANNOTATIONS = frozenset({"$ref", "description", "default", "title", "examples"})


def _inlined(node: Any, defs: dict[str, Any], done: dict[str, Any], open_: frozenset[str] = frozenset()) -> Any:
    """`node` with its local `$ref`s ("#/$defs/x") replaced by the definitions themselves.

    A `$ref` costs jsonschema a registry look-up and a JSON-pointer walk per value (a third
    of the schema pass on a 200-pool spec). A `$ref` beside annotations only becomes the
    definition's own mapping; beside other keywords, the keyword becomes `"allOf": [x]` in
    its place. Either way the definition applies to the same value and its errors come out
    as before, in the same order, with the same instance path, keyword, message and schema
    mapping. A definition that refers to itself keeps its `$ref`."""
    if isinstance(node, list):
        return [_inlined(item, defs, done, open_) for item in cast("list[Any]", node)]
    if not isinstance(node, dict):
        return node
    mapping = cast("dict[str, Any]", node)
    ref = mapping.get("$ref")
    name = ref.removeprefix("#/$defs/") if isinstance(ref, str) and ref.startswith("#/$defs/") else None
    if name is None or name not in defs or name in open_ or "allOf" in mapping:
        return {key: _inlined(value, defs, done, open_) for key, value in mapping.items()}
    if name not in done:
        done[name] = _inlined(defs[name], defs, done, open_ | {name})
    if set(mapping) <= _ANNOTATIONS:
        return done[name]
    return {
        ("allOf" if key == "$ref" else key): ([done[name]] if key == "$ref" else _inlined(value, defs, done, open_))
        for key, value in mapping.items()
    }


def _pattern(validator: Any, pattern: str, instance: Any, _schema: Any) -> Iterator[ValidationError]:
    # jsonschema's own keyword runs Python's re.search on the pattern as written (see ecma_regex).
    if validator.is_type(instance, "string") and not ecma_regex(pattern).search(instance):
        from jsonschema.exceptions import ValidationError  # imported only for a rejected spec

        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@cache
def _validator() -> Draft202012Validator:
    from jsonschema import Draft202012Validator, validators

    checker: Any = Draft202012Validator.TYPE_CHECKER.redefine_many({"integer": _is_integer, "number": _is_number})
    untyped: Any = validators  # jsonschema's extend() is unannotated
    strict: Any = untyped.extend(Draft202012Validator, {"pattern": _pattern}, type_checker=checker)
    root = schema()
    return cast("Draft202012Validator", strict(_inlined(root, dict(root.get("$defs", {})), {})))


MAX_SUGGESTIONS = 50


def _did_you_mean(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number" if math.isfinite(value) else "non-finite number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    return "mapping"


def _show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _quote_hint(value: Any) -> str:
    """A scalar YAML typed for the user: the fix is quotes, and a number may have lost digits already
    (`1.30` is read as 1.3), so say both."""
    if isinstance(value, bool):
        return "; quote it: unquoted, YAML reads true / false as a boolean"
    if isinstance(value, float) and math.isfinite(value):
        return f'; quote it ("{value}", digits as you mean them): unquoted, YAML reads a number (1.30 is 1.3)'
    if isinstance(value, int):
        return f'; quote it ("{value}"): unquoted, YAML reads it as a number'
    return ""


class _SchemaReporter:
    def __init__(self, pos: Pos) -> None:
        self.pos = pos
        self.out: list[Diagnostic] = []
        self.seen: set[Diagnostic] = set()
        self.extra_keys_done: set[str] = set()  # paths whose unknown keys are all reported

    def add(self, code: str, message: str, path: Sequence[PathPart], *, at_key: bool = False) -> None:
        origin = self.pos.locate(path, prefer_key=at_key)
        diagnostic = Diagnostic(code, Level.ERROR, message, json_path(path), origin.file, origin.line, origin.col)
        # jsonschema raises one `required` (and `additionalProperties`) error per offending key
        # while each report names them all, so the same record would otherwise come N times.
        if diagnostic not in self.seen:
            self.seen.add(diagnostic)
            self.out.append(diagnostic)

    def _unknown_keys(self, path: list[PathPart], value: Any, sub: dict[str, Any]) -> None:
        # One error per unknown key, each naming them all: report them once (n keys, not n^2).
        if json_path(path) in self.extra_keys_done:
            return
        self.extra_keys_done.add(json_path(path))
        known = sorted(cast("dict[str, Any]", sub.get("properties", {})))
        for n, key in enumerate(sorted(set(cast("dict[str, Any]", value)) - set(known))):
            where = "at the top level" if not path else f"in {json_path(path)}"
            # A typo comes alone; past a few dozen unknown keys it is the wrong file, and
            # fuzzy matching each of thousands would cost seconds.
            hint = _did_you_mean(key, known) if n < MAX_SUGGESTIONS else ""
            if not hint and known and len(known) <= 12:
                hint = f" (allowed: {', '.join(known)})"
            self.add(
                "GP101",
                f"unknown key {key!r} {where}{hint}",
                [*path, key],
                at_key=True,
            )

    def report(self, error: ValidationError) -> None:
        path: list[PathPart] = list(error.absolute_path)
        validator = str(error.validator)
        value: Any = error.instance
        sub: dict[str, Any] = error.schema if isinstance(error.schema, dict) else {}
        if validator == "additionalProperties":
            self._unknown_keys(path, value, sub)
        elif validator == "required":
            missing = [k for k in cast("list[str]", error.validator_value) if k not in cast("dict[str, Any]", value)]
            for key in missing:
                self.add("GP102", f"missing required field {key!r}", path, at_key=True)
        elif validator == "type":
            expected = error.validator_value
            expected_text = " or ".join(cast("list[str]", expected)) if isinstance(expected, list) else str(expected)
            expected_text = expected_text.replace("object", "mapping").replace("array", "list")
            hint = _quote_hint(value) if "string" in expected_text else ""
            self.add("GP103", f"expected {expected_text}, got {_type_name(value)} {_show(value)}{hint}", path)
        elif validator in ("enum", "const"):
            allowed_values: list[Any] = (
                cast("list[Any]", error.validator_value) if validator == "enum" else [error.validator_value]
            )
            hint = _did_you_mean(str(value), [str(a) for a in allowed_values]) if isinstance(value, str) else ""
            self.add(
                "GP104",
                f"{_show(value)} is not allowed (allowed: {', '.join(_show(a) for a in allowed_values)}){hint}",
                path,
            )
        elif validator == "pattern":
            what = sub.get("description", "")
            self.add("GP104", f"{_show(value)} does not have the required form{_form_hint(what)}", path)
        elif validator in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            words = {
                "minimum": "at least",
                "maximum": "at most",
                "exclusiveMinimum": "greater than",
                "exclusiveMaximum": "less than",
            }
            self.add("GP104", f"{_show(value)} must be {words[validator]} {error.validator_value}", path)
        elif validator in ("minLength", "maxLength"):
            word = "at least" if validator == "minLength" else "at most"
            self.add("GP104", f"{_show(value)} must be {word} {error.validator_value} characters long", path)
        elif validator in ("minItems", "maxItems"):
            word = "at least" if validator == "minItems" else "at most"
            self.add("GP104", f"the list must have {word} {error.validator_value} item(s)", path)
        elif validator == "uniqueItems":
            self.add("GP104", "the list has duplicate items", path)
        elif validator in ("oneOf", "anyOf", "allOf") and error.context:
            self.report(_best_match(error.context))
        else:
            self.add("GP105", error.message, path)


def _form_hint(description: str) -> str:
    # Descriptions of patterned fields end with an example in the form "e.g. ..." — show it,
    # and the largest values when the pattern bounds them ("Largest: ...").
    marker, largest = "e.g. ", "Largest: "
    hints: list[str] = []
    if marker in description:
        hints.append("e.g. " + description.split(marker, 1)[1].rstrip(".").split(")")[0])
    if largest in description:
        hints.append("at most " + description.split(largest, 1)[1].split(" (")[0].rstrip("."))
    return f" ({'; '.join(hints)})" if hints else ""


def _best_match(errors: list[ValidationError]) -> ValidationError:
    from jsonschema import exceptions

    module: Any = exceptions  # best_match's return type is untyped upstream
    return cast("ValidationError", module.best_match(errors))


def _errors(data: Any) -> Iterator[ValidationError]:
    validator: Any = _validator()  # jsonschema's iter_errors overloads are partially untyped
    yield from cast("Iterator[ValidationError]", validator.iter_errors(data))


@cache
def _quick_check() -> Callable[[Any], bool] | None:
    root = schema()
    return compile_schema(root, cast("dict[str, Any]", root.get("$defs", {})))


def schema_diagnostics(data: Any, pos: Pos) -> list[Diagnostic]:
    quick = _quick_check()
    if quick is not None and quick(data):
        return []  # jsonschema would find nothing; it runs only to find and word the errors
    reporter = _SchemaReporter(pos)
    for error in _errors(data):
        reporter.report(error)
    return reporter.out
