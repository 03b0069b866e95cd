"""AWS limits: what `check` enforces (zones, VPC size, regions, tags) and what the AWS
components build must agree, and every physical name stays within AWS's limits whatever
the stack is called."""

from __future__ import annotations

import ipaddress
import json
import re
from pathlib import Path
from typing import Any

import pytest

from components.aws._common import directory_bucket_name, physical_name
from components.aws.network import subnet_cidrs
from gpuplat.catalog import fsx
from gpuplat.catalog.regions import PRIVATE_PREFIX_MAX, REGIONS, SUBNET_PREFIX_MAX, VPC_PREFIX_MAX, ZONE_LETTERS
from gpuplat.model import Platform
from gpuplat.preview.stack import stack_config
from gpuplat.validate.registry import RULES
from gpuplat.validate.rules.metadata import (
    AWS_TAGS_PER_RESOURCE,
    PLATFORM_TAGS_MAX,
    SPEC_TAGS_MAX,
    STACK_DEFAULT_TAGS_ROOM,
)
from tests.support_aws import (
    NODE_CLASS,
    ROOT,
    STACKS,
    compile_model,
    custom_resources,
    overlay_with,
    record,
    recorded,
)

# Tags Karpenter puts on every instance it launches, besides the node class's own.
KARPENTER_INSTANCE_TAGS = 6


def _findings(code: str, data: dict[str, Any]) -> list[str]:
    return [f.message for f in RULES[code].check(data)]


def _aws(target: dict[str, Any] | None = None, **rest: Any) -> dict[str, Any]:
    return {"target": {"provider": "aws", "region": "us-east-1", **(target or {})}, **rest}


# ------------------------------------------------------------------------------ zones, VPC


@pytest.mark.parametrize("letter", "abcdefghz")
def test_a_zone_letter_passes_gp212_exactly_when_the_network_can_place_it(letter: str) -> None:
    zone = f"us-east-1{letter}"
    accepted = not _findings("GP212", _aws({"zones": ["us-east-1a", zone]}))
    assert accepted == (letter in ZONE_LETTERS)
    if accepted:
        subnet_cidrs("10.40.0.0/16", zone)
    else:
        with pytest.raises(ValueError, match="cannot place subnets"):
            subnet_cidrs("10.40.0.0/16", zone)


@pytest.mark.parametrize("prefix", range(16, 29))
def test_a_vpc_passes_gp225_exactly_when_its_subnets_are_big_enough(prefix: int) -> None:
    cidr = f"10.40.0.0/{prefix}"
    messages = _findings("GP225", {"target": {"provider": "aws"}, "network": {"vpcCidr": cidr}})
    if prefix > VPC_PREFIX_MAX:
        assert len(messages) == 1 and f"largest prefix allowed is /{VPC_PREFIX_MAX}" in messages[0]
        with pytest.raises(ValueError, match="too small for the subnet layout"):
            subnet_cidrs(cidr, "us-east-1a")
        return
    assert messages == []
    subnets = [ipaddress.IPv4Network(c) for z in ZONE_LETTERS for c in subnet_cidrs(cidr, f"us-east-1{z}")]
    assert all(s.subnet_of(ipaddress.IPv4Network(cidr)) and s.prefixlen <= SUBNET_PREFIX_MAX for s in subnets)
    assert all(not a.overlaps(b) for i, a in enumerate(subnets) for b in subnets[i + 1 :])
    assert all(s.prefixlen <= PRIVATE_PREFIX_MAX for s in subnets[::2])  # private, public, private, ...


def test_gp293_knows_the_regions_and_suggests_the_closest() -> None:
    assert not _findings("GP293", _aws({"region": "eu-central-2"}))
    assert {r.partition for r in REGIONS.values()} == {"aws", "aws-cn", "aws-us-gov"}
    [typo] = _findings("GP293", _aws({"region": "us-wset-2"}))
    assert "did you mean us-west-2?" in typo
    [fake] = _findings("GP293", _aws({"region": "xx-fake-9"}))
    assert "not an AWS region" in fake
    assert not _findings("GP293", {"target": {"provider": "kubernetes", "region": "xx-fake-9"}})


# ----------------------------------------------------------------------------------- tags


def test_gp292_and_gp290_on_metadata_tags() -> None:
    def tags(n: int, **extra: str) -> dict[str, Any]:
        return _aws(metadata={"tags": {**{f"k{i}": "v" for i in range(n)}, **extra}})

    assert not _findings("GP292", tags(SPEC_TAGS_MAX))
    [message] = _findings("GP292", tags(SPEC_TAGS_MAX + 1))
    assert f"at most {SPEC_TAGS_MAX} fit" in message and "aws:defaultTags" in message
    [reserved] = _findings("GP290", tags(1, Name="mine"))
    assert "platform sets Name" in reserved
    assert not _findings("GP290", tags(1, name="lowercase is another key"))


@pytest.mark.parametrize("stack", STACKS)
def test_the_platform_adds_no_more_tags_than_gp292_leaves_room_for(stack: str) -> None:
    model, _, resources = recorded(stack)
    spec_keys = set(model.metadata.tags)
    for r in resources:
        if r.type.startswith("aws:") and isinstance(r.inputs.get("tags"), dict):
            assert len(set(r.inputs["tags"]) - spec_keys) <= PLATFORM_TAGS_MAX, r.name
    for node_class in custom_resources(resources, NODE_CLASS):
        own = set(node_class["spec"]["tags"]) - spec_keys
        assert len(own) + KARPENTER_INSTANCE_TAGS <= PLATFORM_TAGS_MAX, node_class["metadata"]["name"]


def test_the_most_tags_gp292_allows_fit_on_every_object(tmp_path: Path) -> None:
    spec_tags = {f"spec-{i:02d}": "v" for i in range(SPEC_TAGS_MAX - 2)}  # next to the base spec's 2
    model, plan = compile_model("dev", overlay_with(tmp_path, "dev", metadata={"tags": spec_tags}))
    assert len(model.metadata.tags) == SPEC_TAGS_MAX
    stack_tags = {f"stack-{i}": "v" for i in range(STACK_DEFAULT_TAGS_ROOM)}
    config = {"aws:region": "us-east-1", "aws:defaultTags": json.dumps({"tags": stack_tags})}
    resources = tuple(record(model, plan, "dev", config=config))
    [provider] = [r for r in resources if r.type == "pulumi:providers:aws"]
    defaults = json.loads(provider.inputs["defaultTags"])["tags"]
    for r in resources:
        if r.type.startswith("aws:") and isinstance(r.inputs.get("tags"), dict):
            assert len({**defaults, **r.inputs["tags"]}) <= AWS_TAGS_PER_RESOURCE, r.name
    for node_class in custom_resources(resources, NODE_CLASS):
        assert len(node_class["spec"]["tags"]) + KARPENTER_INSTANCE_TAGS <= AWS_TAGS_PER_RESOURCE


# ------------------------------------------------------------------------- physical names

_EKS_NAME = re.compile(r"[0-9A-Za-z][A-Za-z0-9_-]{0,99}")
_DIRECTORY_BUCKET = re.compile(r"[a-z0-9](?:-?[a-z0-9])*--[a-z0-9]+-az[0-9]+--x-s3")
# Names Pulumi picks for these types: the logical name plus "-" and 7 random hex characters.
_AUTONAME_SUFFIX = 8
_AUTONAMED_MAX = {
    "aws:iam/role:Role": 64,
    "aws:iam/rolePolicy:RolePolicy": 128,
    "aws:sqs/queue:Queue": 80,
    "aws:cloudwatch/eventRule:EventRule": 64,
    "aws:s3/bucket:Bucket": 63,
    "aws:ec2/securityGroup:SecurityGroup": 255,
    "aws:ec2/launchTemplate:LaunchTemplate": 128,
    "aws:eks/nodeGroup:NodeGroup": 63,
}
AWKWARD_STACKS = ("Prod_x", "production-eu-central-feature-x", "team.a." + "very-long-" * 9 + "Z")


def _physical_names_problems(resources: list[Any], model: Platform) -> list[str]:
    problems: list[str] = []
    for r in resources:
        inputs = r.inputs
        if r.type == "aws:eks/cluster:Cluster" and not _EKS_NAME.fullmatch(inputs["name"]):
            problems.append(f"EKS cluster name {inputs['name']!r}")
        if r.type == "aws:ec2/placementGroup:PlacementGroup" and len(inputs["name"]) > 255:
            problems.append(f"placement group name {inputs['name']!r}")
        if r.type == "aws:s3/directoryBucket:DirectoryBucket":
            bucket = inputs["bucket"]
            if len(bucket) > 63 or not _DIRECTORY_BUCKET.fullmatch(bucket):
                problems.append(f"directory bucket {bucket!r} ({len(bucket)} characters)")
        limit = _AUTONAMED_MAX.get(r.type)
        if limit is not None and "name" not in inputs and len(r.name) + _AUTONAME_SUFFIX > limit:
            problems.append(f"{r.type} auto-name of {r.name!r} exceeds {limit}")
        if r.type == "aws:s3/bucket:Bucket" and r.name != r.name.lower():
            problems.append(f"bucket logical name {r.name!r} is not lowercase")
        for key, value in (inputs.get("tags") or {}).items() if r.type.startswith("aws:") else ():
            if len(key) > 128 or len(value) > 256:
                problems.append(f"tag {key}={value} of {r.name}")
    return problems


@pytest.mark.parametrize("stack", AWKWARD_STACKS)
def test_physical_names_stay_valid_whatever_the_stack_is_called(tmp_path: Path, stack: str) -> None:
    metadata = {"name": "abcdefghijklmnopqrst"}  # the longest platform name the schema allows
    model, plan = compile_model("dev", overlay_with(tmp_path, "dev", metadata=metadata))
    resources = record(model, plan, stack)
    assert _physical_names_problems(resources, model) == []


def test_valid_names_are_kept_and_cleaned_names_never_collide() -> None:
    # EKS accepts upper case and "_": a live cluster named after such a stack keeps its name.
    assert physical_name("atlas-Prod_x", 100, lowercase=False) == "atlas-Prod_x"
    assert physical_name("atlas-dev", 63) == "atlas-dev"
    buckets = {
        directory_bucket_name(f"atlas-{s}", "warm", "use1-az4", account)
        for s in ("Prod_x", "prod_x", "prod-x")
        for account in (None, "123456789012")
    }
    assert len(buckets) == 6 and all(_DIRECTORY_BUCKET.fullmatch(b) for b in buckets)
    long = physical_name("x" * 120, 100, lowercase=False)
    assert len(long) == 100 and long == physical_name("x" * 120, 100, lowercase=False)
    assert physical_name("x" * 121, 100, lowercase=False) != long


@pytest.mark.parametrize("stack", STACKS)
def test_the_shipped_stacks_keep_their_physical_names(stack: str) -> None:
    # With their own stack settings, which pin the warm bucket's name from before the account id.
    model, plan = compile_model(stack)
    resources = record(model, plan, stack, config=stack_config(stack, ROOT))
    by_type = {r.type: r.inputs for r in resources}
    assert by_type["aws:eks/cluster:Cluster"]["name"] == f"atlas-{stack}"
    assert by_type["aws:s3/directoryBucket:DirectoryBucket"]["bucket"] == f"atlas-{stack}-warm--use1-az4--x-s3"


# ------------------------------------------------------------------------------ storage QoS


@pytest.mark.parametrize(
    ("tib", "rate", "share", "priorities", "fires"),
    [
        (1.2, 125, 0.8, ("high", "normal"), True),  # 150 MB/s x 0.25 = 37.5 < 150
        (1.2, 125, 0.5, ("high", "normal"), False),  # 150 MB/s: 1200 GiB x 125 fits exactly
        (4.8, 250, 1.0, ("high", "low"), True),  # share 1 leaves nothing for `low`
        (4.8, 250, 1.0, ("high", "critical"), False),  # no standard tenant, no second file system
        (4.8, 250, 0.8, ("normal",), False),
    ],
)
def test_gp257_fires_exactly_when_no_standard_file_system_fits(
    tib: float, rate: int, share: float, priorities: tuple[str, ...], fires: bool
) -> None:
    data = _aws(
        storage={"hot": {"capacityTiB": tib, "throughputPerTiB": rate}, "qos": {"criticalIopsShare": share}},
        tenants=[{"name": f"t{i}", "gpus": 1, "priority": p} for i, p in enumerate(priorities)],
    )
    messages = _findings("GP257", data)
    assert bool(messages) == fires
    standard = any(p not in ("high", "critical") for p in priorities)
    fits = fsx.standard_file_system(fsx.throughput_mbps(fsx.capacity_gib(tib * 1000), rate), share) is not None
    assert fires == (standard and not fits)  # the planner's own sizing agrees with the rule
    assert not _findings("GP257", {**data, "target": {"provider": "kubernetes"}})


def test_gp258_keeps_tenants_out_of_the_hot_tiers_cold_exports() -> None:
    storage = {"hot": {"capacityTiB": 4.8, "throughputPerTiB": 250}, "cold": {"expireAfterDays": 30}}
    names = ["research", *fsx.COLD_EXPORT_PREFIXES.values()]
    data = _aws(storage=storage, tenants=[{"name": n, "gpus": 1} for n in names])
    assert len(_findings("GP258", data)) == len(fsx.COLD_EXPORT_PREFIXES)
    assert not _findings("GP258", {**data, "storage": {"hot": storage["hot"]}})  # no cold bucket, no export
