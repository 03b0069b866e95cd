"""`gpuplat preview --base`: diff rules on hand-made recordings, then the real command on a git repo.

The command tests build a throw-away repository from this project's committed files (the base
commit gives dev a reserved share so capacity reservations exist), edit stacks/dev.yaml in its
working tree and run `gpuplat.cli.main` there. Recordings are cached by the content of the
recorded tree, so each distinct tree is recorded once per module (~5 s each).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gpuplat.commands import preview as command
from gpuplat.preview.diff import Change, alias_urns, diff_resources
from gpuplat.preview.engine import RecordedResource
from gpuplat.preview.replacements import STATEFUL_TYPES, replacing_fields
from tests.support_git import Run, git, run_cli

ROOT = Path(__file__).resolve().parents[1]
PREFIX = "urn:pulumi:dev::gpu-platform::"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"


# ---- rules on hand-made recordings (no Pulumi) --------------------------------------------------


def _res(type_: str, name: str, inputs: dict[str, Any], **options: Any) -> RecordedResource:
    return RecordedResource(f"{PREFIX}{type_}::{name}", type_, name, None, True, inputs, options)


def _ops(changes: list[Change]) -> dict[str, str]:
    return {c.name: c.op for c in changes}


def test_fsx_capacity_increase_updates_and_decrease_replaces() -> None:
    assert replacing_fields(FSX, ["storageCapacity"], {"storageCapacity": 2400}, {"storageCapacity": 4800}) == []
    assert replacing_fields(FSX, ["storageCapacity"], {"storageCapacity": 4800}, {"storageCapacity": 2400}) == [
        "storageCapacity"
    ]
    assert replacing_fields(FSX, ["subnetIds"], {"subnetIds": "a"}, {"subnetIds": "b"}) == ["subnetIds"]
    assert replacing_fields(FSX, ["perUnitStorageThroughput"], {}, {}) == []  # in place since provider v5


def test_conditional_rules_lustre_version_eks_encryption_and_api_group() -> None:
    assert (
        replacing_fields(
            FSX, ["fileSystemTypeVersion"], {"fileSystemTypeVersion": "2.12"}, {"fileSystemTypeVersion": "2.15"}
        )
        == []
    )
    assert replacing_fields(
        FSX, ["fileSystemTypeVersion"], {"fileSystemTypeVersion": "2.15"}, {"fileSystemTypeVersion": "2.12"}
    )
    eks = "aws:eks/cluster:Cluster"
    enc = {"encryptionConfig": {"provider": {"keyArn": "k"}, "resources": ["secrets"]}}
    assert replacing_fields(eks, ["encryptionConfig"], enc, {}) == ["encryptionConfig"]
    assert replacing_fields(eks, ["encryptionConfig"], {}, enc) == []  # adding encryption is an update
    assert replacing_fields(eks, ["vpcConfig.subnetIds"], {}, {}) == []  # updatable since 2024
    np = "kubernetes:karpenter.sh/v1:NodePool"
    assert (
        replacing_fields(np, ["apiVersion"], {"apiVersion": "karpenter.sh/v1beta1"}, {"apiVersion": "karpenter.sh/v1"})
        == []
    )
    assert replacing_fields(np, ["apiVersion"], {"apiVersion": "a.io/v1"}, {"apiVersion": "b.io/v1"}) == ["apiVersion"]
    assert replacing_fields(np, ["metadata.name"], {"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}) == [
        "metadata.name"
    ]
    assert replacing_fields(np, ["spec.limits.nvidia.com/gpu"], {}, {}) == []
    assert replacing_fields("kubernetes:helm.sh/v3:Release", ["values.x"], {}, {}) == []
    assert replacing_fields("kubernetes:helm.sh/v3:Release", ["namespace"], {"namespace": "a"}, {}) == ["namespace"]


def test_replace_on_changes_option_and_ignore_changes() -> None:
    queue = "aws:sqs/queue:Queue"
    assert replacing_fields(queue, ["tags.a"], {"tags": {"a": "1"}}, {"tags": {"a": "2"}}, ["tags"]) == ["tags.a"]
    assert replacing_fields(queue, ["delaySeconds"], {}, {}, ["*"]) == ["delaySeconds"]
    base = [_res(queue, "q", {"tags": {"a": "1"}, "delaySeconds": 0})]
    head = [_res(queue, "q", {"tags": {"a": "2"}, "delaySeconds": 0}, ignoreChanges=["tags"])]
    assert diff_resources(base, head) == []


def test_depends_on_and_aliases_are_noise_protect_is_not() -> None:
    bucket = "aws:s3/bucket:Bucket"
    base = [_res(bucket, "b", {"tags": {}}, dependsOn=["x"], protect=True)]
    head = [_res(bucket, "b", {"tags": {}}, dependsOn=["y"], aliases=[{"type": "aws:s3/bucketV2:BucketV2"}])]
    (change,) = diff_resources(base, head)
    assert (change.op, [f.path for f in change.fields], change.stateful) == ("update", ["options.protect"], True)
    assert not change.refused


def test_create_delete_and_stateful_refusal() -> None:
    base = [_res(FSX, "hot", {"storageCapacity": 4800}), _res("aws:sqs/queue:Queue", "old", {})]
    head = [_res(FSX, "hot", {"storageCapacity": 2400}), _res("aws:sqs/queue:Queue", "new", {})]
    changes = diff_resources(base, head)
    assert _ops(changes) == {"hot": "replace", "new": "create", "old": "delete"}
    assert [c.name for c in changes if c.refused] == ["hot"]
    assert changes[0].to_json() == {
        "urn": f"{PREFIX}{FSX}::hot",
        "op": "replace",
        "stateful": True,
        "fields": ["storageCapacity"],
        "type": FSX,
        "name": "hot",
        "replaceFields": ["storageCapacity"],
        "replaceCause": "storageCapacity 4800 -> 2400",
    }
    assert {
        FSX,
        "aws:eks/cluster:Cluster",
        "aws:kms/key:Key",
        "aws:s3/directoryBucket:DirectoryBucket",
    } <= STATEFUL_TYPES


def test_a_type_alias_matches_the_old_urn() -> None:
    old = "kubernetes:storage.k8s.io/v1beta1:StorageClass"
    new = "kubernetes:storage.k8s.io/v1:StorageClass"
    base = [_res(old, "sc", {"apiVersion": "storage.k8s.io/v1beta1", "provisioner": "p"})]
    head = [_res(new, "sc", {"apiVersion": "storage.k8s.io/v1", "provisioner": "p"}, aliases=[{"type": old}])]
    assert alias_urns(head[0]) == [f"{PREFIX}{old}::sc"]
    (change,) = diff_resources(base, head)
    assert (change.op, change.previous_urn, [f.path for f in change.fields]) == ("update", base[0].urn, ["apiVersion"])


def test_a_replacement_reaches_the_inputs_that_hold_its_id() -> None:
    subnet = _res("aws:ec2/subnet:Subnet", "net-a", {"cidrBlock": "10.0.0.0/19"})
    moved = _res("aws:ec2/subnet:Subnet", "net-a", {"cidrBlock": "10.1.0.0/19"})
    fsx = _res(FSX, "hot", {"subnetIds": "net-a-id", "storageCapacity": 1200}, dependsOn=[subnet.urn])
    sg = _res("aws:ec2/securityGroup:SecurityGroup", "sg", {"tags": {"net": "net-a-id"}}, dependsOn=[subnet.urn])
    unrelated = _res("aws:sqs/queue:Queue", "q", {"name": "net-a-idle"}, dependsOn=[subnet.urn])
    changes = diff_resources([subnet, fsx, sg, unrelated], [moved, fsx, sg, unrelated])
    assert _ops(changes) == {"net-a": "replace", "hot": "replace", "sg": "update"}
    hot = next(c for c in changes if c.name == "hot")
    assert [(f.path, f.via) for f in hot.fields] == [("subnetIds", subnet.urn)]
    assert hot.refused


# ---- the command on a real repository -----------------------------------------------------------


def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for sub in ("__main__.py", "platform", "stacks", "gpuplat", "components"):
        for path in sorted((root / sub).rglob("*")) if (root / sub).is_dir() else [root / sub]:
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


class Project:
    """A git repository holding a copy of the project, and `gpuplat` run inside it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.dev = root / "stacks" / "dev.yaml"
        self.base_dev = self.dev.read_text(encoding="utf-8")

    @contextmanager
    def overlay(self, *edits: tuple[str, str]) -> Iterator[None]:
        """stacks/dev.yaml of the base with each (old, new) replaced, for the duration."""
        text = self.base_dev
        for old, new in edits:
            assert old in text, f"{old!r} not in dev.yaml"
            text = text.replace(old, new)
        self.dev.write_text(text, encoding="utf-8")
        try:
            yield
        finally:
            self.dev.write_text(self.base_dev, encoding="utf-8")

    def run(self, *argv: str, cwd: Path | None = None) -> Run:
        return run_cli(cwd or self.root, *argv)

    def preview(self, *extra: str, base: str = "base", fmt: str = "json") -> Run:
        return self.run("preview", "--stack", "dev", "--base", base, "--format", fmt, *extra)


# Recordings by the content of the recorded tree: shared by every test module using make_project.
_RECORDINGS: dict[tuple[str | bool, ...], list[RecordedResource]] = {}
CAPACITY = (
    ("nodes: {min: 0, max: 4}", "nodes: {min: 0, max: 8}"),
    ("capacityTiB: 4.8", "capacityTiB: 9.6"),
    ("warm: {capacityTiB: 10}", "warm: {capacityTiB: 20}"),
)
PV = "kubernetes:core/v1:PersistentVolume"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
ZONES = (("target:\n", "target:\n  zones: [us-east-1b, us-east-1c]\n"),)


@contextmanager
def make_project(root: Path) -> Iterator[Project]:
    """The repository at `root`: tag `base` (dev with a reserved share, so capacity reservations
    exist), `patched` (a component differs), `nomain` (no __main__.py), `broken` (invalid dev)."""
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    dev = root / "stacks" / "dev.yaml"
    text = dev.read_text(encoding="utf-8")
    reserved = text.replace("spot: 50\n  reserved: 0\n  onDemand: 50", "spot: 40\n  reserved: 20\n  onDemand: 40")
    assert reserved != text
    dev.write_text(reserved, encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    git(root, "tag", "base")
    storage = root / "components" / "aws" / "storage.py"
    storage.write_text(storage.read_text().replace('data_compression_type="LZ4"', 'data_compression_type="NONE"'))
    git(root, "commit", "-qam", "component differs")
    git(root, "tag", "patched")
    git(root, "reset", "-q", "--hard", "base")
    git(root, "rm", "-q", "__main__.py")
    git(root, "commit", "-qm", "no program")
    git(root, "tag", "nomain")
    git(root, "reset", "-q", "--hard", "base")
    dev.write_text(reserved.replace("nodes: {min: 0, max: 4}", "nodes: {min: 5, max: 4}"), encoding="utf-8")
    git(root, "commit", "-qam", "invalid spec")
    git(root, "tag", "broken")
    git(root, "reset", "-q", "--hard", "base")

    record = command.record_stack

    def cached(
        stack: str,
        spec: str | None = None,
        overlay: str | None = None,
        root: Path = Path(),
        facts: Any = None,
        *,
        judge: bool = False,
    ) -> Any:
        if facts is not None:
            return record(stack, spec, overlay, root, facts=facts, judge=judge)
        key = (_tree_digest(root.resolve()), stack, str(spec), str(overlay), judge)
        if key not in _RECORDINGS:
            _RECORDINGS[key] = record(stack, spec, overlay, root, judge=judge)
        return _RECORDINGS[key]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(command, "record_stack", cached)
        yield Project(root)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Generator[Project]:
    with make_project(tmp_path_factory.mktemp("repo")) as made:
        yield made


@pytest.fixture(scope="module")
def capacity(project: Project) -> Run:
    """train max 4 -> 8, the hot tier 4.8 -> 9.6 TiB, warm 10 -> 20 TiB: in-place updates of stateful things."""
    with project.overlay(*CAPACITY):
        return project.preview()


@pytest.fixture(scope="module")
def zones(project: Project) -> Run:
    with project.overlay(*ZONES):
        return project.preview()


def test_capacity_changes_are_updates(capacity: Run) -> None:
    assert capacity.code == 0, capacity.err
    changes = capacity.changes()
    fsx = changes["atlas-storage-hot"]
    assert (fsx["op"], fsx["fields"], fsx["stateful"]) == ("update", ["storageCapacity"], True)
    for market in ("spot", "on-demand", "reserved"):
        pool = changes[f"atlas-pool-train-{market}"]
        assert (pool["op"], pool["fields"]) == ("update", ["spec.limits.nvidia.com/gpu"])
    reservations = [c for c in changes.values() if c["type"] == "aws:ec2/capacityReservation:CapacityReservation"]
    assert reservations and all(c["op"] == "update" and c["fields"] == ["instanceCount"] for c in reservations)
    assert not [c for c in changes.values() if c["stateful"] and c["op"] in ("replace", "delete")]
    # Every tenant's claims stay as they are (a replaced claim is cut off its Retain volume); the
    # volumes' nominal capacity follows the tiers in place.
    assert not [c for c in changes.values() if c["type"] == PVC]
    volumes = [c for c in changes.values() if c["type"] == PV]
    assert {c["name"].rpartition("-pv-")[2].partition("-")[0] for c in volumes} >= {"hot", "warm"}
    assert all(c["op"] == "update" and c["fields"] == ["spec.capacity.storage"] for c in volumes)
    resources = capacity.json()["resources"]
    assert {r["urn"] for r in resources} >= {c["urn"] for c in changes.values() if c["op"] != "delete"}


def test_a_zone_change_replaces_the_file_system_and_is_refused(zones: Run, project: Project) -> None:
    assert zones.code == 1
    assert "refusing the diff" in zones.err and "--allow-replace" in zones.err and "Traceback" not in zones.err
    changes = zones.changes()
    fsx = changes["atlas-storage-hot"]
    assert fsx["op"] == "replace" and fsx["stateful"] and "subnetIds" in fsx["replaceFields"]
    warm = changes["atlas-storage-warm"]
    assert warm["op"] == "replace" and "location.name" in warm["replaceFields"]
    assert changes["atlas-network-private-us-east-1a"]["op"] == "delete"
    assert changes["atlas-network-private-us-east-1c"]["op"] == "create"
    assert changes["atlas-cluster-eks"]["op"] == "update"  # vpcConfig.subnetIds is updatable
    with project.overlay(*ZONES):
        allowed = project.preview("--allow-replace")
        text = project.preview(fmt="text")
    assert allowed.code == 0 and allowed.json()["changes"] == zones.json()["changes"]
    assert text.code == 1
    assert f"+- replace  {FSX}  atlas-storage-hot  STATEFUL" in text.out
    assert "subnetIds" in text.out and "(forces replacement)" in text.out
    assert text.out.strip().splitlines()[-1].endswith("(base base)")


def test_a_cidr_change_cascades_through_subnet_ids(project: Project) -> None:
    with project.overlay(("storage:\n", "network:\n  vpcCidr: 10.41.0.0/16\nstorage:\n")):
        run = project.preview()
    assert run.code == 1
    changes = run.changes()
    assert changes["atlas-network-vpc"]["op"] == "replace"
    assert changes["atlas-network-private-us-east-1a"]["op"] == "replace"
    fsx = changes["atlas-storage-hot"]
    # Its own inputs did not change: the new subnet and the new security group (new VPC) did.
    assert fsx["op"] == "replace" and set(fsx["replaceFields"]) == {"subnetIds", "securityGroupIds"}
    assert changes["atlas-storage-lustre"]["op"] == "replace"


def test_adding_a_tenant_only_creates(project: Project) -> None:
    tenant = (
        "  - {name: product, gpus: 8}\n",
        "  - {name: product, gpus: 8}\n  - {name: vision, new: true, gpus: 8}\n",
    )
    with project.overlay(tenant):
        run = project.preview()
    assert run.code == 0, run.err
    # Only creations, the cold lifecycle gaining the tenant's tiering rule (one per prefix), and
    # the priority policy's map of tenant -> allowed PriorityClasses gaining the tenant.
    updates = {c["urn"].rsplit("::", 1)[1] for c in run.json()["changes"] if c["op"] == "update"}
    assert {c["op"] for c in run.json()["changes"]} <= {"create", "update"}
    assert updates <= {"atlas-storage-cold-lifecycle", "atlas-priority-scope-policy"}
    assert "atlas-tenant-vision-ns" in run.changes()


def test_the_base_runs_its_own_components(project: Project) -> None:
    run = project.preview(base="patched")
    assert run.code == 0, run.err
    changes = run.json()["changes"]
    # Both hot file systems (critical and standard) are built by the patched function.
    assert [(c["name"], c["op"], c["fields"]) for c in changes] == [
        (name, "update", ["dataCompressionType"]) for name in ("atlas-storage-hot", "atlas-storage-hot-standard")
    ]
    text = project.preview(base="patched", fmt="text").out
    assert 'dataCompressionType: "NONE" -> "LZ4"' in text
    assert Path(sys.modules["gpuplat"].__file__ or "").resolve().is_relative_to(ROOT)
    assert "components" not in sys.modules or not str(sys.modules["components"].__file__).startswith(str(project.root))


def test_bad_refs_and_bases_are_user_errors(project: Project, tmp_path: Path) -> None:
    missing = project.preview(base="no-such-ref")
    assert missing.code == 2 and "no-such-ref" in missing.err and "Traceback" not in missing.err
    nomain = project.preview(base="nomain")
    assert nomain.code == 1 and "__main__.py" in nomain.err
    broken = project.preview(base="broken")
    assert broken.code == 1 and "--base broken" in broken.err and "invalid" in broken.err
    copy = tmp_path / "copy"
    shutil.copytree(project.root, copy, ignore=shutil.ignore_patterns(".git"))
    outside = project.run("preview", "--stack", "dev", "--base", "HEAD", cwd=copy)
    assert outside.code == 2 and "not inside a git repository" in outside.err
