"""What the AWS components emit agrees with the plan, and the plan's numbers are ones AWS takes."""

from __future__ import annotations

from collections import Counter

import pytest

from components.aws.cpu_node_pool import CPU_NODE_POOL
from components.conventions import TAG_POOL
from gpuplat.catalog import GPU_RESOURCE, fsx, instance_type
from gpuplat.model import MARKET_ORDER, Market
from gpuplat.preview._mockdata import ACCOUNT_ID
from tests.support_aws import NODE_CLASS, NODE_POOL, STACKS, custom_resources, of_type, recorded

LUSTRE_THROUGHPUT = {125, 250, 500, 1000}  # PERSISTENT_2 SSD, MB/s per TiB


def lustre_capacity_accepted(gib: int) -> bool:
    return gib in (1200, 2400) or (gib > 0 and gib % 2400 == 0)


@pytest.mark.parametrize("stack", STACKS)
def test_reservations_hold_exactly_the_reserved_nodes(stack: str) -> None:
    model, plan, resources = recorded(stack)
    reserved = Counter[str]()
    for r in of_type(resources, "aws:ec2/capacityReservation:CapacityReservation"):
        inputs = r.inputs
        assert inputs["instanceMatchCriteria"] == "targeted" and inputs["endDateType"] == "unlimited"
        assert inputs["instancePlatform"] == "Linux/UNIX"
        pool = model.pools_by_name[inputs["tags"][TAG_POOL]]
        assert inputs["instanceType"] == pool.instance_type
        assert ("placementGroupArn" in inputs) is pool.fabric
        reserved[pool.name] += inputs["instanceCount"]
    for pool in plan.pools:
        spare = model.pools_by_name[pool.name].health.spare_nodes  # held for repairs
        assert reserved[pool.name] == pool.share(Market.RESERVED).nodes + spare, pool.name


@pytest.mark.parametrize("stack", STACKS)
def test_node_pools_carry_the_plan_gpus_per_market(stack: str) -> None:
    model, plan, resources = recorded(stack)
    emitted = {obj["metadata"]["name"]: obj["spec"] for obj in custom_resources(resources, NODE_POOL)}
    emitted.pop(CPU_NODE_POOL)  # no GPUs, not in the plan's split
    expected: dict[str, int] = {}
    for pool in plan.pools:
        for market in model.pools_by_name[pool.name].markets:
            share = pool.share(market)
            spare = model.pools_by_name[pool.name].health.spare_nodes if market is Market.RESERVED else 0
            if share.nodes > 0:
                expected[f"{pool.name}-{market.value}"] = share.gpus + spare * pool.gpus_per_node
    assert set(emitted) == set(expected)
    for name, spec in emitted.items():
        assert spec["limits"][GPU_RESOURCE] == str(expected[name]), name
        planned = next(n for n in plan.node_pools if n.name == name)
        assert spec["limits"] == {r: str(n) for r, n in planned.limits.items()}, name
    # The limits add up to the fleet the plan priced, its spare nodes included.
    spares = sum(p.health.spare_nodes * p.gpus_per_node for p in model.pools)
    assert sum(expected.values()) == plan.fleet_gpus + spares


@pytest.mark.parametrize("stack", STACKS)
def test_market_weights_prefer_reserved_then_spot_then_on_demand(stack: str) -> None:
    _, _, resources = recorded(stack)
    weights: dict[str, dict[str, int]] = {}
    for obj in custom_resources(resources, NODE_POOL):
        spec = obj["spec"]
        market = next(r for r in spec["template"]["spec"]["requirements"] if r["key"] == "karpenter.sh/capacity-type")
        weights.setdefault(spec["template"]["spec"]["nodeClassRef"]["name"], {})[market["values"][0]] = spec["weight"]
    for per_market in weights.values():
        ordered = [per_market[m.value] for m in MARKET_ORDER if m.value in per_market]
        assert ordered == sorted(ordered, reverse=True)


@pytest.mark.parametrize("stack", STACKS)
def test_efa_interfaces_match_the_instance_network_cards(stack: str) -> None:
    model, plan, resources = recorded(stack)
    classes = {obj["metadata"]["name"]: obj["spec"] for obj in custom_resources(resources, NODE_CLASS)}
    for pool in model.pools:
        spec = classes[pool.name]
        if not pool.fabric:
            assert "networkInterfaces" not in spec and "placementGroupSelector" not in spec
            continue
        itype = instance_type(pool.instance_type or "")
        assert itype is not None
        efa = [i for i in spec["networkInterfaces"] if i["interfaceType"] == "efa-only"]
        assert len(efa) == itype.network_cards == plan.pool(pool.name).efa_interfaces
        assert sorted(i["networkCardIndex"] for i in efa) == list(range(itype.network_cards))
        assert spec["placementGroupSelector"]["name"].endswith(f"-{pool.name}-{plan.fabric_zone or ''}")


@pytest.mark.parametrize("stack", STACKS)
def test_fabric_pools_live_in_the_fabric_zone(stack: str) -> None:
    model, plan, resources = recorded(stack)
    assert plan.fabric_zone is not None
    zone = plan.fabric_zone
    for obj in custom_resources(resources, NODE_POOL):
        spec = obj["spec"]["template"]["spec"]
        zones = next(r["values"] for r in spec["requirements"] if r["key"] == "topology.kubernetes.io/zone")
        pool = model.pools_by_name.get(spec["nodeClassRef"]["name"])
        fabric = pool is not None and pool.fabric  # None: the CPU NodePool, in every zone
        assert zones == ([zone] if fabric else list(model.target.zones))
    groups = of_type(resources, "aws:ec2/placementGroup:PlacementGroup")
    assert {g.inputs["strategy"] for g in groups} == {"cluster"}
    assert all(g.name.endswith(f"-{zone}") for g in groups)
    for r in of_type(resources, "aws:ec2/capacityReservation:CapacityReservation"):
        if "placementGroupArn" in r.inputs:
            assert r.inputs["availabilityZone"] == zone


@pytest.mark.parametrize("stack", STACKS)
def test_hot_tier_sizes_are_ones_fsx_accepts(stack: str) -> None:
    _, plan, resources = recorded(stack)
    fs = of_type(resources, "aws:fsx/lustreFileSystem:LustreFileSystem")[0].inputs
    assert plan.storage.hot is not None
    assert fs["storageCapacity"] == plan.storage.hot.capacity_gib
    assert fs["perUnitStorageThroughput"] == plan.storage.hot.throughput_per_tib
    assert lustre_capacity_accepted(fs["storageCapacity"])
    assert fs["perUnitStorageThroughput"] in LUSTRE_THROUGHPUT
    assert fs["storageCapacity"] >= plan.storage.hot.requested_tib * fsx.GIB_PER_TIB  # FSx TiB: 1000 GiB
    assert fs["deploymentType"] == "PERSISTENT_2" and fs["metadataConfiguration"] == {"mode": "AUTOMATIC"}


@pytest.mark.parametrize("stack", STACKS)
def test_cold_lifecycle_is_the_plan_schedule(stack: str) -> None:
    _, plan, resources = recorded(stack)
    rules = of_type(resources, "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration")[0].inputs["rules"]
    # The plan starts the schedule with the class objects are written in (STANDARD, day 0).
    schedule = [(s.after_days, s.storage_class) for s in plan.storage.cold_lifecycle if s.storage_class != "STANDARD"]
    tiering = [rule for rule in rules if rule["id"].startswith("tiering-")]
    assert tiering  # one per tenant prefix (cold_lifecycle.py: the hot exports are not aged)
    for rule in tiering:
        steps = [(t["days"], t["storageClass"]) for t in rule.get("transitions", [])]
        steps += [(rule["expiration"]["days"], "EXPIRE")] if "expiration" in rule else []
        assert steps == schedule
    (versions,) = [rule for rule in rules if rule["id"] == "versions"]
    assert versions["abortIncompleteMultipartUpload"]["daysAfterInitiation"] > 0
    assert versions["noncurrentVersionExpiration"]["noncurrentDays"] > 0


@pytest.mark.parametrize("stack", STACKS)
def test_warm_tier_is_a_directory_bucket_in_the_fabric_zone(stack: str) -> None:
    model, plan, resources = recorded(stack)
    bucket = of_type(resources, "aws:s3/directoryBucket:DirectoryBucket")[0].inputs
    az_id = bucket["location"]["name"]
    assert bucket["location"]["type"] == "AvailabilityZone"
    # Recorded without the stack's settings: a new stack, whose name carries the account id.
    assert bucket["bucket"] == f"{model.metadata.name}-{stack}-warm-{ACCOUNT_ID}--{az_id}--x-s3"
    # The preview engine maps us-east-1a..c to use1-az4..6, the region's S3 Express zones
    # (real ids differ per account).
    assert plan.fabric_zone is not None
    assert az_id == f"use1-az{'abc'.index(plan.fabric_zone[-1]) + 4}"
