"""The diff gate, round 2: no empty base, the base's own files whatever the path's form, data
destroyed by an in-place update refused like a replacement, held capacity given back named."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

import pytest

from gpuplat.preview.data_loss import LIFECYCLE, RESERVATION, losses, released
from gpuplat.preview.diff import diff_resources
from gpuplat.preview.engine import RecordedResource
from tests.test_preview_diff import ZONES, Project, make_project

COLD = ("storage:\n", "storage:\n  cold: {expireAfterDays: 200}\n")


def _rule(rule_id: str, expire: int, glacier: int = 30) -> dict[str, object]:
    return {
        "id": rule_id,
        "status": "Enabled",
        "expiration": {"days": expire},
        "transitions": [{"days": glacier, "storageClass": "GLACIER_IR"}],
    }


def test_lifecycle_losses_on_hand_made_inputs() -> None:
    base = {"rules": [_rule("a", 1095), _rule("b", 1095)]}
    assert losses(LIFECYCLE, "update", base, {"rules": [_rule("a", 2000), _rule("b", 1095)]}) == ()
    shorter = losses(LIFECYCLE, "update", base, {"rules": [_rule("a", 200), _rule("b", 1095, glacier=10)]})
    assert len(shorter) == 2 and "after 200 days (was 1095 days)" in shorter[0] and "GLACIER_IR" in shorter[1]
    # A new tenant's rule expires objects under a prefix that has none yet; an old rule that
    # gains an expiration deletes what it had kept for ever.
    assert losses(LIFECYCLE, "update", base, {"rules": [*base["rules"], _rule("c", 30)]}) == ()
    kept = {"rules": [{"id": "a", "status": "Enabled"}]}
    assert losses(LIFECYCLE, "update", kept, {"rules": [_rule("a", 3000)]})
    assert losses(LIFECYCLE, "update", base, {"rules": [_rule("a", 1095)]}) == ()
    versioning = "aws:s3/bucketVersioning:BucketVersioning"
    on, off = {"versioningConfiguration": {"status": "Enabled"}}, {"versioningConfiguration": {"status": "Suspended"}}
    assert losses(versioning, "update", on, off) and losses(versioning, "delete", on, None)
    assert losses(versioning, "update", off, on) == ()
    release = {"values": {"prometheus": {"prometheusSpec": {"retention": "30d"}}}}
    shorter_release = {"values": {"prometheus": {"prometheusSpec": {"retention": "2w"}}}}
    assert losses("kubernetes:helm.sh/v3:Release", "update", release, shorter_release)
    assert losses("kubernetes:helm.sh/v3:Release", "update", shorter_release, release) == ()
    fsx = "aws:fsx/lustreFileSystem:LustreFileSystem"
    assert losses(fsx, "update", {"automaticBackupRetentionDays": 7}, {"automaticBackupRetentionDays": 1})
    odcr = {"instanceCount": 2, "instanceType": "p5.48xlarge", "availabilityZone": "us-east-1a"}
    assert released(RESERVATION, "replace", odcr) == "2 x p5.48xlarge in us-east-1a"
    assert released(RESERVATION, "update", odcr) is None


def test_a_destroying_update_is_refused_in_the_diff() -> None:
    urn = "urn:pulumi:dev::gpu-platform::x::lc"
    old = RecordedResource(urn=urn, type=LIFECYCLE, name="lc", custom=True, parent=None,
                           inputs={"rules": [_rule("a", 1095)]}, options={})  # fmt: skip
    new = RecordedResource(urn=urn, type=LIFECYCLE, name="lc", custom=True, parent=None,
                           inputs={"rules": [_rule("a", 200)]}, options={})  # fmt: skip
    (change,) = diff_resources([old], [new])
    assert change.op == "update" and change.refused and change.destroys
    assert change.to_json()["destroysData"] == list(change.destroys)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Generator[Project]:
    with make_project(tmp_path_factory.mktemp("repo")) as made:
        yield made


@pytest.mark.parametrize("ref", ["", "  ", "-p"])
def test_an_empty_or_option_like_base_is_a_usage_error(project: Project, ref: str) -> None:
    run = project.run("preview", "--stack", "dev", f"--base={ref}", "--format", "json")
    assert run.code == 2 and "is not a git ref" in run.err and not run.out


def test_an_unresolvable_base_is_a_usage_error(project: Project) -> None:
    assert project.preview(base="no-such-branch").code == 2


def test_the_base_reads_its_own_overlay_whatever_the_path_form(project: Project) -> None:
    with project.overlay(*ZONES):
        runs = [
            project.preview("--overlay", form)
            for form in (str(project.dev), "stacks/../stacks/dev.yaml", f"../{project.root.name}/stacks/dev.yaml")
        ]
        spec_path = str(project.root / "platform" / "platform.yaml")
        spec = project.preview("--spec", spec_path, "--overlay", str(project.dev))
    for run in [*runs, spec]:
        assert run.code == 1 and "refusing the diff" in run.err, run.err
        assert run.changes()["atlas-storage-hot"]["op"] == "replace"


def test_a_spec_outside_the_repository_has_no_base(project: Project, tmp_path: Path) -> None:
    outside = tmp_path / "dev.yaml"
    outside.write_text(project.base_dev, encoding="utf-8")
    run = project.preview("--overlay", str(outside))
    assert run.code == 2 and "not a file of this repository" in run.err


def test_shortening_the_cold_expiry_is_refused_unless_allowed(project: Project) -> None:
    with project.overlay(COLD):
        refused = project.preview()
        text = project.preview(fmt="text")
        allowed = project.preview("--allow-replace")
    assert refused.code == 1 and "refusing the diff" in refused.err and "after 200 days" in refused.err
    lifecycle = refused.changes()["atlas-storage-cold-lifecycle"]
    assert lifecycle["op"] == "update" and any("after 200 days (was 1095 days)" in d for d in lifecycle["destroysData"])
    assert "DESTROYS DATA" in text.out and text.code == 1
    assert allowed.code == 0


def test_shortening_metrics_retention_is_refused(project: Project) -> None:
    with project.overlay(("retention: 3d", "retention: 1d")):
        run = project.preview()
    assert run.code == 1 and "Prometheus retention 1d (was 3d)" in run.err


def test_released_reservations_are_named_in_text_json_and_comment(project: Project) -> None:
    no_reserved = ("spot: 40\n  reserved: 20\n  onDemand: 40", "spot: 50\n  reserved: 0\n  onDemand: 50")
    project.base_dev, saved = project.dev.read_text(encoding="utf-8"), project.base_dev
    try:
        with project.overlay(no_reserved):
            as_json = project.preview()
            text = project.preview(fmt="text")
            comment = project.preview(fmt="markdown")
    finally:
        project.base_dev = saved
    released_changes = [c for c in as_json.changes().values() if c.get("releasesCapacity")]
    assert released_changes and all(c["type"] == RESERVATION for c in released_changes)
    assert any("capacity reservation(s) replaced or deleted" in w for w in as_json.json()["warnings"])
    assert "EC2 may not grant it again" in text.out
    assert "capacity reservation(s) replaced or deleted" in comment.out
