"""What a tenant's namespace admits and reaches: the LimitRange, Pod Security with the RDMA
exception, the network policies and who the RoleBinding's group is.

The admission checks are small models of the API server's own: LimitRanger defaulting plus
pod validation, and the emitted ValidatingAdmissionPolicy's CEL run against sample pods.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tests.support_k8s import STACKS, by_kind, recorded

SPECS = ("kubernetes", *STACKS)

_SUFFIX = {"m": Decimal("0.001"), **{s: Decimal(2 ** (10 * (i + 1))) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti"))}}


def quantity(text: str) -> Decimal:
    for suffix, factor in _SUFFIX.items():
        if text.endswith(suffix):
            return Decimal(text.removesuffix(suffix)) * factor
    return Decimal(text)


def admit_container(items: list[dict[str, Any]], resources: dict[str, dict[str, str]]) -> list[str]:
    """Why the API server would refuse a container under these LimitRange items ([] = admitted).

    In order: pod defaulting (a limit without a request makes the request equal to the limit),
    LimitRanger defaulting (defaultRequest / default fill what is unset), LimitRanger validation
    (min, max, maxLimitRequestRatio) and pod validation (a request above its limit).
    """
    requests = dict(resources.get("requests", {}))
    limits = dict(resources.get("limits", {}))
    for name, value in limits.items():
        requests.setdefault(name, value)
    problems: list[str] = []
    for item in (i for i in items if i["type"] == "Container"):
        for name, value in item.get("defaultRequest", {}).items():
            requests.setdefault(name, value)
        for name, value in item.get("default", {}).items():
            limits.setdefault(name, value)
        for name, low in item.get("min", {}).items():
            if name not in requests or quantity(requests[name]) < quantity(low):
                problems.append(f"{name} request below min {low}")
        for name, high in item.get("max", {}).items():
            if name not in limits or quantity(limits[name]) > quantity(high):
                problems.append(f"{name} limit above max {high}")
        for name, ratio in item.get("maxLimitRequestRatio", {}).items():
            limit, request = limits.get(name), requests.get(name)
            if limit and request and quantity(limit) > quantity(request) * quantity(ratio):
                problems.append(f"{name} limit/request above {ratio}")
    problems += [
        f"{name} request {value} above limit {limits[name]}"
        for name, value in requests.items()
        if name in limits and quantity(value) > quantity(limits[name])
    ]
    return problems


def _limit_items(which: str, tenant: str) -> list[dict[str, Any]]:
    _, _, resources = recorded(which)
    ranges = [r for r in by_kind(resources, "LimitRange") if r["metadata"]["namespace"] == tenant]
    assert len(ranges) == 1
    return ranges[0]["spec"]["limits"]


def test_the_limit_range_model_rejects_what_the_api_server_rejects() -> None:
    old = [{"type": "Container", "default": {"cpu": "2", "memory": "8Gi"}, "defaultRequest": {"cpu": "500m"}}]
    assert admit_container(old, {"requests": {"cpu": "32", "memory": "512Gi"}}) == [
        "cpu request 32 above limit 2",
        "memory request 512Gi above limit 8Gi",
    ]
    assert admit_container([{"type": "Container", "max": {"cpu": "4"}}], {"limits": {"cpu": "8"}})
    assert admit_container(old, {"requests": {"cpu": "1"}}) == []


@pytest.mark.parametrize("which", SPECS)
def test_a_big_container_passes_the_limit_range(which: str) -> None:
    model, _, _ = recorded(which)
    for tenant in model.tenants:
        items = _limit_items(which, tenant.name)
        big = {"requests": {"cpu": "32", "memory": "512Gi"}}
        assert admit_container(items, big) == [], tenant.name
        assert admit_container(items, {"limits": {"cpu": "64", "memory": "1Ti"}}) == [], tenant.name
        # A container that sets nothing still gets requests the scheduler reserves.
        (item,) = items
        assert set(item["defaultRequest"]) == {"cpu", "memory"}
        assert not {"default", "max", "maxLimitRequestRatio"} & set(item)
