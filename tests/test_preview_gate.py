"""The diff gate beyond stateful AWS types: tenant data, what AWS refuses, NodePools that drain.

Hand-made recordings first, then the command on a throw-away repository (make_project of
test_preview_diff: tag `base` is the project's dev stack, each test edits stacks/dev.yaml).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from gpuplat.catalog.labels import TENANT_LABEL
from gpuplat.policies import REGISTRY, Context
from gpuplat.preview.diff import diff_resources, summarize
from gpuplat.preview.engine import RecordedResource
from gpuplat.preview.replacements import replacing_fields
from gpuplat.preview.stateful import is_stateful, must_retain

from .test_preview_diff import Project, make_project

PREFIX = "urn:pulumi:dev::gpu-platform::"
NS = "kubernetes:core/v1:Namespace"
PV = "kubernetes:core/v1:PersistentVolume"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
EKS = "aws:eks/cluster:Cluster"
VPC = "aws:ec2/vpc:Vpc"
SUBNET = "aws:ec2/subnet:Subnet"
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
TENANT = {TENANT_LABEL: "research"}


def _res(type_: str, name: str, inputs: dict[str, Any], **options: Any) -> RecordedResource:
    return RecordedResource(f"{PREFIX}{type_}::{name}", type_, name, None, True, inputs, options)


def _k8s(type_: str, name: str, k8s_name: str, labels: dict[str, str] | None = None, **rest: Any) -> RecordedResource:
    inputs: dict[str, Any] = {"metadata": {"name": k8s_name, "labels": labels or {}}, **rest}
    return _res(type_, name, inputs)


# ---- tenant data --------------------------------------------------------------------------------


def test_a_tenants_namespace_and_claims_are_stateful_other_namespaces_are_not() -> None:
    ns, system = _k8s(NS, "ns", "research", TENANT), _k8s(NS, "sys", "atlas-system")
    claim = _k8s(PVC, "pvc", "hot", TENANT, spec={"volumeName": "atlas-hot-research"})
    root = _k8s(PVC, "root", "atlas-fsx-root", spec={"volumeName": "atlas-fsx-root"})
    assert [is_stateful(r.type, r.inputs) for r in (ns, system, claim, root)] == [True, False, True, False]
    assert must_retain(NS, ns.inputs) and not must_retain(PVC, claim.inputs)  # a retained claim blocks its successor
    changes = diff_resources([ns, system, claim, root], [])
    assert [c.name for c in summarize(changes, 0).refused] == ["ns", "pvc"]


def test_a_replaced_volume_replaces_the_claim_that_names_it() -> None:
    """A claim's volumeName is read from the volume's outputs: unknown while the volume is replaced."""
    pv = _k8s(PV, "pv", "atlas-hot-research", spec={"csi": {"volumeHandle": "fs-1::research"}})
    moved = _k8s(PV, "pv", "atlas-hot-research", spec={"csi": {"volumeHandle": "fs-2::research"}})
    claim = _k8s(PVC, "pvc", "hot", TENANT, spec={"volumeName": "atlas-hot-research"})
    claim = RecordedResource(claim.urn, claim.type, claim.name, None, True, claim.inputs, {"dependsOn": [pv.urn]})
    longer = _k8s(PVC, "other", "x", TENANT, spec={"volumeName": "atlas-hot-research-2"})
    longer = RecordedResource(longer.urn, PVC, "other", None, True, longer.inputs, {"dependsOn": [pv.urn]})
    changes = {c.name: c for c in diff_resources([pv, claim, longer], [moved, claim, longer])}
    assert (changes["pv"].op, changes["pvc"].op) == ("replace", "replace")
    assert changes["pvc"].refused and [f.via for f in changes["pvc"].fields] == [pv.urn]
    assert "other" not in changes  # a name that only starts with the volume's is another volume


def test_the_policies_want_tenant_namespaces_protected_and_retained_claims_protected() -> None:
    def found(name: str, type_: str, inputs: dict[str, Any], options: dict[str, Any]) -> list[str]:
        (policy,) = [p for p in REGISTRY if p.name == name]
        return policy.check_resource(type_, inputs, options, "urn", Context("dev"))

    ns = _k8s(NS, "ns", "research", TENANT).inputs
    claim = _k8s(PVC, "pvc", "hot", TENANT).inputs
    assert found("stateful-protect", NS, ns, {}) and found("stateful-retain-on-delete", NS, ns, {"protect": True})
    assert not found("stateful-protect", NS, ns, {"protect": True, "retainOnDelete": True})
    assert found("stateful-protect", PVC, claim, {}) and not found("stateful-retain-on-delete", PVC, claim, {})
    system = _k8s(NS, "sys", "atlas-system").inputs
    assert not found("stateful-protect", NS, system, {}) and not found("stateful-retain-on-delete", NS, system, {})


def test_pulumi_kubernetes_replace_semantics_of_volumes_claims_and_jobs() -> None:
    """provider/pkg/provider/diff.go: a claim's whole spec forces replacement, a volume's source
    does, its capacity does not; a Job's template does."""
    assert replacing_fields(PV, ["spec.capacity.storage"], {}, {}) == []
    assert replacing_fields(PV, ["spec.volumeMode"], {"spec": {"volumeMode": "a"}}, {"spec": {"volumeMode": "b"}})
    request = {"spec": {"resources": {"requests": {"storage": "1Gi"}}}}
    grown = {"spec": {"resources": {"requests": {"storage": "2Gi"}}}}
    assert replacing_fields(PVC, ["spec.resources.requests.storage"], request, grown)
    job = "kubernetes:batch/v1:Job"
    before, after = {"spec": {"template": 1}}, {"spec": {"template": 2}}
    assert replacing_fields(job, ["spec.template.spec.containers"], before, after)
    assert replacing_fields(job, ["spec.ttlSecondsAfterFinished"], {}, {}) == []


# ---- what AWS refuses -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [("1.33", "1.32", "downgrade"), ("1.33", "1.35", "one minor at a time"), ("1.33", "1.34", None)],
)
def test_an_eks_version_change_aws_refuses_is_blocked(old: str, new: str, why: str | None) -> None:
    (change,) = diff_resources([_res(EKS, "eks", {"version": old})], [_res(EKS, "eks", {"version": new})])
    assert change.op == "update" and not change.refused  # the provider would call it an in-place update
    if why is None:
        assert change.blocked == ()
        return
    (reason,) = change.blocked
    assert why in reason and f"{old} -> {new}" in reason
    assert summarize([change], 1).blocked == (change,)


def test_moving_eks_to_a_replaced_vpc_is_blocked_a_subnet_change_inside_it_is_not() -> None:
    vpc = _res(VPC, "vpc", {"cidrBlock": "10.40.0.0/16"})
    subnet = _res(SUBNET, "net-a", {"cidrBlock": "10.40.0.0/19", "vpcId": "vpc-id"}, dependsOn=[vpc.urn])
    eks = _res(EKS, "eks", {"vpcConfig": {"subnetIds": ["net-a-id"]}}, dependsOn=[subnet.urn])
    new_vpc = _res(VPC, "vpc", {"cidrBlock": "10.41.0.0/16"})
    new_subnet = _res(SUBNET, "net-a", {"cidrBlock": "10.41.0.0/19", "vpcId": "vpc-id"}, dependsOn=[vpc.urn])
    changes = {c.name: c for c in diff_resources([vpc, subnet, eks], [new_vpc, new_subnet, eks])}
    assert changes["eks"].op == "update"
    (reason,) = changes["eks"].blocked
    assert "vpcConfig.subnetIds" in reason and "10.40.0.0/16 -> 10.41.0.0/16" in reason and "another VPC" in reason
    same_vpc = _res(SUBNET, "net-a", {"cidrBlock": "10.40.32.0/19", "vpcId": "vpc-id"}, dependsOn=[vpc.urn])
    changes = {c.name: c for c in diff_resources([vpc, subnet, eks], [vpc, same_vpc, eks])}
    assert changes["eks"].op == "update" and changes["eks"].blocked == ()


def test_the_pull_request_comment_shows_what_aws_refuses() -> None:
    from gpuplat.render.comment import _changes_section  # pyright: ignore[reportPrivateUsage]
    from gpuplat.render.comment_summary import lead

    changes = diff_resources([_res(EKS, "eks", {"version": "1.33"})], [_res(EKS, "eks", {"version": "1.32"})])
    section = _changes_section(changes, 1, allow_replace=True)
    assert "> [!CAUTION]\n> 1 change(s) AWS would refuse; the preview fails, `--allow-replace` or not:" in section
    assert "> - **`eks`** (aws:eks/cluster:Cluster): Kubernetes version 1.33 -> 1.32 is a downgrade" in section
    assert "| **update** ⛔ | **`eks`** (refused by AWS) |" in section
    assert "(1 refused by AWS ⛔)" in lead([], changes, (None, None), [])


def test_a_deleted_node_pool_is_named_as_drained() -> None:
    pool = _k8s(NODE_POOL, "atlas-pool-dev-spot", "dev-spot", spec={"limits": {"nvidia.com/gpu": "4"}})
    (change,) = diff_resources([pool], [])
    assert (change.op, change.drains, change.refused) == ("delete", "dev-spot", False)
    assert change.to_json()["drainsNodePool"] == "dev-spot"


# ---- the command ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Generator[Project]:
    with make_project(tmp_path_factory.mktemp("repo")) as made:
        yield made


RENAME = (
    "  - {name: product, gpus: 8}\n",
    "  - {name: product, remove: true}\n  - {name: retail, new: true, gpus: 8}\n",
)


def test_renaming_a_tenant_is_refused_it_deletes_its_namespace(project: Project) -> None:
    with project.overlay(RENAME):
        run = project.preview()
        allowed = project.preview("--allow-replace")
    assert run.code == 1 and "refusing the diff" in run.err
    refused = {c["name"] for c in run.json()["changes"] if c["stateful"] and c["op"] == "delete"}
    assert "atlas-tenant-product-ns" in refused
    assert {f"atlas-storage-classes-pvc-{tier}-product" for tier in ("hot", "warm", "cold")} <= refused
    assert "delete kubernetes:core/v1:Namespace atlas-tenant-product-ns" in run.err
    assert allowed.code == 0, allowed.err


def test_a_tenant_moving_file_systems_replaces_its_claim_and_is_refused(project: Project) -> None:
    with project.overlay(("  - {name: product, gpus: 8}\n", "  - {name: product, gpus: 8, priority: high}\n")):
        run = project.preview()
    assert run.code == 1
    changes = run.changes()
    assert changes["atlas-storage-classes-pv-hot-product"]["op"] == "replace"
    claim = changes["atlas-storage-classes-pvc-hot-product"]
    assert claim["op"] == "replace" and claim["stateful"] and claim["replaceFields"] == ["spec.volumeName"]


@pytest.mark.parametrize(("version", "why"), [("1.35", "downgrade"), ("1.38", "one minor at a time")])
def test_a_kubernetes_version_aws_refuses_fails_even_with_allow_replace(
    project: Project, version: str, why: str
) -> None:
    with project.overlay(("target:\n", f'target:\n  kubernetesVersion: "{version}"\n')):
        run = project.preview("--allow-replace")
        text = project.preview(fmt="text")
    assert run.code == 1 and "AWS would refuse" in run.err and why in run.err
    (blocked,) = run.changes()["atlas-cluster-eks"]["blocked"]
    assert f"1.36 -> {version}" in blocked
    assert text.code == 1 and "atlas-cluster-eks  BLOCKED" in text.out and "! Kubernetes version 1.36" in text.out


def test_a_vpc_cidr_change_is_refused_for_the_cluster_even_with_allow_replace(project: Project) -> None:
    with project.overlay(("storage:\n", "network:\n  vpcCidr: 10.41.0.0/16\nstorage:\n")):
        run = project.preview("--allow-replace")
    assert run.code == 1 and "AWS would refuse" in run.err
    (blocked,) = run.changes()["atlas-cluster-eks"]["blocked"]
    assert "10.40.0.0/16 -> 10.41.0.0/16" in blocked and "another VPC" in blocked


def test_removing_a_pool_warns_that_its_node_pools_drain(project: Project) -> None:
    remove = ("  - name: dev\n    nodes: {min: 0, max: 2}\n", "  - name: dev\n    remove: true\n")
    with project.overlay(remove):
        text = project.preview(fmt="text")
        markdown = project.preview(fmt="markdown")
        document = project.preview()
    assert text.code == markdown.code == document.code == 0, text.err
    pools = [c for c in document.json()["changes"] if c["type"] == NODE_POOL and c["op"] == "delete"]
    assert [c["drainsNodePool"] for c in pools] == ["dev-spot"]  # the base gives dev only spot nodes
    warning = "1 NodePool(s) deleted or replaced (dev-spot): Karpenter will drain their nodes"
    assert f"warning: {warning}" in text.out
    assert "> [!WARNING]\n> 1 NodePool(s) deleted or replaced (`dev-spot`): Karpenter will drain" in markdown.out
    lead = next(line for line in markdown.out.splitlines() if " · GPU cost" in line)  # under what blocks
    assert "(1 NodePool(s) drained)" in lead
    (only,) = document.json()["warnings"]
    assert only.startswith(warning) and "evict the GPU jobs" in only


def test_a_change_that_drains_nothing_warns_nothing(project: Project) -> None:
    with project.overlay(("nodes: {min: 0, max: 4}", "nodes: {min: 0, max: 8}")):
        text = project.preview(fmt="text")
    assert text.code == 0 and "warning:" not in text.out and "BLOCKED" not in text.out
