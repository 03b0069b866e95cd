"""Every AWS API request a stack would send, against botocore's service models: the create call
of each resource the components register, and the reads of the program's preflight (the invokes
it makes before the first resource, captured from the real program under the recording engine)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gpuplat.preview._monitor as monitor
from gpuplat.preflight.facts import AccountFacts, facts_from_json
from gpuplat.preflight.quotas import EVERY_QUOTA
from tests.support_aws import compile_model, overlay_with, record, recorded
from tests.support_botocore import NOT_CHECKED, REQUESTS, Params, Request, mock_values, problems, requests

STACKS = ("dev", "staging", "prod")


@pytest.mark.parametrize("stack", STACKS)
def test_every_create_call_fits_the_api(stack: str) -> None:
    _, _, resources = recorded(stack)
    aws = [r for r in resources if r.type.startswith("aws:")]
    unknown = sorted({r.type for r in aws} - set(REQUESTS) - NOT_CHECKED)
    assert not unknown, f"new AWS resource types: translate their create call or say why not: {unknown}"
    mock = mock_values(resources)
    found = [
        f"{r.name}: {problem}"
        for r in aws
        for service, name, params in requests(r)
        for problem in problems(service, name, params, mock)
    ]
    assert not found, "\n".join(found)


def test_the_options_a_spec_turns_on_fit_too(tmp_path: Path) -> None:
    # EFA, backups without a cold tier, and Capacity Blocks by id: create calls the stacks leave out.
    hot = {"capacityTiB": 48, "throughputPerTiB": 500, "efa": True, "backupRetentionDays": 7}
    storage = {"hot": hot, "warm": {"capacityTiB": 100}, "cold": None}
    overlay = overlay_with(tmp_path, "prod", storage=storage)
    model, plan = compile_model("prod", overlay)
    assert model.storage.hot is not None and model.storage.hot.efa and model.storage.cold is None
    resources = tuple(record(model, plan, "prod"))
    lustre = [req for r in resources if r.type == "aws:fsx/lustreFileSystem:LustreFileSystem" for req in requests(r)]
    assert lustre and all(req[2]["LustreConfiguration"].get("EfaEnabled") is True for req in lustre)
    assert all(req[2]["LustreConfiguration"].get("AutomaticBackupRetentionDays") == 7 for req in lustre)
    mock = mock_values(resources)
    found = [f"{r.name}: {p}" for r in resources for s, n, params in requests(r) for p in problems(s, n, params, mock)]
    assert not found, "\n".join(found)


# ------------------------------------------------------------------ the preflight's reads


def _read(token: str, args: dict[str, Any]) -> Request | None:
    """The API call behind each provider function the preflight invokes (the Terraform data source's)."""
    if token == "aws:index/getAvailabilityZones:getAvailabilityZones":
        return "ec2", "DescribeAvailabilityZones", {}
    if token == "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings":
        filters = [{"Name": f["name"], "Values": f["values"]} for f in args.get("filters", [])]
        return "ec2", "DescribeInstanceTypeOfferings", {"LocationType": args["locationType"], "Filters": filters}
    if token == "aws:eks/getClusterVersions:getClusterVersions":
        return "eks", "DescribeClusterVersions", {}
    if token == "aws:servicequotas/getServiceQuota:getServiceQuota":
        return "service-quotas", "GetServiceQuota", {"ServiceCode": args["serviceCode"], "QuotaCode": args["quotaCode"]}
    if token == "aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation":
        return "ec2", "DescribeCapacityReservations", {"CapacityReservationIds": [args["id"]]}
    if token == "aws:resourcegroupstaggingapi/getResources:getResources":
        tag_filters = [{"Key": f["key"], "Values": f["values"]} for f in args.get("tagFilters", [])]
        return (
            "resourcegroupstaggingapi",
            "GetResources",
            {"ResourceTypeFilters": args["resourceTypeFilters"], "TagFilters": tag_filters},
        )
    return None


def _invokes(
    monkeypatch: pytest.MonkeyPatch, stack: str, overlay: Path | None = None, facts: AccountFacts | None = None
) -> list[tuple[str, Params]]:
    calls: list[tuple[str, Params]] = []
    answer = monitor.invoke

    def recording(token: str, args: Params, ctx: Any) -> Params:
        calls.append((token, json.loads(json.dumps(args))))
        return answer(token, args, ctx if facts is None else dataclasses.replace(ctx, facts=facts))

    monkeypatch.setattr(monitor, "invoke", recording)
    model, plan = compile_model(stack, overlay)
    record(model, plan, stack)
    return calls


def _preflight_problems(calls: list[tuple[str, Params]]) -> Iterator[str]:
    for token, args in calls:
        read = _read(token, args)
        if read is not None:
            service, name, params = read
            for problem in problems(service, name, params):
                yield f"{token}: {problem}"


def test_preflight_reads_fit_the_api(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocks = {
        "kind": "capacity-block",
        "ids": ["cr-0123456789abcdef0", "cr-0fedcba9876543210"],
        "tags": {"gpuplat-pool": "train", "window": "2027-q1"},
    }
    overlay = overlay_with(tmp_path, "prod", gpuNodePools=[{"name": "train", "reservation": blocks}])
    # Facts that hold the blocks, so the blocks found by tag are read by id too (the mock account
    # answers no Capacity Block question).
    block = {"instanceType": "p5.48xlarge", "zone": "us-east-1a", "instances": 32, "state": "active"}
    held = [
        {**block, "id": "cr-0123456789abcdef0", "tags": {}},
        {**block, "id": "cr-0aaaaaaaaaaaaaaaa", "tags": blocks["tags"]},
    ]
    facts = facts_from_json({"region": "us-east-1", "readAt": "2026-12-04T00:00:00Z", "capacityBlocks": held})
    calls = _invokes(monkeypatch, "prod", overlay, facts)
    tokens = {token for token, _ in calls}
    read = {a["id"] for t, a in calls if t == "aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation"}
    assert read == {*blocks["ids"], "cr-0aaaaaaaaaaaaaaaa"}
    # Every kind of fact the preflight reads was asked for, before any resource.
    assert {
        "aws:index/getAvailabilityZones:getAvailabilityZones",
        "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings",
        "aws:eks/getClusterVersions:getClusterVersions",
        "aws:servicequotas/getServiceQuota:getServiceQuota",
        "aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation",
        "aws:resourcegroupstaggingapi/getResources:getResources",
    } <= tokens
    quota_calls = [a for t, a in calls if t == "aws:servicequotas/getServiceQuota:getServiceQuota"]
    assert len(quota_calls) == len(EVERY_QUOTA)
    assert not list(_preflight_problems(calls))


def test_the_checker_catches_what_the_api_refuses() -> None:
    # Each of these is a request AWS answers with a validation error; the check must say so.
    lustre = {"DeploymentType": "PERSISTENT_3", "PerUnitStorageThroughput": 1000}
    bad: list[Request] = [
        (
            "fsx",
            "CreateFileSystem",
            {
                "FileSystemType": "LUSTRE",
                "StorageCapacity": 1200,
                "SubnetIds": ["subnet-0a1b2c3d"],
                "LustreConfiguration": lustre,
            },
        ),
        ("ec2", "CreatePlacementGroup", {"GroupName": "x", "Strategy": "clustered"}),
        ("sqs", "CreateQueue", {"QueueName": "q", "Attributes": {"MessageRetentionSeconds": "300"}}),
        # A quota found by its name is ListServiceQuotas' business: GetServiceQuota takes codes only.
        ("service-quotas", "GetServiceQuota", {"ServiceCode": "fsx", "QuotaName": "Lustre storage capacity (GiB)"}),
        ("ec2", "DescribeInstanceTypeOfferings", {"LocationType": "zone"}),
        (
            "eks",
            "CreateCluster",
            {
                "name": "x",
                "roleArn": "arn",
                "resourcesVpcConfig": {},
                "logging": {"clusterLogging": [{"types": ["api", "kubelet"], "enabled": True}]},
            },
        ),
        (
            "s3",
            "PutBucketLifecycleConfiguration",
            {
                "Bucket": "b",
                "LifecycleConfiguration": {
                    "Rules": [{"Status": "Enabled", "Transitions": [{"Days": 30, "StorageClass": "GLACIER_IRX"}]}]
                },
            },
        ),
        ("ec2", "CreateCapacityReservation", {"InstanceType": "p5.48xlarge", "InstanceCount": 2}),  # no platform
    ]
    for service, name, params in bad:
        assert problems(service, name, params), (service, name)
    # ... and a well-formed one passes.
    assert not problems("sqs", "CreateQueue", {"QueueName": "q", "Attributes": {"MessageRetentionPeriod": "300"}})
