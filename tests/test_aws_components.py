"""The AWS components, recorded offline for the shipped stacks: presence, secure defaults,
valid Karpenter objects, chart values, stable names."""

from __future__ import annotations

import importlib
import inspect
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from components import GpuPlatform, GpuPlatformArgs
from components.aws.cpu_node_pool import CPU_NODE_POOL
from components.aws.network import subnet_cidrs
from components.conventions import S3_CSI_NAMESPACE, S3_CSI_SERVICE_ACCOUNT
from gpuplat.catalog import CHARTS
from gpuplat.compile import compile_stack
from gpuplat.preview import RecordedResource, record_main, record_program
from gpuplat.preview._mockdata import ACCOUNT_ID
from tests.support_aws import (
    AWS_COMPONENTS,
    NODE_CLASS,
    NODE_OVERLAY,
    NODE_POOL,
    PROJECT,
    ROOT,
    STACKS,
    chart_values,
    compile_model,
    crd_errors,
    custom_resources,
    of_type,
    overlay_with,
    record,
    recorded,
    recorded_all,
    unknown_value_keys,
)
from tests.upstream import Partly

STATEFUL = (
    "aws:eks/cluster:Cluster",
    "aws:kms/key:Key",
    "aws:fsx/lustreFileSystem:LustreFileSystem",
    "aws:s3/bucket:Bucket",
    "aws:s3/directoryBucket:DirectoryBucket",
)


def single(resources: tuple[RecordedResource, ...], type_: str) -> RecordedResource:
    found = of_type(resources, type_)
    assert len(found) == 1, f"{type_}: {[r.name for r in found]}"
    return found[0]


@pytest.mark.parametrize("stack", STACKS)
def test_every_aws_object_of_the_design_is_emitted(stack: str) -> None:
    model, plan, resources = recorded(stack)
    zones = len(model.target.zones)
    count = {t: len(of_type(resources, t)) for t in {r.type for r in resources}}
    assert count["aws:ec2/vpc:Vpc"] == 1
    assert count["aws:ec2/subnet:Subnet"] == 2 * zones  # private + public per zone
    assert count["aws:ec2/natGateway:NatGateway"] == zones
    assert count["aws:ec2/internetGateway:InternetGateway"] == 1
    services = sorted(
        r.inputs["serviceName"].rsplit(".", 1)[-1] for r in of_type(resources, "aws:ec2/vpcEndpoint:VpcEndpoint")
    )
    assert services == sorted(["s3", "s3express", "api", "dkr", "sts", "ec2", "sqs", "eks-auth"])
    single(resources, "aws:eks/cluster:Cluster")
    assert single(resources, "aws:eks/nodeGroup:NodeGroup").inputs["capacityType"] == "ON_DEMAND"
    addons = sorted(r.inputs["addonName"] for r in of_type(resources, "aws:eks/addon:Addon"))
    assert addons == [
        "aws-ebs-csi-driver", "coredns", "eks-node-monitoring-agent", "eks-pod-identity-agent", "kube-proxy", "vpc-cni"
    ]
    assert single(resources, "aws:eks/accessEntry:AccessEntry").inputs["type"] == "EC2_LINUX"
    associations = {
        r.inputs["serviceAccount"] for r in of_type(resources, "aws:eks/podIdentityAssociation:PodIdentityAssociation")
    }
    assert associations == {"karpenter", S3_CSI_SERVICE_ACCOUNT}
    single(resources, "aws:sqs/queue:Queue")
    assert count["aws:cloudwatch/eventRule:EventRule"] == count["aws:cloudwatch/eventTarget:EventTarget"] == 5
    charts = sorted(r.inputs["chart"].rsplit("/", 1)[-1] for r in of_type(resources, "kubernetes:helm.sh/v3:Release"))
    assert charts == ["aws-efa-k8s-device-plugin", "karpenter", "karpenter-crd"]
    assert len(custom_resources(resources, NODE_CLASS)) == len(model.pools) + 1  # and the CPU pool's
    assert count["aws:ec2/placementGroup:PlacementGroup"] == len(model.fabric_pools)
    assert count.get("aws:ec2/capacityReservation:CapacityReservation", 0) == len(plan.reservations)
    assert plan.storage.hot is not None
    file_systems = 1 + (plan.storage.hot.standard is not None)  # critical, and standard if any
    assert count["aws:fsx/lustreFileSystem:LustreFileSystem"] == file_systems
    assert count["aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"] == file_systems
    for type_ in (
        "aws:s3/directoryBucket:DirectoryBucket",
        "aws:s3/bucket:Bucket",
        "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
        "pulumi:providers:kubernetes",
    ):
        single(resources, type_)


@pytest.mark.parametrize("stack", STACKS)
def test_component_tree(stack: str) -> None:
    _, _, everything = recorded_all(stack)
    urns = [r.urn for r in everything]
    assert len(urns) == len(set(urns)), "duplicate URNs"
    _, _, resources = recorded(stack)
    by_urn = {r.urn: r for r in resources}
    components = {r.type for r in resources if not r.custom and r.type != "pulumi:pulumi:Stack"}
    assert components == {
        "gpuplat:index:GpuPlatform",
        "gpuplat:index:Network",
        "gpuplat:index:Cluster",
        "gpuplat:index:Karpenter",
        "gpuplat:index:Fabric",
        "gpuplat:index:GpuNodePool",
        "gpuplat:index:CpuNodePool",
        "gpuplat:index:StorageTiers",
        *(["gpuplat:index:Procurement"] if stack == "prod" else []),
    }
    for r in resources:
        if r.parent is None or r.type.startswith("pulumi:"):
            continue
        parent = by_urn[r.parent]
        if parent.type != "pulumi:pulumi:Stack":
            assert r.name.startswith(f"{parent.name}-"), f"{r.name} is not named after its parent {parent.name}"


def _resource_class(type_: str) -> Any:
    package, module, name = type_.split(":")
    return getattr(importlib.import_module(f"pulumi_{package}.{module.split('/')[0]}"), name)


@pytest.mark.parametrize("stack", STACKS)
def test_every_taggable_aws_resource_carries_the_spec_tags_and_a_name(stack: str) -> None:
    model, _, resources = recorded(stack)
    for r in resources:
        if not r.type.startswith("aws:"):
            continue
        if "tags" not in inspect.signature(_resource_class(r.type)._internal_init).parameters:
            continue
        tags = r.inputs.get("tags", {})
        assert dict(model.metadata.tags).items() <= tags.items(), r.name
        assert tags.get("Name"), r.name


@pytest.mark.parametrize("stack", STACKS)
def test_secure_defaults(stack: str) -> None:
    model, _, resources = recorded(stack)
    eks = single(resources, "aws:eks/cluster:Cluster").inputs
    assert eks["encryptionConfig"]["resources"] == ["secrets"] and eks["encryptionConfig"]["provider"]["keyArn"]
    assert eks["accessConfig"]["authenticationMode"] == "API"
    assert eks["vpcConfig"]["endpointPrivateAccess"] is True
    assert eks["vpcConfig"]["endpointPublicAccess"] is (model.target.endpoint == "public")
    assert set(eks["enabledClusterLogTypes"]) == {"api", "audit", "authenticator", "controllerManager", "scheduler"}
    assert all(r.inputs["enableKeyRotation"] for r in of_type(resources, "aws:kms/key:Key"))

    template = single(resources, "aws:ec2/launchTemplate:LaunchTemplate").inputs
    assert template["metadataOptions"]["httpTokens"] == "required"
    assert all(m["ebs"]["encrypted"] == "true" for m in template["blockDeviceMappings"])
    for node_class in custom_resources(resources, NODE_CLASS):
        spec = node_class["spec"]
        assert spec["metadataOptions"]["httpTokens"] == "required"
        assert spec["metadataOptions"]["httpPutResponseHopLimit"] == 1
        roots = [m for m in spec["blockDeviceMappings"] if m.get("rootVolume")]
        assert len(roots) == 1 and roots[0]["ebs"]["encrypted"] is True
        assert spec["instanceStorePolicy"] == "RAID0"

    assert all(fs.inputs["kmsKeyId"] for fs in of_type(resources, "aws:fsx/lustreFileSystem:LustreFileSystem"))
    sse = of_type(resources, "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration")
    kms_encrypted = {
        r.name.removesuffix("-sse")
        for r in sse
        if r.inputs["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "aws:kms"
        and r.inputs["rules"][0]["applyServerSideEncryptionByDefault"]["kmsMasterKeyId"]
    }
    buckets = of_type(resources, "aws:s3/bucket:Bucket") + of_type(resources, "aws:s3/directoryBucket:DirectoryBucket")
    assert {b.name for b in buckets} == kms_encrypted
    block = single(resources, "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock").inputs
    assert all(
        block[k] is True for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
    )
    assert single(resources, "aws:s3/bucketOwnershipControls:BucketOwnershipControls").inputs["rule"] == {
        "objectOwnership": "BucketOwnerEnforced"
    }
    policy = json.loads(single(resources, "aws:s3/bucketPolicy:BucketPolicy").inputs["policy"])
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for s in policy["Statement"]
    )
    assert single(resources, "aws:sqs/queue:Queue").inputs["sqsManagedSseEnabled"] is True

    for type_ in STATEFUL:
        for r in of_type(resources, type_):
            assert r.options.get("protect") is True and r.options.get("retainOnDelete") is True, r.name


def test_endpoint_is_private_in_prod_and_public_only_where_asked() -> None:
    for stack, public in (("prod", False), ("staging", False), ("dev", True)):
        _, _, resources = recorded(stack)
        assert single(resources, "aws:eks/cluster:Cluster").inputs["vpcConfig"]["endpointPublicAccess"] is public


@pytest.mark.parametrize("stack", STACKS)
def test_karpenter_policy_is_scoped(stack: str) -> None:
    _, _, resources = recorded(stack)
    policies = {r.name: json.loads(r.inputs["policy"]) for r in of_type(resources, "aws:iam/rolePolicy:RolePolicy")}
    policy = policies["atlas-karpenter-controller"]
    statements = {s["Sid"]: s for s in policy["Statement"]}
    node_role_arn = single(resources, "aws:eks/accessEntry:AccessEntry").inputs["principalArn"]
    assert statements["AllowPassingInstanceRole"]["Resource"] == node_role_arn
    cluster = single(resources, "aws:eks/cluster:Cluster")
    assert statements["AllowAPIServerEndpointDiscovery"]["Resource"].endswith(f":cluster/{cluster.inputs['name']}")
    assert statements["AllowInterruptionQueueActions"]["Resource"].startswith("arn:aws:sqs:")
    for s in policy["Statement"]:
        actions = [s["Action"]] if isinstance(s["Action"], str) else s["Action"]
        assert all(not a.endswith("*") for a in actions), s["Sid"]
        if s["Resource"] == "*":  # only reads, and EC2 reads only in this region
            assert all(a.split(":")[1].startswith(("Describe", "Get", "List")) for a in actions), s["Sid"]
    roles = {r.name: json.loads(r.inputs["assumeRolePolicy"]) for r in of_type(resources, "aws:iam/role:Role")}
    assert roles["atlas-karpenter-controller"]["Statement"][0]["Principal"] == {"Service": "pods.eks.amazonaws.com"}


@pytest.mark.parametrize("stack", STACKS)
def test_karpenter_objects_are_valid_against_the_upstream_crds(stack: str) -> None:
    _, _, resources = recorded(stack)
    for kind in (NODE_CLASS, NODE_POOL, NODE_OVERLAY):
        objects = custom_resources(resources, kind)
        assert objects
        for obj in objects:
            assert list(crd_errors(kind, obj)) == [], obj["metadata"]["name"]


@pytest.mark.parametrize("stack", STACKS)
def test_karpenter_cel_rules_the_schema_cannot_check(stack: str) -> None:
    _, _, resources = recorded(stack)
    restricted_tags = (
        "eks:eks-cluster-name",
        "karpenter.sh/nodepool",
        "karpenter.sh/nodeclaim",
        "karpenter.k8s.aws/ec2nodeclass",
    )
    for obj in custom_resources(resources, NODE_CLASS):
        spec = obj["spec"]
        assert [t["alias"].split("@")[0] for t in spec["amiSelectorTerms"]] == ["al2023"]
        assert ("role" in spec) != ("instanceProfile" in spec)
        assert all(k not in restricted_tags and not k.startswith("kubernetes.io/cluster") for k in spec["tags"])
        for terms in ("subnetSelectorTerms", "securityGroupSelectorTerms", "capacityReservationSelectorTerms"):
            assert all(t.get("tags") and all(t["tags"].values()) for t in spec.get(terms, [])), terms
        interfaces = spec.get("networkInterfaces", [])
        if interfaces:
            pairs = [(i["networkCardIndex"], i["deviceIndex"]) for i in interfaces]
            assert len(pairs) == len(set(pairs))
            assert {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"} in interfaces
            efa_cards = [i["networkCardIndex"] for i in interfaces if i["interfaceType"] == "efa-only"]
            assert len(efa_cards) == len(set(efa_cards)), "at most one EFA per network card"
    for obj in custom_resources(resources, NODE_POOL):
        labels = obj["spec"]["template"]["metadata"]["labels"]
        for key in labels:
            domain = key.split("/")[0] if "/" in key else ""
            assert not domain.endswith(("karpenter.sh", "karpenter.k8s.aws")) and key != "kubernetes.io/hostname"
        assert all(r["values"] for r in obj["spec"]["template"]["spec"]["requirements"] if r["operator"] == "In")


@pytest.mark.parametrize("stack", STACKS)
def test_helm_values_exist_in_the_charts(stack: str) -> None:
    _, _, resources = recorded(stack)
    partly = Partly()
    for r in of_type(resources, "kubernetes:helm.sh/v3:Release"):
        chart = next(c for c in CHARTS.values() if c.release_chart == r.inputs["chart"])
        assert r.inputs["version"] == chart.version and r.inputs["namespace"] == chart.namespace
        with partly.item(chart.key):
            defaults = chart_values(chart.key)
            assert list(unknown_value_keys(r.inputs.get("values", {}), defaults)) == [], chart.key
    partly.done()


def test_subnets_follow_the_zone_letter_not_the_list_position() -> None:
    a, b, c = (subnet_cidrs("10.40.0.0/16", f"us-east-1{z}") for z in "abc")
    assert a == ("10.40.0.0/19", "10.40.224.0/23") and b == ("10.40.32.0/19", "10.40.226.0/23")
    cidrs = [*a, *b, *c]
    assert len(set(cidrs)) == 6


def _with_extra_pool_and_tenant(tmp_path: Path) -> Path:
    overlay = yaml.safe_load((ROOT / "stacks" / "prod.yaml").read_text(encoding="utf-8"))
    overlay["gpuNodePools"].append(
        {
            "name": "extra",
            "new": True,
            "instanceType": "g6.12xlarge",
            "nodes": {"min": 0, "max": 2},
            "markets": ["on-demand"],
        }
    )
    overlay["tenants"].append({"name": "newcomer", "new": True, "gpus": 4})
    path = tmp_path / "prod-extra.yaml"
    path.write_text(yaml.safe_dump(overlay), encoding="utf-8")
    return path


def test_adding_a_pool_and_a_tenant_renames_nothing(tmp_path: Path) -> None:
    _, _, before = recorded_all("prod")
    model, plan = compile_model("prod", _with_extra_pool_and_tenant(tmp_path))
    after = {r.urn for r in record(model, plan, "prod")}
    missing = sorted(r.urn for r in before if r.urn not in after)
    assert missing == []
    assert any(r.endswith("::atlas-pool-extra") for r in after)
    assert any(r.endswith("::atlas-tenant-newcomer") for r in after)


def test_main_program_records_the_same_resources() -> None:
    _, _, expected = recorded_all("dev")
    resources = record_main(ROOT / "__main__.py", project=PROJECT, stack="dev", config={"aws:region": "us-east-1"})
    assert {r.urn for r in expected} <= {r.urn for r in resources}


@pytest.mark.parametrize("stack", STACKS)
def test_fabric_pools_are_never_disrupted_under_a_running_job(stack: str) -> None:
    model, _, resources = recorded(stack)
    for obj in custom_resources(resources, NODE_POOL):
        spec = obj["spec"]
        if obj["metadata"]["name"] == CPU_NODE_POOL:
            continue  # tests/test_cpu_node_pool.py
        pool = model.pools_by_name[spec["template"]["spec"]["nodeClassRef"]["name"]]
        disruption = spec["disruption"]
        assert disruption["consolidateAfter"] == model.autoscaling.cooldown
        # Consolidating underutilized GPU nodes evicts running jobs to repack them.
        assert disruption["consolidationPolicy"] == "WhenEmpty"
        if pool.fabric:
            assert spec["template"]["spec"]["expireAfter"] == "Never"
            assert disruption["budgets"] == [{"nodes": "1"}]


@pytest.mark.parametrize("stack", STACKS)
def test_a_node_whose_gpu_fails_is_detected_and_replaced(stack: str) -> None:
    """The EKS node monitoring agent sets AcceleratedHardwareReady=False on a node with a GPU
    fault; Karpenter replaces a node with that condition only with its NodeRepair gate on."""
    _, _, resources = recorded(stack)
    addons = of_type(resources, "aws:eks/addon:Addon")
    (agent,) = [r for r in addons if r.inputs["addonName"] == "eks-node-monitoring-agent"]
    # Installed once the system nodes exist (the add-on is ACTIVE only when its pods run).
    assert single(resources, "aws:eks/nodeGroup:NodeGroup").urn in set(agent.options["dependsOn"])
    controller = next(r for r in of_type(resources, "kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "karpenter")
    gates = controller.inputs["values"]["settings"]["featureGates"]
    assert gates["nodeRepair"] is True
    # The gate is the chart's own key (a misspelt one would leave repair off without a word).
    assert "nodeRepair" in chart_values("karpenter")["settings"]["featureGates"]


@pytest.mark.parametrize("stack", STACKS)
def test_karpenter_knows_what_shared_pools_advertise(stack: str) -> None:
    """A pod asking for a MIG slice, a time-sliced / MPS replica or a HAMi vGPU matches an instance
    type only through a NodeOverlay adding what the pool's nodes advertise."""
    model, plan, resources = recorded(stack)
    overlays = custom_resources(resources, NODE_OVERLAY)
    node_pools = {o["metadata"]["name"]: o for o in custom_resources(resources, NODE_POOL)}
    node_pools.pop(CPU_NODE_POOL)
    gates = next(r for r in of_type(resources, "kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "karpenter")
    assert gates.inputs["values"]["settings"]["featureGates"]["nodeOverlay"] is True
    for pool in model.pools:
        units = plan.pool(pool.name).units
        mine = [
            n
            for n, o in node_pools.items()
            if o["spec"]["template"]["metadata"]["labels"]["gpuplat.dev/pool"] == pool.name
        ]
        covering = [
            o
            for o in overlays
            if set(next(r["values"] for r in o["spec"]["requirements"] if r["key"] == "karpenter.sh/nodepool"))
            == set(mine)
        ]
        if units.resource == "nvidia.com/gpu" or not mine:
            assert covering == [], pool.name
            continue
        (overlay,) = covering
        assert overlay["spec"]["capacity"] == {r: str(n) for r, n in units.resources.items()}, pool.name


def test_provider_kubernetes_builds_no_aws_side_and_a_provider_from_stack_config() -> None:
    compiled = compile_stack("dev", spec=str(ROOT / "tests" / "fixtures" / "kubernetes_example.yaml"), overlay="")
    assert compiled.ok and compiled.model is not None and compiled.plan is not None
    model, plan = compiled.model, compiled.plan

    def program() -> None:
        GpuPlatform(model.metadata.name, GpuPlatformArgs(model, plan))

    resources = record_program(
        program, project=PROJECT, stack="dev", config={"gpu-platform:kubeconfig": "apiVersion: v1\nkind: Config\n"}
    )
    assert not [r for r in resources if r.type.startswith("aws:") or r.type in AWS_COMPONENTS]
    provider = single(tuple(resources), "pulumi:providers:kubernetes")
    assert provider.name == f"{model.metadata.name}-k8s"
    assert provider.inputs["kubeconfig"] == "<secret>"
    assert provider.inputs.get("context") == model.target.context


@pytest.mark.parametrize("stack", STACKS)
def test_s3_csi_driver_reaches_exactly_the_platform_buckets(stack: str) -> None:
    _, _, resources = recorded(stack)
    policies = {r.name: json.loads(r.inputs["policy"]) for r in of_type(resources, "aws:iam/rolePolicy:RolePolicy")}
    statements = {s["Sid"]: s for s in policies["atlas-storage-s3-csi"]["Statement"]}
    cold_arn = json.loads(single(resources, "aws:s3/bucketPolicy:BucketPolicy").inputs["policy"])["Statement"][0][
        "Resource"
    ][0]
    warm = single(resources, "aws:s3/directoryBucket:DirectoryBucket").inputs["bucket"]
    assert statements["MountpointBucketAccess"]["Resource"] == [cold_arn]
    assert statements["MountpointObjectAccess"]["Resource"] == [f"{cold_arn}/*"]
    assert statements["MountpointExpressSessions"]["Resource"] == [
        f"arn:aws:s3express:us-east-1:123456789012:bucket/{warm}"
    ]
    assert statements["StorageKey"]["Resource"].startswith("arn:aws:kms:")
    association = next(
        r for r in of_type(resources, "aws:eks/podIdentityAssociation:PodIdentityAssociation") if "s3-csi" in r.name
    )
    assert association.inputs["namespace"] == S3_CSI_NAMESPACE


@pytest.mark.parametrize(
    ("region", "zones", "zone_id"),
    [("us-west-2", ["us-west-2a", "us-west-2b"], "usw2-az1"), ("us-east-1", ["us-east-1b", "us-east-1f"], "use1-az5")],
)
def test_warm_tier_finds_its_zone_id_in_the_spec_region(
    tmp_path: Path, region: str, zones: list[str], zone_id: str
) -> None:
    target = {"region": region, "zones": zones, "endpoint": "public"}
    model, plan = compile_model("dev", overlay_with(tmp_path, "dev", target=target))
    resources = record(model, plan, "dev", config={"aws:region": "us-east-1"})  # the stack says us-east-1
    warm = single(tuple(resources), "aws:s3/directoryBucket:DirectoryBucket").inputs
    assert warm["location"]["name"] == zone_id and warm["bucket"] == f"atlas-dev-warm-{ACCOUNT_ID}--{zone_id}--x-s3"


def test_the_spec_region_wins_over_the_stack_region_through_one_explicit_provider(tmp_path: Path) -> None:
    target = {"region": "eu-west-1", "zones": ["eu-west-1a", "eu-west-1b"], "endpoint": "public"}
    model, plan = compile_model("dev", overlay_with(tmp_path, "dev", target=target))
    stack_tags = {"tags": {"environment": "dev", "team": "from-stack"}}
    config = {"aws:region": "us-east-1", "aws:defaultTags": json.dumps(stack_tags)}
    resources = tuple(record(model, plan, "dev", config=config))
    provider = single(resources, "pulumi:providers:aws")
    assert provider.name == "atlas-aws" and provider.inputs["region"] == "eu-west-1"
    # The spec's tags win over the stack's, and ride on every object through the provider.
    assert json.loads(provider.inputs["defaultTags"])["tags"] == {"environment": "dev", **model.metadata.tags}
    aws_resources = [r for r in resources if r.type.startswith("aws:")]
    assert aws_resources and all(r.options.get("provider") == provider.urn for r in aws_resources)
    eks = single(resources, "aws:eks/cluster:Cluster")
    assert eks.inputs["encryptionConfig"]["provider"]["keyArn"].startswith("arn:aws:kms:eu-west-1:")
    warm = single(resources, "aws:s3/directoryBucket:DirectoryBucket").inputs
    assert warm["location"]["name"] == "euw1-az1"


@pytest.mark.parametrize("stack", STACKS)
def test_standard_work_gets_its_own_file_system_and_the_critical_one_keeps_its_share(stack: str) -> None:
    model, plan, resources = recorded(stack)
    hot = plan.storage.hot
    assert hot is not None and hot.throughput_mbps is not None
    systems = {r.name: r for r in of_type(resources, "aws:fsx/lustreFileSystem:LustreFileSystem")}
    critical = systems["atlas-storage-hot"]  # the existing file system keeps its name and size
    assert (critical.inputs["storageCapacity"], critical.inputs["perUnitStorageThroughput"]) == (
        hot.capacity_gib,
        hot.throughput_per_tib,
    )
    standard = systems.get("atlas-storage-hot-standard")
    assert (standard is not None) == any(t.priority not in ("high", "critical") for t in model.tenants)
    if standard is None:
        return
    assert hot.standard is not None
    size, rate = standard.inputs["storageCapacity"], standard.inputs["perUnitStorageThroughput"]
    assert (size, rate) == (hot.standard.capacity_gib, hot.standard.throughput_per_tib)
    critical_mbps, standard_mbps = hot.throughput_mbps, size / 1000 * rate
    assert standard_mbps / (critical_mbps + standard_mbps) <= 1 - model.storage.critical_iops_share + 1e-9
    for key in ("subnetIds", "securityGroupIds", "kmsKeyId", "deploymentType", "fileSystemTypeVersion"):
        assert standard.inputs[key] == critical.inputs[key], key
    assert standard.options["protect"] and standard.options["retainOnDelete"]
    exports = {
        r.name: r.inputs["dataRepositoryPath"]
        for r in of_type(resources, "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation")
    }
    assert exports["atlas-storage-hot-export"].endswith("/hot/")
    assert exports["atlas-storage-hot-standard-export"].endswith("/hot-standard/")


def test_ebs_csi_driver_gets_its_managed_policy_through_pod_identity() -> None:
    _, _, resources = recorded("dev")
    (addon,) = [r for r in of_type(resources, "aws:eks/addon:Addon") if r.inputs["addonName"] == "aws-ebs-csi-driver"]
    (association,) = addon.inputs["podIdentityAssociations"]
    assert association["serviceAccount"] == "ebs-csi-controller-sa"
    roles = {r.name: r for r in of_type(resources, "aws:iam/role:Role")}
    role = roles["atlas-cluster-ebs-csi"]
    trust = json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert sorted(trust["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    attached = [
        r.inputs["policyArn"]
        for r in of_type(resources, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if r.name.startswith("atlas-cluster-ebs-csi-")
    ]
    assert attached == ["arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy"]
    # The controller runs on the system nodes and takes credentials from the Pod Identity agent.
    deps = set(addon.options["dependsOn"])
    nodegroup = single(resources, "aws:eks/nodeGroup:NodeGroup")
    assert nodegroup.urn in deps
