"""The AWS side of a tenant's reach: NetworkPolicies enforced by the VPC CNI, and the EKS
access entries that make the tenant's RoleBinding group a real one."""

from __future__ import annotations

import json

import pytest

from components.aws.tenant_access import principal_key
from gpuplat.preview import RecordedResource
from tests.support_aws import STACKS, compile_model, of_type, overlay_with, record, recorded


@pytest.mark.parametrize("stack", STACKS)
def test_the_vpc_cni_enforces_network_policies(stack: str) -> None:
    _, _, resources = recorded(stack)
    (cni,) = [r for r in of_type(resources, "aws:eks/addon:Addon") if r.inputs["addonName"] == "vpc-cni"]
    configuration = json.loads(cni.inputs["configurationValues"])
    # The add-on's schema takes the flag as the string "true", not a JSON boolean.
    assert configuration == {"enableNetworkPolicy": "true"}
    others = [r for r in of_type(resources, "aws:eks/addon:Addon") if r.inputs["addonName"] != "vpc-cni"]
    assert all("configurationValues" not in r.inputs for r in others)


ADMINS = "arn:aws:iam::123456789012:role/ml/research-admins"
ONCALL = "arn:aws:iam::123456789012:user/oncall"


@pytest.fixture(scope="module")
def with_principals(tmp_path_factory: pytest.TempPathFactory) -> tuple[RecordedResource, ...]:
    overlay = overlay_with(
        tmp_path_factory.mktemp("principals"),
        "dev",
        tenants=[
            {"name": "research", "gpus": 16, "principals": [ADMINS, ONCALL]},
            {"name": "product", "gpus": 8, "principals": [ONCALL]},
        ],
    )
    model, plan = compile_model("dev", overlay)
    return tuple(record(model, plan, "dev"))


def test_principals_get_access_entries_into_their_tenants_group(with_principals: tuple[RecordedResource, ...]) -> None:
    entries = {
        r.inputs["principalArn"]: r
        for r in of_type(with_principals, "aws:eks/accessEntry:AccessEntry")
        if r.inputs["type"] == "STANDARD"
    }
    # One entry per principal (EKS allows one per principal and cluster), every tenant's group in it.
    assert {arn: e.inputs["kubernetesGroups"] for arn, e in entries.items()} == {
        ADMINS: ["gpuplat:research"],
        ONCALL: ["gpuplat:research", "gpuplat:product"],
    }
    (cluster,) = of_type(with_principals, "aws:eks/cluster:Cluster")
    for entry in entries.values():
        assert entry.inputs["clusterName"] == cluster.inputs["name"]
        assert "userName" not in entry.inputs  # EKS derives it from the ARN
    assert entries[ADMINS].name == "atlas-tenant-access-123456789012-role/ml/research-admins"
    # No access policy: the namespace's RoleBinding is the whole grant.
    assert of_type(with_principals, "aws:eks/accessPolicyAssociation:AccessPolicyAssociation") == []
    # The groups are the ones the tenants' RoleBindings name.
    bound = {
        s["name"]
        for r in with_principals
        if r.inputs.get("kind") == "RoleBinding"
        for s in r.inputs["subjects"]
        if s["kind"] == "Group"
    }
    assert {g for e in entries.values() for g in e.inputs["kubernetesGroups"]} <= bound


@pytest.mark.parametrize("stack", STACKS)
def test_no_access_entries_without_principals(stack: str) -> None:
    model, _, resources = recorded(stack)
    assert not any(t.principals for t in model.tenants)
    entries = of_type(resources, "aws:eks/accessEntry:AccessEntry")
    assert [e.inputs["type"] for e in entries] == ["EC2_LINUX"]


def test_principal_keys_are_stable_resource_names() -> None:
    assert principal_key(ADMINS) == "123456789012-role/ml/research-admins"
    # Distinct ARNs never share a key (a shared one would be one Pulumi resource for two).
    assert principal_key("arn:aws:iam::123456789012:role/a.b") != principal_key("arn:aws:iam::123456789012:role/a-b")
