"""The cost beside the GPU nodes and the reserved market's pricing, on hand-computed numbers."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from gpuplat.model import Market, Platform, build_model
from gpuplat.plan import build_plan
from gpuplat.plan.cost import plan_cost
from gpuplat.plan.types import CostPlan, MarketShare
from gpuplat.render.plan import plan_json, plan_text

ROOT = Path(__file__).resolve().parent.parent
R, S, OD = Market.RESERVED, Market.SPOT, Market.ON_DEMAND
Doc = dict[str, Any]
BASE: Doc = YAML(typ="safe").load((ROOT / "platform" / "platform.yaml").read_text(encoding="utf-8"))


def model(edit: Callable[[Doc], None] | None = None) -> Platform:
    data = copy.deepcopy(BASE)
    if edit is not None:
        edit(data)
    return build_model(data)


def _cost(edit: Callable[[Doc], None] | None = None) -> CostPlan:
    plan = build_plan(model(edit)).plan
    assert plan is not None and plan.cost is not None
    return plan.cost


def _lines(cost: CostPlan) -> dict[str, float | None]:
    return {line.item: line.monthly_usd for line in cost.services}


def test_service_lines_of_the_example() -> None:
    lines = _lines(_cost())
    # 1.36 is in standard support on the calendar's date: 0.10 $/h x 730 h = 73.
    assert lines["EKS control plane (standard support, 1.36)"] == pytest.approx(73.0)
    # One NAT per zone, 2 zones: 2 x 730 h x 0.045 = 65.70, their IPv4 addresses 2 x 730 x 0.005 = 7.30.
    assert lines["NAT gateways (2, one per zone)"] == pytest.approx(65.70)
    assert lines["NAT gateways' public IPv4 addresses (2)"] == pytest.approx(7.30)
    # hot 48 TiB = 48000 GiB at 1000 MB/s/TiB: 48000 x 0.60 = 28800; the standard tenants' file
    # system 12000 GiB at 1000: 12000 x 0.60 = 7200.
    assert lines["FSx for Lustre hot, PERSISTENT_2 1000 MB/s/TiB"] == pytest.approx(28800.0)
    assert lines["FSx for Lustre hot (standard), PERSISTENT_2 1000 MB/s/TiB"] == pytest.approx(7200.0)
    # warm 200 TiB = 204800 GB x 0.11 = 22528.
    assert lines["S3 Express One Zone warm"] == pytest.approx(22528.0)
    # No cold capacity in the spec: a rate, not a number; NAT processing likewise.
    assert lines["S3 Standard cold (per GB stored; set storage.cold.capacityTiB to price it)"] is None
    assert lines["NAT data processed (per GB, not in the total)"] is None
    # The rest of the bill: 3 system m7i.2xlarge x 0.4032 x 730 = 883.008; root volumes of the four
    # pools at max (32 + 8 + 6 + 4 = 50 nodes) x 200 GiB + 3 system x 50 GiB = 10150 GB x 0.08 = 812;
    # 6 interface endpoints x 2 zones x 730 h x 0.01 = 87.60; the secrets and storage KMS keys 2 x 1.
    assert lines["system node group (3 x m7i.2xlarge on demand)"] == pytest.approx(883.008)
    assert lines["EBS gp3 root volumes (50 GPU x 200 GiB + 3 system x 50 GiB)"] == pytest.approx(812.0)
    assert lines["interface endpoints (6 x 2 zones)"] == pytest.approx(87.60)
    assert lines["KMS customer managed keys (2)"] == pytest.approx(2.0)
    # Usage no spec states is on the bill as a rate: logs, endpoint data, S3 Express requests.
    assert lines["control-plane logs ingested (5 log types; per GB, not in the total)"] is None
    assert lines["S3 Express warm PUT requests (not in the total)"] is None
    cost = _cost()
    fixed = 73 + 65.7 + 7.3 + 28800 + 7200 + 22528 + 883.008 + 812 + 87.6 + 2
    assert cost.services_monthly_usd == pytest.approx(fixed)
    assert cost.total_monthly_usd == pytest.approx(cost.monthly_usd + fixed)
    # us-east-1 is the catalog's own list: nothing is estimated.
    assert cost.region == "us-east-1"
    assert not [line.item for line in cost.services if line.estimated]
    assert not [p.pool for p in cost.pools if p.price_estimated]


def test_cold_capacity_and_extended_support_priced() -> None:
    def edit(d: Doc) -> None:
        d["storage"]["cold"]["capacityTiB"] = 100
        d["target"]["kubernetesVersion"] = "1.33"

    lines = _lines(_cost(edit))
    # 100 TiB = 102400 GB x 0.023 = 2355.20; 1.33 is in extended support on the calendar's date:
    # 0.60 $/h x 730 h = 438.
    assert lines["S3 Standard cold"] == pytest.approx(2355.20)
    assert lines["EKS control plane (extended support, 1.33)"] == pytest.approx(438.0)


def _block_pool(instance: str, kind: str = "capacity-block") -> Callable[[Doc], None]:
    def edit(d: Doc) -> None:
        pool = d["gpuNodePools"][0] | {"nodes": {"min": 4, "max": 10}, "instanceType": instance}
        pool["reservation"] = {"kind": kind, "tags": {"gpuplat-pool": "train"}}
        d["gpuNodePools"] = [pool]

    return edit


def test_capacity_block_reserved_nodes_at_the_block_rate() -> None:
    m = model(_block_pool("p5.48xlarge"))
    cost = plan_cost(m, [{R: MarketShare(3, 24), S: MarketShare(3, 24), OD: MarketShare(4, 32)}])
    assert cost is not None
    # 3 nodes x 39.33 $/h (the catalog's Capacity Block rate) x 730 h = 86132.70, not 3 x 55.04 x 0.65 x 730.
    assert cost.pools[0].monthly_usd[R] == pytest.approx(86132.70)
    assert cost.pools[0].reserved_kind == "capacity-block"
    assert [a.name for a in cost.assumptions] == ["capacity-block-rate-old", "capacity-block-continuous"]


def test_capacity_block_without_a_rate_falls_back_to_on_demand_and_says_so() -> None:
    m = model(_block_pool("p5en.48xlarge"))
    cost = plan_cost(m, [{R: MarketShare(3, 24), S: MarketShare(3, 24), OD: MarketShare(4, 32)}])
    assert cost is not None
    # 3 x 63.296 x 730 = 138618.24: the on-demand rate, named as an assumption.
    assert cost.pools[0].monthly_usd[R] == pytest.approx(138618.24)
    assert "capacity-block-rate-unknown" in [a.name for a in cost.assumptions]


def test_reserved_discount_is_a_named_assumption_in_text_and_json() -> None:
    m = model()
    plan = build_plan(m).plan
    assert plan is not None
    doc = plan_json(m, plan)
    names = [a["name"] for a in doc["cost"]["assumptions"]]
    assert names == ["reserved-savings-plan"]
    assert doc["cost"]["assumptions"][0]["rate"] == 0.35
    assert doc["cost"]["totalMonthlyUsd"] == pytest.approx(
        doc["cost"]["monthlyUsd"] + doc["cost"]["servicesMonthlyUsd"]
    )
    text = plan_text(m, plan)
    assert "assumption reserved-savings-plan (35 %)" in text
    assert "Savings Plan that the platform does not buy" in text
    assert "S3 Express One Zone warm" in text and "https://aws.amazon.com/fsx/lustre/pricing/" in text
