"""The AWS side of a tenant's reach: NetworkPolicies enforced by the VPC CNI, and the EKS
access entries that make the tenant's RoleBinding group a real one."""

from __future__ import annotations

import json

import pytest

from tests.support_aws import STACKS, of_type, recorded


@pytest.mark.parametrize("stack", STACKS)
def test_the_vpc_cni_enforces_network_policies(stack: str) -> None:
    _, _, resources = recorded(stack)
    (cni,) = [r for r in of_type(resources, "aws:eks/addon:Addon") if r.inputs["addonName"] == "vpc-cni"]
    configuration = json.loads(cni.inputs["configurationValues"])
    # The add-on's schema takes the flag as the string "true", not a JSON boolean.
    assert configuration == {"enableNetworkPolicy": "true"}
    others = [r for r in of_type(resources, "aws:eks/addon:Addon") if r.inputs["addonName"] != "vpc-cni"]
    assert all("configurationValues" not in r.inputs for r in others)
