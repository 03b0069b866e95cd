"""The fabric zone: one home on the plan, chosen by name not by list position, or pinned by the spec."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from gpuplat.preview import RecordedResource
from gpuplat.render.plan import plan_json
from gpuplat.validate.registry import RULES
from tests.support_aws import compile_model, overlay_with, record

PROD_ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"]


def _prod(tmp_path: Path, zones: list[str], **target: str) -> Path:
    return overlay_with(tmp_path, "prod", target={"endpoint": "private", "zones": zones, **target})


def _snapshot(resources: list[RecordedResource]) -> list[tuple[str, str, Any, Any]]:
    return sorted(
        (r.urn, r.type, json.dumps(r.inputs, sort_keys=True), json.dumps(r.options, sort_keys=True)) for r in resources
    )


def test_the_default_is_the_first_zone_by_name_as_the_example_stacks_had_it() -> None:
    for stack in ("dev", "staging", "prod"):
        model, plan = compile_model(stack)
        assert plan.fabric_zone == "us-east-1a" == model.target.zones[0]


def test_permuting_the_zones_changes_neither_the_plan_nor_a_single_resource(tmp_path: Path) -> None:
    base_model, base_plan = compile_model("prod", _prod(tmp_path, PROD_ZONES))
    base = _snapshot(record(base_model, base_plan, "prod"))
    base_json = plan_json(base_model, base_plan)
    for order in itertools.islice(itertools.permutations(PROD_ZONES), 1, None):
        model, plan = compile_model("prod", _prod(tmp_path, list(order)))
        assert plan.fabric_zone == "us-east-1a"
        assert plan_json(model, plan) == base_json, order
    # Recording is the slow part: the most different order is enough to show nothing moves.
    model, plan = compile_model("prod", _prod(tmp_path, ["us-east-1c", "us-east-1b", "us-east-1a"]))
    assert _snapshot(record(model, plan, "prod")) == base


def test_an_explicit_fabric_zone_moves_fabric_reservations_fsx_and_the_bucket(tmp_path: Path) -> None:
    model, plan = compile_model("prod", _prod(tmp_path, PROD_ZONES, fabricZone="us-east-1b"))
    assert plan.fabric_zone == "us-east-1b"
    assert {r.zone for r in plan.reservations if r.placement_group} == {"us-east-1b"}
    resources = record(model, plan, "prod")
    by_type: dict[str, list[RecordedResource]] = {}
    for r in resources:
        by_type.setdefault(r.type, []).append(r)
    groups = by_type["aws:ec2/placementGroup:PlacementGroup"]
    assert groups and all(g.name.endswith("-us-east-1b") for g in groups)
    subnet = next(r for r in by_type["aws:ec2/subnet:Subnet"] if r.name.endswith("private-us-east-1b"))
    for fs in by_type["aws:fsx/lustreFileSystem:LustreFileSystem"]:
        assert fs.inputs["subnetIds"] == f"{subnet.name}-id"
    # The preview's account maps us-east-1a..c to use1-az4..6.
    (bucket,) = by_type["aws:s3/directoryBucket:DirectoryBucket"]
    assert bucket.inputs["location"]["name"] == "use1-az5"


def _messages(**target: Any) -> list[str]:
    data = {"target": {"provider": "aws", "region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"], **target}}
    return [f.message for f in RULES["GP248"].check(data)]


@pytest.mark.parametrize("zone", ["us-east-1a", "us-east-1b"])
def test_gp248_accepts_a_listed_fabric_zone(zone: str) -> None:
    assert _messages(fabricZone=zone) == []


def test_gp248_refuses_a_fabric_zone_outside_the_zones() -> None:
    (message,) = _messages(fabricZone="us-east-1c")
    assert "us-east-1c is not one of target.zones (us-east-1a, us-east-1b)" in message
