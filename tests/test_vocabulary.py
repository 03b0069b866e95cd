"""The spec's vocabulary (gpuplat/vocabulary.py) and the schema say the same thing.

The enums are written in vocabulary.py and the schema; the defaults only in the schema (the
vocabulary reads them), so what can still drift is: an enum member added on one side, and a
field's description ("Default: soft.") left behind when its `default` changes. Both fail here.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from gpuplat import view
from gpuplat import vocabulary as vocab
from gpuplat.catalog import SHARING_OVERHEAD
from gpuplat.model.workloads import SHARDING_STAGES
from gpuplat.validate.schema import schema

SCHEMA: dict[str, Any] = json.loads(vocab.SCHEMA_PATH.read_text(encoding="utf-8"))


def _enum(definition: str, field: str | None = None) -> list[Any]:
    node = SCHEMA["$defs"][definition]
    return node["properties"][field]["enum"] if field is not None else node["enum"]


def test_the_validator_and_the_vocabulary_read_one_schema() -> None:
    assert schema() == SCHEMA


def test_enums_are_the_schemas() -> None:
    assert list(vocab.Provider) == _enum("target", "provider")
    assert list(vocab.Market) == _enum("market")
    assert list(vocab.SharingMode) == _enum("sharing", "mode")
    assert list(vocab.GpuSchedulerPolicy) == _enum("gpuScheduler", "policy")
    assert list(SHARDING_STAGES) == _enum("referenceWorkload", "sharding")
    assert vocab.HARD_ISOLATION in _enum("tenant", "isolation")
    assert set(_enum("fabric", "transport")) > vocab.RDMA_TRANSPORTS


def test_market_keys_are_the_procurement_sections() -> None:
    procurement = SCHEMA["$defs"]["procurement"]
    assert [m.procurement_key for m in vocab.PROCUREMENT_ORDER] == procurement["required"]
    assert sorted(vocab.MARKET_ORDER) == sorted(vocab.PROCUREMENT_ORDER) == sorted(vocab.Market)
    assert set(vocab.DEFAULT_MIX) == set(vocab.Market) and sum(vocab.DEFAULT_MIX.values()) == 100


def test_every_sharing_mode_has_a_catalog_overhead() -> None:
    assert set(SHARING_OVERHEAD) == set(vocab.SharingMode)
    assert vocab.SHARED_MODES < vocab.REPLICA_MODES < set(vocab.SharingMode)
    assert vocab.DEFAULT_SHARING_MODE in vocab.SharingMode


def test_isolation_permits() -> None:
    assert not vocab.isolation_permits("hard", "mps")
    assert not vocab.isolation_permits("hard", vocab.SharingMode.TIME_SLICING)
    assert vocab.isolation_permits("hard", "mig") and vocab.isolation_permits("hard", "fractional")
    assert all(vocab.isolation_permits("soft", m) for m in vocab.SharingMode)


# ---- descriptions tell the default -------------------------------------------------------------


def _shown(value: Any) -> str:
    """A default as descriptions write it: YAML flow style."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_shown(v)}" for k, v in value.items()) + "}"
    return str(value)


def _defaults(schema: Mapping[str, Any]) -> Iterator[tuple[str, Any, str]]:
    for name, definition in schema["$defs"].items():
        for field, node in definition.get("properties", {}).items():
            if "default" in node:
                yield f"{name}/{field}", node["default"], node.get("description", "")


def stale_descriptions(schema: Mapping[str, Any]) -> list[str]:
    """Fields whose description does not say `Default: <the default>.` (or `... (why)`)."""
    return [
        f"{where}: default {_shown(default)!r}, description {description!r}"
        for where, default, description in _defaults(schema)
        if not re.search(rf"Default: {re.escape(_shown(default))}(\.| \()", description)
    ]


def test_every_description_tells_its_default() -> None:
    assert stale_descriptions(SCHEMA) == []


@pytest.mark.parametrize(
    ("definition", "field", "value"),
    [("tenant", "isolation", "hard"), ("autoscaling", "scaleUpAbove", 0.95), ("referenceWorkload", "batch", 4)],
)
def test_probe_a_changed_default_alone_fails(definition: str, field: str, value: Any) -> None:
    """Changing a `default` without its description (the probe of issue 12) is caught."""
    changed = copy.deepcopy(SCHEMA)
    changed["$defs"][definition]["properties"][field]["default"] = value
    assert [s.split(":")[0] for s in stale_descriptions(changed)] == [f"{definition}/{field}"]


def test_defaults_are_read_from_the_schema() -> None:
    assert SCHEMA["$defs"]["tenant"]["properties"]["isolation"]["default"] == vocab.DEFAULT_ISOLATION
    assert SCHEMA["$defs"]["autoscaling"]["properties"]["scaleUpAbove"]["default"] == vocab.DEFAULT_SCALE_UP_ABOVE
    assert list(vocab.DEFAULT_MARKETS) == SCHEMA["$defs"]["pool"]["properties"]["markets"]["default"]


# ---- the spec view the rules and the model share ------------------------------------------------

MODES: dict[str, str | None] = {"train": "exclusive", "notebooks": "mps", "infer": "mig"}


@pytest.mark.parametrize(
    ("tenant", "pools"),
    [
        ({}, ["train", "notebooks", "infer"]),  # soft by default: every pool
        ({"isolation": "hard"}, ["train", "infer"]),  # never MPS / time-slicing
        ({"pools": ["infer", "train"]}, ["infer", "train"]),  # the allow-list, in its order
        ({"pools": ["infer", "nope"]}, ["infer"]),  # an unknown name grants nothing (GP281 reports it)
        ({"isolation": "hard", "pools": ["notebooks", "train"]}, ["train"]),  # GP282 reports notebooks
        ({"pools": []}, ["train", "notebooks", "infer"]),
    ],
)
def test_allowed_pools(tenant: dict[str, Any], pools: list[str]) -> None:
    assert view.allowed_pools(tenant, MODES) == pools


def test_pool_reads_apply_the_schemas_defaults() -> None:
    assert view.sharing_mode({}) == vocab.DEFAULT_SHARING_MODE
    assert view.markets({}) == vocab.DEFAULT_MARKETS
    assert view.markets({"markets": ["spot", "bogus"]}) == (vocab.Market.SPOT,)
    assert view.sharing_mode({"sharing": {"mode": 3}}) is None  # malformed: the schema pass reports it
    gpu = view.pool_gpu(vocab.Provider.AWS, {"instanceType": "p5.48xlarge"})
    assert gpu is not None and (gpu.model.name, gpu.count) == ("H100-SXM-80GB", 8)
    assert view.pool_gpu(vocab.Provider.KUBERNETES, {"gpu": {"model": "H100-SXM-80GB", "count": 0}}) is None
