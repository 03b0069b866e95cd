"""Kubernetes versions against the EKS calendar: `check` refuses what CreateCluster refuses, warns
on paid extended support, the plan says where the version stands and as of when, and the cluster
states its upgrade policy."""

from __future__ import annotations

from typing import Any

import pytest

from gpuplat.catalog.eks import EKS_CALENDAR_AS_OF, EKS_VERSIONS, offered, support_phase
from gpuplat.render.plan import plan_json, plan_text
from gpuplat.validate.registry import RULES
from tests.support_aws import compile_model, of_type, recorded


def _codes(version: str) -> list[str]:
    data: dict[str, Any] = {"target": {"provider": "aws", "region": "us-east-1", "kubernetesVersion": version}}
    return [code for code in ("GP245", "GP300") for _ in RULES[code].check(data)]


@pytest.mark.parametrize(
    ("version", "codes"),
    [
        ("1.27", ["GP245"]),  # older than the table
        ("1.29", ["GP245"]),  # extended support ended 2026-03-23
        ("1.30", ["GP245"]),  # ended 2026-07-23
        ("1.31", ["GP245"]),  # ended 2026-11-26
        ("1.32", ["GP300"]),  # extended until 2027-03-23
        ("1.33", ["GP300"]),
        ("1.34", ["GP300"]),  # standard ended 2026-12-02
        ("1.35", []),  # standard until 2027-03-27
        ("1.36", []),  # released 2026-06, standard support
        ("1.37", ["GP300"]),  # newer than the calendar knows
    ],
)
def test_versions_against_the_calendar(version: str, codes: list[str]) -> None:
    assert _codes(version) == codes


def test_the_calendar_is_ordered_and_each_phase_follows_the_last() -> None:
    minors = list(EKS_VERSIONS)
    assert minors == sorted(minors, key=lambda m: int(m.split(".")[1]))
    for v in EKS_VERSIONS.values():
        assert v.standard_end < v.extended_end
    # Extended billing starts on the day standard support ends; no cluster on the day extended ends.
    assert support_phase("1.35", "2027-03-26") == "standard"
    assert support_phase("1.35", "2027-03-27") == "extended"
    assert support_phase("1.35", "2028-03-26") == "extended"
    assert support_phase("1.35", "2028-03-27") == "ended"
    assert offered() == ("1.32", "1.33", "1.34", "1.35", "1.36")


def test_the_plan_shows_the_version_phase_and_calendar_date() -> None:
    model, plan = compile_model("prod")
    doc = plan_json(model, plan)["kubernetes"]
    version = model.target.kubernetes_version
    assert doc["version"] == version
    assert doc["eksSupport"] == support_phase(version)
    assert doc["calendarAsOf"] == EKS_CALENDAR_AS_OF
    assert doc["extendedSupportEnds"] == EKS_VERSIONS[version].extended_end
    assert f"EKS calendar as of {EKS_CALENDAR_AS_OF}" in plan_text(model, plan)


def test_the_cluster_states_its_upgrade_policy() -> None:
    _, _, resources = recorded("prod")
    (eks,) = of_type(resources, "aws:eks/cluster:Cluster")
    assert eks.inputs["upgradePolicy"] == {"supportType": "EXTENDED"}
