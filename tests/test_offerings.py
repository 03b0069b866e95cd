"""Instance offerings per zone: preflight asks EC2 and stops, naming pool, type and zone, before
creating anything where a pool's instance type is not offered."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from gpuplat.catalog.zones import INDEPENDENTLY_MAPPED_REGIONS, names_are_per_account
from gpuplat.model import Market, PoolReservation, ReservationKind
from gpuplat.preflight.offerings import offering_problem, required_zones
from gpuplat.preview import _invokes
from gpuplat.preview._mockdata import MockContext
from tests.support_aws import compile_model, record

OFFERINGS = "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings"


def test_the_catalog_knows_which_regions_name_zones_per_account() -> None:
    assert names_are_per_account("us-east-1") and not names_are_per_account("us-east-2")
    assert len(INDEPENDENTLY_MAPPED_REGIONS) == 9


def test_the_mock_account_offers_what_is_asked_where_it_is_asked() -> None:
    args = {
        "locationType": "availability-zone",
        "filters": [
            {"name": "instance-type", "values": ["p5.48xlarge"]},
            {"name": "location", "values": ["us-east-1a", "us-east-1b", "us-east-1z"]},
        ],
    }
    answer = _invokes.invoke(OFFERINGS, args, MockContext(region="us-east-1"))
    assert answer["locations"] == ["us-east-1a", "us-east-1b"]  # no zone z in the region
    assert answer["instanceTypes"] == ["p5.48xlarge"] * 2


def test_where_each_pool_must_launch() -> None:
    model, plan = compile_model("prod")
    train, infer, dev = (model.pools_by_name[n] for n in ("train", "infer", "dev"))
    assert required_zones(model, plan, train) == (["us-east-1a"], [])
    must, any_of = required_zones(model, plan, infer)  # reserved nodes spread over the zones
    assert any_of == list(model.target.zones)
    assert must == sorted({r.zone for r in plan.reservations if r.pool == "infer"}) and must
    assert required_zones(model, plan, dev) == ([], list(model.target.zones))


def test_pools_held_only_in_capacity_blocks_launch_where_their_blocks_are() -> None:
    model, plan = compile_model("prod")
    train = model.pools_by_name["train"]
    blocks = replace(train, reservation=PoolReservation(ReservationKind.CAPACITY_BLOCK, ids=("cr-0123456789abcdef0",)))
    assert required_zones(model, plan, replace(blocks, markets=(Market.RESERVED,))) == ([], [])
    # with spot or on-demand nodes too, those still need the type in the fabric zone
    assert required_zones(model, plan, blocks)[0] == ["us-east-1a"]


def test_the_sentences_name_pool_type_and_zone() -> None:
    model, plan = compile_model("prod")
    train, dev = model.pools_by_name["train"], model.pools_by_name["dev"]
    assert offering_problem(model, plan, train, ["us-east-1a"]) is None
    problem = offering_problem(model, plan, train, ["us-east-1b", "us-east-1c"])
    assert problem is not None
    assert problem.startswith("pool train: p5.48xlarge is not offered in us-east-1a (the fabric zone)")
    assert "offers it in us-east-1b, us-east-1c" in problem and "this account's own" in problem
    assert offering_problem(model, plan, dev, ["us-east-1c"]) is None  # Karpenter launches where it exists
    problem = offering_problem(model, plan, dev, [])
    assert problem is not None and "pool dev: g6e.12xlarge is offered in none of the zones" in problem


def test_the_program_stops_before_anything_when_the_fabric_zone_lacks_the_type(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = _invokes._INVOKES[OFFERINGS]  # pyright: ignore[reportPrivateUsage]

    def without_p5_in_a(args: dict[str, Any], ctx: MockContext) -> dict[str, Any]:
        answer = real(args, ctx)
        keep = [
            i
            for i, (t, z) in enumerate(zip(answer["instanceTypes"], answer["locations"], strict=True))
            if not (t == "p5.48xlarge" and z == "us-east-1a")
        ]
        return {**answer, **{k: [answer[k][i] for i in keep] for k in ("instanceTypes", "locations", "locationTypes")}}

    monkeypatch.setitem(_invokes._INVOKES, OFFERINGS, without_p5_in_a)  # pyright: ignore[reportPrivateUsage]
    model, plan = compile_model("dev")
    with pytest.raises(Exception, match=r"pool train: p5\.48xlarge is not offered in us-east-1a"):
        record(model, plan, "dev")
