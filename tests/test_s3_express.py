"""The warm tier (S3 Express One Zone) only where AWS offers it: `check` refuses regions without
it and spec-named AZ IDs outside it; for a zone name the program resolves the account's AZ ID
and stops with a sentence before creating anything in a zone without S3 Express."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplat.catalog.regions import REGIONS
from gpuplat.catalog.s3express import S3_EXPRESS_ZONE_IDS, s3_express_problem
from gpuplat.preview._invokes import _availability_zones  # pyright: ignore[reportPrivateUsage]
from gpuplat.preview._mockdata import MockContext
from gpuplat.validate.registry import RULES
from tests.support_aws import ROOT, compile_model, of_type, overlay_with, record


def _data(region: str, warm: dict[str, Any]) -> dict[str, Any]:
    return {"target": {"provider": "aws", "region": region}, "storage": {"warm": warm}}


def _messages(code: str, data: dict[str, Any]) -> list[str]:
    return [f.message for f in RULES[code].check(data)]


@pytest.mark.parametrize("region", sorted(REGIONS))
def test_gp246_refuses_a_warm_tier_exactly_where_s3_express_is_missing(region: str) -> None:
    fires = bool(_messages("GP246", _data(region, {"capacityTiB": 1})))
    assert fires == (region not in S3_EXPRESS_ZONE_IDS)


def test_gp247_checks_a_spec_named_zone_id() -> None:
    assert _messages("GP247", _data("us-east-1", {"capacityTiB": 1, "zoneId": "use1-az5"})) == []
    (message,) = _messages("GP247", _data("us-east-1", {"capacityTiB": 1, "zoneId": "use1-az1"}))
    assert "use1-az4, use1-az5, use1-az6" in message


def test_the_deploy_time_sentence() -> None:
    assert s3_express_problem("us-west-2", "us-west-2b", "usw2-az3") is None
    problem = s3_express_problem("us-east-1", "us-east-1d", "use1-az1")
    assert problem is not None and "use1-az1" in problem and "storage.warm.zoneId" in problem


@pytest.mark.parametrize("region", sorted(S3_EXPRESS_ZONE_IDS))
def test_the_mock_account_maps_its_first_zone_to_an_s3_express_id(region: str) -> None:
    answer = _availability_zones({}, MockContext(region=region))
    assert answer["zoneIds"][0] in S3_EXPRESS_ZONE_IDS[region]
    assert len(set(answer["zoneIds"])) == len(answer["names"])


def test_the_program_stops_when_the_fabric_zone_has_no_s3_express(tmp_path: Path) -> None:
    # The mock account maps us-east-1d to use1-az1, where S3 Express does not run.
    overlay = overlay_with(tmp_path, "dev", target={"zones": ["us-east-1d", "us-east-1e"], "endpoint": "public"})
    model, plan = compile_model("dev", overlay)
    with pytest.raises(Exception, match=r"us-east-1d is use1-az1 in this AWS account"):
        record(model, plan, "dev")


def test_a_spec_named_zone_id_places_the_bucket(tmp_path: Path) -> None:
    storage = yaml.safe_load((ROOT / "stacks" / "dev.yaml").read_text(encoding="utf-8"))["storage"]
    storage.setdefault("warm", {})["zoneId"] = "use1-az6"  # the overlay merges into the spec's warm tier
    target = {"zones": ["us-east-1d", "us-east-1e"], "endpoint": "public"}
    path = overlay_with(tmp_path, "dev", target=target, storage=storage)
    model, plan = compile_model("dev", path)
    (bucket,) = of_type(record(model, plan, "dev"), "aws:s3/directoryBucket:DirectoryBucket")
    assert bucket.inputs["location"]["name"] == "use1-az6"
    assert bucket.inputs["bucket"].endswith("--use1-az6--x-s3")
