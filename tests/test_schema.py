"""Tests of schemas/platform.schema.json, the JSON Schema (2020-12) of the merged platform spec.

The schema is pass 1 of validation and also what editors show through the
`# yaml-language-server: $schema=...` comment, so besides accepting the documented examples and
rejecting bad input it must be strict (`additionalProperties` on every object) and self-documenting
(a `description` on every property).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_PATH = ROOT / "schemas" / "platform.schema.json"
FIXTURES = Path(__file__).resolve().parent / "fixtures"

Doc = dict[str, Any]


def _load_yaml(path: Path) -> Doc:
    data = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def schema() -> Doc:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def validator(schema: Doc) -> Draft202012Validator:
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


@pytest.fixture()
def design_example() -> Doc:
    return _load_yaml(FIXTURES / "design_example.yaml")


def _errors(validator: Draft202012Validator, doc: Doc) -> list[ValidationError]:
    return sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))


def _walk(node: Any, pointer: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema object in the document, with its JSON pointer."""
    if isinstance(node, dict):
        yield pointer, node
        for key, value in node.items():
            if key in ("properties", "$defs"):
                for name, sub in value.items():
                    yield from _walk(sub, f"{pointer}/{key}/{name}")
            elif key in ("items", "additionalProperties", "propertyNames"):
                yield from _walk(value, f"{pointer}/{key}")
    elif isinstance(node, list):  # not expected: no prefixItems / allOf in this schema
        for index, sub in enumerate(node):
            yield from _walk(sub, f"{pointer}/{index}")


# ---------------------------------------------------------------- the schema itself


def test_schema_is_a_valid_draft_2020_12_schema(schema: Doc) -> None:
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == "https://gpuplat.dev/schemas/platform.schema.json"
    assert schema["title"] and schema["description"]


def test_every_object_schema_sets_additional_properties(schema: Doc) -> None:
    missing = [
        pointer
        for pointer, node in _walk(schema)
        if (node.get("type") == "object" or "properties" in node) and "additionalProperties" not in node
    ]
    assert missing == []


def test_every_object_with_properties_is_closed(schema: Doc) -> None:
    # Maps (tags, labels, layout, prices) declare a value schema instead; records are closed.
    open_records = [
        pointer
        for pointer, node in _walk(schema)
        if "properties" in node and node.get("additionalProperties") is not False
    ]
    assert open_records == []


def test_every_property_has_a_description(schema: Doc) -> None:
    undocumented = [
        f"{pointer}/properties/{name}"
        for pointer, node in _walk(schema)
        for name, sub in node.get("properties", {}).items()
        if not (isinstance(sub.get("description"), str) and sub["description"].strip())
    ]
    assert undocumented == []


def test_no_combinators(schema: Doc) -> None:
    # Cross-field rules live in the semantic pass; oneOf/anyOf/if give poor error messages.
    banned = {"oneOf", "anyOf", "allOf", "not", "if", "then", "else", "dependentSchemas"}
    used = [(pointer, key) for pointer, node in _walk(schema) for key in node if key in banned]
    assert used == []


def test_every_ref_resolves(schema: Doc) -> None:
    refs = [node["$ref"] for _, node in _walk(schema) if "$ref" in node]
    assert refs
    for ref in refs:
        assert ref.startswith("#/$defs/"), ref
        assert ref.removeprefix("#/$defs/") in schema["$defs"], ref


def test_every_default_is_valid_for_its_own_schema(schema: Doc) -> None:
    checked = 0
    for pointer, node in _walk(schema):
        if "default" in node:
            sub = {**node, "$defs": schema["$defs"]}
            errors = list(Draft202012Validator(sub).iter_errors(node["default"]))
            assert errors == [], f"{pointer}: {[e.message for e in errors]}"
            checked += 1
    assert checked >= 10


def test_remove_is_not_part_of_the_merged_spec(schema: Doc) -> None:
    for name in ("pool", "tenant"):
        assert "remove" not in schema["$defs"][name]["properties"]


# ---------------------------------------------------------------- valid documents


def test_design_example_validates(validator: Draft202012Validator, design_example: Doc) -> None:
    assert [e.message for e in _errors(validator, design_example)] == []


def test_kubernetes_example_validates(validator: Draft202012Validator) -> None:
    doc = _load_yaml(FIXTURES / "kubernetes_example.yaml")
    assert doc["target"]["provider"] == "kubernetes"
    assert "procurement" not in doc
    assert doc["network"]["fabric"]["transport"] == "roce"
    assert all("gpu" in pool and "nodeSelector" in pool for pool in doc["gpuNodePools"])
    assert [e.message for e in _errors(validator, doc)] == []


def test_limits_are_inclusive(validator: Draft202012Validator, design_example: Doc) -> None:
    doc = design_example
    doc["metadata"]["name"] = "a" * 20
    doc["gpuNodePools"][0]["name"] = "p" + "0" * 19
    doc["tenants"][0]["name"] = "t" * 30
    doc["tenants"][0]["pools"] = ["p" + "0" * 19]
    doc["autoscaling"]["window"] = "90s"
    doc["autoscaling"]["cooldown"] = "1h"
    doc["observability"]["retention"] = "1y"
    doc["procurement"]["prices"] = {"onDemandHourly": {"p5.48xlarge": 55.04}, "asOf": "2025-06-01"}
    doc["tenants"][0]["principals"] = [
        "arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_ML_0123abcd",
        "arn:aws-us-gov:iam::123456789012:user/ops@example.com",
    ]
    assert [e.message for e in _errors(validator, doc)] == []


# ---------------------------------------------------------------- invalid documents


Path_ = tuple[str | int, ...]
DELETE = object()  # value sentinel: remove the key instead of setting it


def _mutated(doc: Doc, path: Path_, value: Any) -> Doc:
    doc = copy.deepcopy(doc)
    node: Any = doc
    for key in path[:-1]:
        node = node[key]
    if value is DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return doc


def _case(case_id: str, path: Path_, value: Any, keyword: str, at: Path_ | None = None) -> Any:
    """Set `path` to `value`; expect exactly one `keyword` error, at `at` (default: `path`)."""
    return pytest.param(path, value, keyword, path if at is None else at, id=case_id)


POOL0 = ("gpuNodePools", 0)

NEGATIVE = [
    _case("unknown-top-level-key", ("observabilty",), {"retention": "15d"}, "additionalProperties", ()),
    _case(
        "unknown-nested-key",
        ("gpuNodePools", 1, "sharing", "profle"),
        "all-1g.10gb",
        "additionalProperties",
        ("gpuNodePools", 1, "sharing"),
    ),
    _case(
        "leftover-pool-remove",
        ("gpuNodePools", 2, "remove"),
        True,
        "additionalProperties",
        ("gpuNodePools", 2),
    ),
    _case("leftover-tenant-remove", ("tenants", 1, "remove"), True, "additionalProperties", ("tenants", 1)),
    _case("wrong-enum-sharing-mode", (*POOL0, "sharing", "mode"), "vgpu", "enum"),
    _case("wrong-enum-market", (*POOL0, "markets", 1), "preemptible", "enum"),
    _case("wrong-enum-link-speed", ("network", "fabric", "linkGbps"), 300, "enum"),
    _case("wrong-const-api-version", ("apiVersion",), "gpuplat/v2", "const"),
    _case("wrong-type-nodes-min", (*POOL0, "nodes", "min"), "4", "type"),
    _case("wrong-type-k8s-version-float", ("target", "kubernetesVersion"), 1.33, "type"),
    _case("wrong-type-fabric-flag", (*POOL0, "fabric"), "yes", "type"),
    _case("platform-name-too-long", ("metadata", "name"), "a" * 21, "maxLength"),
    _case("pool-name-too-long", (*POOL0, "name"), "training-pool-number1", "maxLength"),
    _case("tenant-name-too-long", ("tenants", 0, "name"), "t" * 31, "maxLength"),
    _case("pool-name-not-dns", (*POOL0, "name"), "Train_1", "pattern"),
    _case("duration-with-space", ("autoscaling", "window"), "5 min", "pattern"),
    _case("duration-zero", ("autoscaling", "cooldown"), "0m", "pattern"),
    _case("duration-no-unit", ("autoscaling", "cooldown"), "600", "pattern"),
    _case("retention-bad-unit", ("observability", "retention"), "15m", "pattern"),
    _case("missing-provider", ("target", "provider"), DELETE, "required", ("target",)),
    _case("missing-pools", ("gpuNodePools",), DELETE, "required", ()),
    _case("no-pools", ("gpuNodePools",), [], "minItems"),
    _case("duplicate-market", ("gpuNodePools", 3, "markets"), ["on-demand", "on-demand"], "uniqueItems"),
    _case("utilization-above-one", ("autoscaling", "scaleUpAbove"), 80, "maximum"),
    _case("zero-capacity", ("storage", "hot", "capacityTiB"), 0, "exclusiveMinimum"),
    _case(
        "bad-price-date",
        ("procurement", "prices"),
        {"asOf": "2025-02-30"},
        "format",
        ("procurement", "prices", "asOf"),
    ),
    _case("bad-cidr", ("network", "vpcCidr"), "10.40.0.0/33", "pattern"),
    # EKS access entries take the role's ARN; a session's (sts assumed-role) is refused.
    _case(
        "principal-assumed-role",
        ("tenants", 0, "principals"),
        ["arn:aws:sts::123456789012:assumed-role/admins/alice"],
        "pattern",
        ("tenants", 0, "principals", 0),
    ),
    _case(
        "principal-no-account",
        ("tenants", 0, "principals"),
        ["arn:aws:iam:::role/x"],
        "pattern",
        ("tenants", 0, "principals", 0),
    ),
    _case("principals-empty", ("tenants", 0, "principals"), [], "minItems"),
]


@pytest.mark.parametrize(("path", "value", "keyword", "at"), NEGATIVE)
def test_invalid_documents_are_rejected(
    validator: Draft202012Validator, design_example: Doc, path: Path_, value: Any, keyword: str, at: Path_
) -> None:
    errors = _errors(validator, _mutated(design_example, path, value))
    found = [(e.validator, tuple(e.absolute_path)) for e in errors]
    assert found == [(keyword, at)], [e.message for e in errors]


def _resolved(node: dict[str, Any], schema: Doc) -> dict[str, Any]:
    if "$ref" in node:
        return {**schema["$defs"][node["$ref"].removeprefix("#/$defs/")], **node}
    return node


def test_every_number_has_an_upper_bound(schema: Doc) -> None:
    """Unbounded numbers crashed the planner (int -> float overflow) and reached AWS and
    Prometheus as values they reject. Every number is bounded, by the schema (its description
    saying by what) or, where the bound depends on the mode or provider, by a named rule."""
    by_rule = {"sharing/properties/replicas"}  # 2..48, GP206
    unbounded = []
    for pointer, node in _walk(schema):
        full = _resolved(node, schema)
        if full.get("type") not in ("integer", "number") or "enum" in full:
            continue
        if any(pointer.endswith(suffix) for suffix in by_rule):
            continue
        if "maximum" not in full and "exclusiveMaximum" not in full:
            unbounded.append(pointer)
        elif "description" in node:
            bound = full.get("maximum", full.get("exclusiveMaximum"))
            shown = {str(bound), f"{bound:,}", str(bound).removesuffix(".0")}
            assert any(s in node["description"] for s in shown), (pointer, bound)
    assert unbounded == []
    for name in ("duration", "retention"):  # strings of digits: bounded by the pattern
        assert "{0," in schema["$defs"][name]["pattern"] and "Largest: " in schema["$defs"][name]["description"]


def test_many_unknown_keys_are_reported_in_linear_time() -> None:
    import time

    from gpuplat.spec import parse_text
    from gpuplat.validate import validate

    text = "".join(f"k{i}: {i}\n" for i in range(3000))
    doc, _ = parse_text(text, "f.yaml")
    assert doc is not None
    start = time.perf_counter()
    diags = validate(doc.data, doc.pos)
    assert sum(d.code == "GP101" for d in diags) == 3000
    assert time.perf_counter() - start < 5  # one report per key: 9 million before
