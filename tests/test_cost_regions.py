"""Prices per region: the spec's region's list prices where the catalog read them, us-east-1's
marked estimated where it did not, and Capacity Block rates marked with their age."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuplat.catalog.prices import ON_DEMAND_HOURLY_USD, OTHER_ON_DEMAND_HOURLY_USD, on_demand_price
from gpuplat.catalog.regional_prices import CUT_IN_JUNE_2025, OFFER_FILE_PRICES, SNAPSHOT_ON_DEMAND_HOURLY_USD
from gpuplat.catalog.service_prices import REGIONAL, US_EAST_1, capacity_block_rate, service_price
from gpuplat.plan.types import CostPlan
from tests.test_cost_services import Doc, _block_pool, _cost, _lines

ROOT = Path(__file__).resolve().parent.parent


def _ireland(d: Doc) -> None:
    d["target"]["region"] = "eu-west-1"
    d["target"]["zones"] = ["eu-west-1a", "eu-west-1b"]


def test_a_region_read_is_priced_at_its_own_list() -> None:
    lines = {line.item: line for line in _cost(_ireland).services}
    nat = lines["NAT gateways (2, one per zone)"]
    # eu-west-1 NAT: 2 x 730 h x 0.048 = 70.08 (us-east-1 would be 65.70).
    assert (nat.region, nat.estimated, nat.monthly_usd) == ("eu-west-1", "", pytest.approx(70.08))
    # gp3 0.088 there: 10150 GB x 0.088 = 893.20; endpoints 6 x 2 x 730 x 0.011 = 96.36.
    assert lines["EBS gp3 root volumes (50 GPU x 200 GiB + 3 system x 50 GiB)"].monthly_usd == pytest.approx(893.2)
    assert lines["interface endpoints (6 x 2 zones)"].monthly_usd == pytest.approx(96.36)
    # EKS lists one price for every commercial region: a list price, not an estimate.
    eks = lines["EKS control plane (standard support, 1.36)"]
    assert (eks.region, eks.estimated) == ("eu-west-1", "")


def test_what_the_catalog_has_not_read_for_the_region_is_marked_estimated() -> None:
    cost = _cost(_ireland)
    fsx = {line.item: line for line in cost.services}["FSx for Lustre hot, PERSISTENT_2 1000 MB/s/TiB"]
    assert fsx.region == "us-east-1" and "no eu-west-1 price" in fsx.estimated
    # p5, g6e and g6 were not offered in Ireland when the regional list was read: us-east-1's price
    # stands in, and says why.
    assert all("not offered in eu-west-1" in p.price_estimated for p in cost.pools)

    # The spec's own price is nobody's estimate.
    def own_price(d: Doc) -> None:
        _ireland(d)
        d["procurement"]["prices"] = {"onDemandHourly": {"p5.48xlarge": 60.0}}

    priced = {p.pool: p for p in _cost(own_price).pools}
    assert priced["train"].price_estimated == "" and priced["train"].on_demand_hourly_usd == 60.0
    assert "not offered in eu-west-1" in priced["dev"].price_estimated


def test_gpu_nodes_are_priced_at_the_regions_list() -> None:
    def g5_in_ireland(d: Doc) -> None:
        _ireland(d)
        for pool in d["gpuNodePools"]:
            pool["instanceType"] = "g5.12xlarge"

    cost = _cost(g5_in_ireland)
    assert {(p.on_demand_hourly_usd, p.price_estimated) for p in cost.pools} == {(6.33167, "")}
    system = next(line for line in cost.services if line.item.startswith("system node group"))
    # 3 x 730 h x 0.4494 (m7i.2xlarge in Ireland; 0.4032 in us-east-1).
    assert (system.region, system.estimated, system.monthly_usd) == ("eu-west-1", "", pytest.approx(984.186))
    # The snapshot is undated: its prices are as of the offer file it was checked against, not
    # the date of us-east-1's table.
    assert system.as_of == "2026-09-10" and cost.prices_as_of == "2026-09-10"
    assert _cost(lambda d: None).prices_as_of == "2026-07-20"


def test_catalog_lookups() -> None:
    home = on_demand_price("p5.48xlarge", "us-east-1")
    assert home is not None and (home.usd, home.region, home.estimated) == (55.04, "us-east-1", "")
    p5e = on_demand_price("p5e.48xlarge", "us-east-1")
    assert p5e is not None and p5e.usd == 63.296 and "p5en" in p5e.estimated  # no on-demand list price anywhere
    # Read from AWS's offer file: a list price.
    p4d = on_demand_price("p4d.24xlarge", "eu-west-1")
    assert p4d is not None and (p4d.usd, p4d.region, p4d.estimated) == (23.71569, "eu-west-1", "")
    # The snapshot's pre-cut London price, cut like us-east-1's (98.32 -> 55.04): 127.816 x 0.5598 = 71.552.
    london = on_demand_price("p5.48xlarge", "eu-west-2")
    assert london is not None and london.usd == pytest.approx(71.552)
    assert london.region == "eu-west-2" and "June 2025" in london.estimated
    # Not in the snapshot at all, and a region it does not cover: us-east-1's price, marked.
    small = on_demand_price("p5.4xlarge", "eu-west-2")
    assert small is not None and small.usd == 6.88 and "no eu-west-2 price" in small.estimated
    unread = on_demand_price("p5.48xlarge", "sa-east-1")
    assert unread is not None and unread.region == "us-east-1" and "no sa-east-1 price" in unread.estimated
    assert on_demand_price("no.such", "us-east-1") is None
    assert on_demand_price("no.such", "eu-west-1") is None
    # China and GovCloud list their own prices even for what is uniform in the commercial regions.
    assert service_price("eks-standard", "eu-central-1").estimated == ""
    assert service_price("eks-standard", "cn-north-1").estimated != ""
    # Every regional line names a key us-east-1 has, in the unit us-east-1 uses.
    for region, lines in REGIONAL.items():
        for key, price in lines.items():
            assert price.unit == US_EAST_1[key].unit and price.region == region, (region, key)


def test_the_regional_snapshot_agrees_with_the_reference_table_and_the_offer_file() -> None:
    # Its us-east-1 rows are Karpenter's table wherever no price change came between them, which
    # is what lets its other regions stand for today's list.
    snapshot = SNAPSHOT_ON_DEMAND_HOURLY_USD["us-east-1"]
    reference = {**ON_DEMAND_HOURLY_USD, **OTHER_ON_DEMAND_HOURLY_USD}
    assert set(snapshot) <= set(reference)
    for itype, usd in snapshot.items():
        if itype not in CUT_IN_JUNE_2025:
            assert usd == pytest.approx(reference[itype], abs=1e-4), itype
        else:
            assert usd > reference[itype], itype  # the rows older than the cut
    # The cut was one percentage everywhere: the scaled Irish p4d is the offer file's to a cent.
    ratio = reference["p4d.24xlarge"] / snapshot["p4d.24xlarge"]
    irish = SNAPSHOT_ON_DEMAND_HOURLY_USD["eu-west-1"]["p4d.24xlarge"] * ratio
    assert irish == pytest.approx(OFFER_FILE_PRICES["eu-west-1", "p4d.24xlarge"], abs=0.01)
    for (region, itype), usd in OFFER_FILE_PRICES.items():
        if itype not in CUT_IN_JUNE_2025:
            assert SNAPSHOT_ON_DEMAND_HOURLY_USD[region][itype] == usd, (region, itype)


def test_capacity_block_rates_are_marked_old_and_by_region() -> None:
    assert capacity_block_rate("p5.48xlarge", "us-east-2").estimated == ""  # type: ignore[union-attr]
    assert "us-east-1" in capacity_block_rate("p5.48xlarge", "us-west-2").estimated  # type: ignore[union-attr]
    cost: CostPlan = _cost(_block_pool("p5.48xlarge"))
    (pool,) = cost.pools
    assert pool.reserved_hourly_usd == pytest.approx(39.33)
    assert "2024-12-15" in pool.reserved_price_note and "reprice" in pool.reserved_price_note
    assert "capacity-block-rate-old" in {a.name for a in cost.assumptions}

    def own_rate(d: Doc) -> None:
        _block_pool("p5.48xlarge")(d)
        d["procurement"]["prices"] = {"capacityBlockHourly": {"p5.48xlarge": 31.0}}

    fresh = _cost(own_rate)
    assert fresh.pools[0].reserved_price_note == ""
    assert "capacity-block-rate-old" not in {a.name for a in fresh.assumptions}


def test_plan_cli_shows_the_region_and_every_estimate(tmp_path: Path) -> None:
    overlay = tmp_path / "eu.yaml"
    overlay.write_text("target:\n  region: eu-west-1\n  zones: [eu-west-1a, eu-west-1b]\n", encoding="utf-8")
    run = [sys.executable, "-m", "gpuplat.cli", "plan", "--stack", "dev", "--overlay", str(overlay)]
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    text = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, env=env, check=True).stdout
    assert "eu-west-1 prices as of" in text and "list prices for eu-west-1" in text
    assert "(est.) pool train: us-east-1 list price; p5.48xlarge was not offered in eu-west-1" in text
    assert "$0.048/hour" in text  # the NAT gateway at Ireland's rate
    doc = json.loads(
        subprocess.run([*run, "--format", "json"], cwd=ROOT, capture_output=True, text=True, env=env, check=True).stdout
    )
    cost = doc["cost"]
    assert cost["region"] == "eu-west-1" and "skypilot-catalog" in cost["pricesSource"]
    nat = next(s for s in cost["services"] if s["item"].startswith("NAT gateways ("))
    assert (nat["region"], nat["estimated"], nat["unitUsd"]) == ("eu-west-1", None, 0.048)
    assert all(p["priceEstimated"] for p in cost["pools"])
    assert sum(1 for _ in _lines(_cost(_ireland))) == len(cost["services"])


def test_the_pull_request_comment_names_the_region_and_each_estimate() -> None:
    from gpuplat.model import build_model
    from gpuplat.plan import build_plan
    from gpuplat.render.comment import _cost_section  # pyright: ignore[reportPrivateUsage]
    from gpuplat.render.plan import plan_json
    from tests.test_cost_services import BASE

    doc = json.loads(json.dumps(BASE))
    _ireland(doc)
    model = build_model(doc)
    plan = build_plan(model).plan
    assert plan is not None
    section = _cost_section(plan_json(model, plan), None)
    assert "Prices for `eu-west-1`; " in section and "estimated (not eu-west-1 list prices):" in section
    assert "- estimated, pool train: us-east-1 list price; p5.48xlarge was not offered in eu-west-1" in section
    assert "- estimated, FSx for Lustre hot, PERSISTENT_2 1000 MB/s/TiB: us-east-1 list price" in section
    assert "NAT gateways (2, one per zone)" not in section  # Ireland's NAT price is a list price
    # Each estimate is an item of a list of its own under the sentence that counts them (the first
    # was glued to that sentence, `...list prices):- estimated, ...`, and rendered as its text).
    lines = section.splitlines()
    (intro,) = [i for i, line in enumerate(lines) if line.startswith("Prices for `eu-west-1`; ")]
    announced = int(lines[intro].split("; ", 1)[1].split(" ", 1)[0])
    assert lines[intro].endswith("(not eu-west-1 list prices):") and lines[intro + 1] == ""
    items = lines[intro + 2 : intro + 2 + announced]
    assert len(items) == announced and all(item.startswith("- estimated, ") for item in items), items


def test_a_p5e_block_pool_is_marked_twice() -> None:
    # p5e in us-east-2 as Capacity Blocks: its on-demand price (the all-on-demand comparison) is an
    # estimate everywhere, and its block rate is the page's us-east-2 rate, old.
    def edit(d: Doc) -> None:
        d["target"]["region"] = "us-east-2"
        d["target"]["zones"] = ["us-east-2a", "us-east-2b"]
        _block_pool("p5e.48xlarge")(d)
        pool = d["gpuNodePools"][0]
        pool["markets"] = ["reserved"]
        d["procurement"] = {"reserved": 100, "spot": 0, "onDemand": 0}

    (pool,) = _cost(edit).pools
    assert "p5en" in pool.price_estimated and "no us-east-2 price" in pool.price_estimated
    assert pool.reserved_hourly_usd == pytest.approx(43.26)
    assert "2024-12-15" in pool.reserved_price_note and "estimated" not in pool.reserved_price_note


def test_a_region_move_says_which_region_each_column_is_priced_for() -> None:
    from gpuplat.model import build_model
    from gpuplat.plan import build_plan
    from gpuplat.render.comment import _cost_section  # pyright: ignore[reportPrivateUsage]
    from gpuplat.render.plan import plan_json
    from tests.test_cost_services import BASE

    def priced(doc: Doc) -> dict[str, object]:
        model = build_model(doc)
        plan = build_plan(model).plan
        assert plan is not None
        return plan_json(model, plan)

    base = priced(json.loads(json.dumps(BASE)))
    moved = json.loads(json.dumps(BASE))
    _ireland(moved)
    section = _cost_section(priced(moved), base)
    assert "The base column is priced for `us-east-1`, the head for `eu-west-1`" in section
    assert "The base column is priced" not in _cost_section(base, base)  # no move, no sentence
