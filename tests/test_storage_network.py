"""The storage tiers' traffic stays off the NAT: gateway endpoints for s3 (cold) and s3express (warm)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpuplat.preview import RecordedResource
from tests.support_aws import ROOT, STACKS, compile_model, of_type, overlay_with, record, recorded


def _gateways(resources: tuple[RecordedResource, ...] | list[RecordedResource]) -> dict[str, RecordedResource]:
    endpoints = of_type(resources, "aws:ec2/vpcEndpoint:VpcEndpoint")
    return {r.inputs["serviceName"]: r for r in endpoints if r.inputs["vpcEndpointType"] == "Gateway"}


@pytest.mark.parametrize("stack", STACKS)
def test_cold_and_warm_tiers_reach_s3_through_gateway_endpoints_on_every_private_route_table(stack: str) -> None:
    model, _, resources = recorded(stack)
    gateways = _gateways(resources)
    assert sorted(gateways) == ["com.amazonaws.us-east-1.s3", "com.amazonaws.us-east-1.s3express"]
    private_tables = sorted(
        f"{r.name}-id" for r in of_type(resources, "aws:ec2/routeTable:RouteTable") if "-private-" in r.name
    )
    assert len(private_tables) == len(model.target.zones)
    for endpoint in gateways.values():
        assert sorted(endpoint.inputs["routeTableIds"]) == private_tables


def test_no_s3express_endpoint_without_a_warm_tier(tmp_path: Path) -> None:
    storage = yaml.safe_load((ROOT / "stacks" / "dev.yaml").read_text(encoding="utf-8"))["storage"]
    storage["warm"] = None  # null in an overlay drops the key
    model, plan = compile_model("dev", overlay_with(tmp_path, "dev", storage=storage))
    assert model.storage.warm is None
    assert sorted(_gateways(record(model, plan, "dev"))) == ["com.amazonaws.us-east-1.s3"]
