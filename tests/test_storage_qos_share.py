"""The storage QoS share: what is guaranteed, how close to the asked share the standard file
system is sized, and the capacity it adds beyond the spec, shown in the plan."""

from __future__ import annotations

import itertools
import json

import pytest

from gpuplat.catalog import fsx
from gpuplat.cli import main
from gpuplat.compile import compile_stack
from gpuplat.render.plan import plan_json, plan_text

SIZES = (fsx.MIN_GIB, *range(fsx.STEP_GIB, 200_000, fsx.STEP_GIB * 7))


@pytest.mark.parametrize("share", [0.5, 0.6, 0.75, 0.8, 0.9, 0.95])
def test_the_standard_file_system_is_the_closest_to_the_share_fsx_sells(share: float) -> None:
    """Critical work keeps at least the share, and no PERSISTENT_2 size and rate would give
    standard work more throughput without cutting into it: the share is met as exactly as FSx's
    sizes allow."""
    for size, rate in itertools.product(SIZES, fsx.THROUGHPUT_PER_TIB):
        critical = fsx.throughput_mbps(size, rate)
        chosen = fsx.standard_file_system(critical, share)
        bound = critical * min(1.0, (1 - share) / share)
        if chosen is None:
            assert fsx.throughput_mbps(fsx.MIN_GIB, 125) > bound + 1e-6
            continue
        standard = fsx.throughput_mbps(*chosen)
        assert critical / (critical + standard) >= share - 1e-9
        better = [
            (s, r)
            for s, r in itertools.product(
                (fsx.MIN_GIB, *range(fsx.STEP_GIB, 400_000, fsx.STEP_GIB)), fsx.THROUGHPUT_PER_TIB
            )
            if standard < fsx.throughput_mbps(s, r) <= bound + 1e-6
        ]
        assert better == [], (size, rate, share, chosen, better[:3])


def test_the_reviewed_spec_gets_exactly_the_share() -> None:
    # 96 TiB at 500 MB/s/TiB, 80 %: 48,000 MB/s critical, 12,000 MB/s standard (12 TiB x 1000).
    critical = fsx.throughput_mbps(fsx.capacity_gib(96_000), 500)
    chosen = fsx.standard_file_system(critical, 0.8)
    assert chosen is not None and chosen == (12_000, 1000)
    assert critical / (critical + fsx.throughput_mbps(*chosen)) == pytest.approx(0.8)


def test_the_plan_shows_the_capacity_beyond_the_spec_and_what_is_kept(capsys: pytest.CaptureFixture[str]) -> None:
    compiled = compile_stack("prod")
    assert compiled.model is not None and compiled.plan is not None
    doc = plan_json(compiled.model, compiled.plan)["storage"]["hot"]
    assert doc["totalCapacityGiB"] == doc["capacityGiB"] + doc["standard"]["capacityGiB"] == 60_000
    assert doc["criticalShareAsked"] == 0.8 and doc["criticalThroughputShare"] >= 0.8
    row = next(line for line in plan_text(compiled.model, compiled.plan).splitlines() if line.startswith("hot (st"))
    assert "beyond storage.hot: +12000 GiB, $7,200/month" in row
    assert "keep 80.0% of the hot throughput (48,000 of 60,000 MB/s; asked >= 80.0%)" in row
    # The same number in the services cost, so the two never disagree.
    assert main(["plan", "--stack", "prod", "--format", "json"]) == 0
    services = json.loads(capsys.readouterr().out)["cost"]["services"]
    line = next(s for s in services if s["item"].startswith("FSx for Lustre hot (standard)"))
    assert line["monthlyUsd"] == pytest.approx(7200)
