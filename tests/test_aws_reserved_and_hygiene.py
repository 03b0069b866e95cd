"""Capacity Blocks, the pinned node AMI, the endpoint's CIDRs, the creator-admin choice, the hot
tier's backups and EFA, and the cold lifecycle that spares the hot exports, recorded offline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from components.conventions import TAG_POOL
from gpuplat.catalog.eks import NODE_AMI_ALIASES
from gpuplat.model import Market
from tests.support_aws import (
    NODE_CLASS,
    NODE_POOL,
    ROOT,
    compile_model,
    crd_errors,
    custom_resources,
    of_type,
    record,
    recorded,
)

RESERVATION = "aws:ec2/capacityReservation:CapacityReservation"
CLUSTER = "aws:eks/cluster:Cluster"
LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"


def _overlay(directory: Path, stack: str, edit: Any) -> Path:
    """The stack's overlay, edited in place (a function of the parsed document)."""
    overlay = yaml.safe_load((ROOT / "stacks" / f"{stack}.yaml").read_text(encoding="utf-8"))
    edit(overlay)
    path = directory / f"{stack}-edited.yaml"
    path.write_text(yaml.safe_dump(overlay), encoding="utf-8")
    return path


def _node_class(resources: list[Any] | tuple[Any, ...], pool: str) -> dict[str, Any]:
    return next(o for o in custom_resources(tuple(resources), NODE_CLASS) if o["metadata"]["name"] == pool)


def test_prod_reserves_train_as_odcrs_today() -> None:
    _, plan, resources = recorded("prod")
    assert {r.inputs["tags"][TAG_POOL] for r in of_type(resources, RESERVATION)} >= {"train"}
    assert plan.capacity_blocks == ()


def _blocks(overlay: dict[str, Any]) -> None:
    overlay["gpuNodePools"][0]["reservation"] = {
        "kind": "capacity-block",
        "ids": ["cr-0123456789abcdef0"],
        "tags": {"gpuplat-pool": "train"},
    }


def test_capacity_block_pool_selects_blocks_and_creates_no_reservation(tmp_path: Path) -> None:
    model, plan = compile_model("prod", _overlay(tmp_path, "prod", _blocks))
    resources = record(model, plan, "prod")
    pools_reserved = {r.inputs["tags"][TAG_POOL] for r in of_type(resources, RESERVATION)}
    assert "train" not in pools_reserved  # a block is bought, never created
    # train is a fabric pool: its reserved NodePool launches into the blocks through a class of its
    # own without the placement group (a block is placed together already); spot and on-demand
    # keep the pool's class with the placement group and no reservation terms.
    blocks, train = _node_class(resources, "train-blocks"), _node_class(resources, "train")
    assert blocks["spec"]["capacityReservationSelectorTerms"] == [
        {"id": "cr-0123456789abcdef0"},
        {"tags": {"gpuplat-pool": "train"}},
    ]
    assert "placementGroupSelector" not in blocks["spec"] and "placementGroupSelector" in train["spec"]
    assert "capacityReservationSelectorTerms" not in train["spec"]
    assert list(crd_errors(NODE_CLASS, blocks)) == [] and list(crd_errors(NODE_CLASS, train)) == []
    refs = {
        o["metadata"]["name"]: o["spec"]["template"]["spec"]["nodeClassRef"]["name"]
        for o in custom_resources(tuple(resources), NODE_POOL)
        if o["metadata"]["name"].startswith("train-")
    }
    assert refs == {"train-reserved": "train-blocks", "train-spot": "train", "train-on-demand": "train"}
    (block,) = plan.capacity_blocks
    reserved = plan.pool("train").share(Market.RESERVED).nodes + model.pools_by_name["train"].health.spare_nodes
    assert reserved > 0 and (block.pool, block.instance_type, block.nodes) == ("train", "p5.48xlarge", reserved)


def test_node_ami_is_pinned_per_kubernetes_version_and_overridable(tmp_path: Path) -> None:
    model, _, resources = recorded("dev")
    pinned = NODE_AMI_ALIASES[model.target.kubernetes_version]
    assert pinned.startswith("al2023@v")
    for obj in custom_resources(resources, NODE_CLASS):
        assert obj["spec"]["amiSelectorTerms"] == [{"alias": pinned}]

    def pin(overlay: dict[str, Any]) -> None:
        overlay["target"]["nodeAmi"] = "al2023@v20260610"

    model, plan = compile_model("dev", _overlay(tmp_path, "dev", pin))
    for obj in custom_resources(tuple(record(model, plan, "dev")), NODE_CLASS):
        assert obj["spec"]["amiSelectorTerms"] == [{"alias": "al2023@v20260610"}]


def _cluster(resources: Any) -> dict[str, Any]:
    (cluster,) = of_type(resources, CLUSTER)
    return cluster.inputs


def test_creator_admin_keeps_what_existing_clusters_have_unless_the_spec_says_otherwise(tmp_path: Path) -> None:
    for stack in ("dev", "prod"):
        _, _, resources = recorded(stack)
        assert _cluster(resources)["accessConfig"]["bootstrapClusterCreatorAdminPermissions"] is True

    def off(overlay: dict[str, Any]) -> None:
        overlay["target"]["bootstrapClusterCreatorAdmin"] = False

    model, plan = compile_model("prod", _overlay(tmp_path, "prod", off))
    inputs = _cluster(record(model, plan, "prod"))
    assert inputs["accessConfig"]["bootstrapClusterCreatorAdminPermissions"] is False


def test_public_endpoint_takes_the_spec_cidrs_and_the_runners(tmp_path: Path) -> None:
    _, _, resources = recorded("dev")
    assert "publicAccessCidrs" not in _cluster(resources)["vpcConfig"]  # open, AWS's default: GP306 is on 0/0 only

    def restrict(overlay: dict[str, Any]) -> None:
        overlay["target"]["publicAccessCidrs"] = ["203.0.113.0/24"]

    model, plan = compile_model("dev", _overlay(tmp_path, "dev", restrict))
    config = {"aws:region": "us-east-1", "gpu-platform:apiAccessCidrs": "198.51.100.0/24"}
    inputs = _cluster(record(model, plan, "dev", config))
    assert inputs["vpcConfig"]["publicAccessCidrs"] == ["203.0.113.0/24", "198.51.100.0/24"]


def test_cold_lifecycle_ages_tenant_prefixes_and_never_the_hot_exports() -> None:
    model, _, resources = recorded("prod")
    (lifecycle,) = of_type(resources, "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration")
    rules = {r["id"]: r for r in lifecycle.inputs["rules"]}
    assert set(rules) == {"versions", *(f"tiering-{t.name}" for t in model.tenants)}
    assert "transitions" not in rules["versions"] and rules["versions"]["filter"]["prefix"] == ""
    for tenant in model.tenants:
        tiering = rules[f"tiering-{tenant.name}"]
        assert tiering["filter"]["prefix"] == f"{tenant.name}/"
        assert [t["storageClass"] for t in tiering["transitions"]] == [
            t.storage_class
            for t in model.storage.cold.transitions  # type: ignore[union-attr]
        ]
    prefixes = [r["filter"]["prefix"] for r in rules.values() if r.get("transitions") or r.get("expiration")]
    assert not any("hot/".startswith(p) or "hot-standard/".startswith(p) for p in prefixes)


def test_hot_tier_backs_up_without_an_export_and_never_sets_efa_unasked(tmp_path: Path) -> None:
    _, _, resources = recorded("prod")
    for fs in of_type(resources, LUSTRE):  # exports to cold: FSx refuses backups, and EFA is opt-in
        assert "automaticBackupRetentionDays" not in fs.inputs and "efaEnabled" not in fs.inputs

    def no_cold_with_efa(overlay: dict[str, Any]) -> None:
        overlay["storage"] = {"cold": None, "hot": {"capacityTiB": 4.8, "throughputPerTiB": 250, "efa": True}}

    model, plan = compile_model("dev", _overlay(tmp_path, "dev", no_cold_with_efa))
    resources = record(model, plan, "dev")
    for fs in of_type(resources, LUSTRE):
        assert fs.inputs["automaticBackupRetentionDays"] == 7
        assert fs.inputs["dailyAutomaticBackupStartTime"] == "03:00"
        assert fs.inputs["efaEnabled"] is True
    efa_rules = [r for r in resources if r.type.startswith("aws:vpc/securityGroup") and "-lustre-efa-" in r.name]
    # within the file servers' group, and both ways between it and the fabric nodes' EFA group
    assert sorted(r.name.rsplit("-lustre-efa-", 1)[1] for r in efa_rules) == [
        "clients-in",
        "clients-out",
        "self-in",
        "self-out",
        "servers-in",
        "servers-out",
    ]
    assert all(r.inputs["ipProtocol"] == "-1" for r in efa_rules)


def test_addons_are_left_where_eks_put_them_unless_the_spec_pins_them(tmp_path: Path) -> None:
    _, _, resources = recorded("dev")
    assert all("addonVersion" not in r.inputs for r in of_type(resources, "aws:eks/addon:Addon"))

    def pin(overlay: dict[str, Any]) -> None:
        overlay["target"]["addonVersions"] = {
            "kube-proxy": "v1.33.10-eksbuild.2",
            "aws-ebs-csi-driver": "v1.48.0-eksbuild.1",
        }

    model, plan = compile_model("dev", _overlay(tmp_path, "dev", pin))
    versions = {
        r.inputs["addonName"]: r.inputs.get("addonVersion")
        for r in of_type(record(model, plan, "dev"), "aws:eks/addon:Addon")
    }
    assert versions["kube-proxy"] == "v1.33.10-eksbuild.2"
    assert versions["aws-ebs-csi-driver"] == "v1.48.0-eksbuild.1"
    assert versions["coredns"] is None
