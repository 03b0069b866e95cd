"""The schema pass's quick check agrees with jsonschema: True exactly when jsonschema finds nothing."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuplat.spec import load_file
from gpuplat.validate import schema as schema_pass
from gpuplat.validate.schema import _errors, _quick_check, schema, schema_diagnostics
from gpuplat.validate.schema_fast import compile_schema
from tests.test_properties import PROPERTY_SETTINGS, SPECS, _extremes, _get, _load, _mutate, _numeric_paths

ROOT = Path(__file__).resolve().parent.parent
CASE_FILES = sorted((ROOT / "tests" / "cases").glob("*/*/*.yaml")) + sorted((ROOT / "stacks").glob("[!P]*.yaml"))


def _agrees(data: Any) -> None:
    quick = _quick_check()
    assert quick is not None
    assert quick(data) == (not list(_errors(data)))


def test_the_shipped_schema_compiles() -> None:
    assert _quick_check() is not None


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_agrees_on_every_case_and_overlay(path: Path) -> None:
    doc, _ = load_file(path, allow_empty=True)
    if doc is not None:
        _agrees(doc.data)


def test_a_valid_spec_never_reaches_jsonschema(monkeypatch: pytest.MonkeyPatch) -> None:
    doc, _ = load_file(ROOT / "platform" / "platform.yaml")
    assert doc is not None

    def refuse(_data: Any) -> Any:
        raise AssertionError("jsonschema ran on a valid spec")

    monkeypatch.setattr(schema_pass, "_errors", refuse)
    assert schema_diagnostics(doc.data, doc.pos) == []


def test_an_invalid_spec_still_gets_jsonschema_wording() -> None:
    doc, _ = load_file(ROOT / "platform" / "platform.yaml")
    assert doc is not None
    data = copy.deepcopy(doc.data)
    data["gpuNodePools"][0]["nodes"]["max"] = 2.0
    [diagnostic] = schema_diagnostics(data, doc.pos)
    assert diagnostic.code == "GP103" and "expected integer, got number 2.0" in diagnostic.message


def test_unknown_keywords_and_foreign_refs_turn_it_off() -> None:
    assert compile_schema({"type": "object", "patternProperties": {"^x": {}}}, {}) is None
    assert compile_schema({"$ref": "https://example.com/s.json"}, {}) is None
    assert compile_schema({"type": ["string", "null"]}, {}) is None
    assert compile_schema({"enum": [1.5]}, {}) is None


def test_booleans_are_not_integers_and_floats_go_to_jsonschema() -> None:
    check = compile_schema({"enum": [1, 2]}, {})
    assert check is not None
    assert check(1) and not check(True) and not check(1.0)
    unique = compile_schema({"uniqueItems": True}, {})
    assert unique is not None
    assert unique(["a", "b"]) and not unique(["a", "a"]) and not unique([1, 2])


@PROPERTY_SETTINGS
@given(spec=st.sampled_from(sorted(SPECS)), rounds=st.integers(1, 3), draw=st.data())
def test_agrees_on_mutated_specs(spec: str, rounds: int, draw: st.DataObject) -> None:
    data = _load(SPECS[spec])
    for _ in range(rounds):
        data = _mutate(data, draw)
    _agrees(data)


@PROPERTY_SETTINGS
@given(spec=st.sampled_from(sorted(SPECS)), draw=st.data(), rounds=st.integers(1, 3))
def test_agrees_at_and_past_every_bound(spec: str, draw: st.DataObject, rounds: int) -> None:
    data = copy.deepcopy(_load(SPECS[spec]))
    numbers = _numeric_paths(data, schema())
    for _ in range(rounds):
        path, sub = draw.draw(st.sampled_from(numbers), label="number")
        _get(data, path[:-1])[path[-1]] = draw.draw(st.sampled_from(_extremes(sub)), label="value")
    _agrees(data)
