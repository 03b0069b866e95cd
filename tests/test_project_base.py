"""`--base` in a project of one's own: a project `gpuplat init` wrote, in a git repository of its own.

Such a project carries no compiler: its base is compiled and planned by the running gpuplat from
the base commit's files (gpuplat/commands/base.py), so the pull-request comment shows the base
plan and the cost delta, and `plan --base` what changed. The diff gate knows that moving the
project to another region replaces what lives in the region (gpuplat/preview/providers.py).

Tags of the repository: `base` (as init wrote it), `infer` (a second, on-demand-only pool: the
fleet-wide split moves the first pool from on-demand to spot), `old-pin` (requirements pin
gpuplat 0.0.9).
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from gpuplat.cli import main
from tests.support_git import Run, git, run_cli

INFER = "  - name: infer\n    instanceType: g5.12xlarge\n    nodes: {min: 0, max: 1}\n    markets: [on-demand]\n"


class Project:
    def __init__(self, root: Path) -> None:
        self.root = root

    def run(self, *argv: str) -> Run:
        return run_cli(self.root, *argv)

    def edit(self, path: str, old: str, new: str) -> None:
        file = self.root / path
        text = file.read_text(encoding="utf-8")
        assert old in text, f"{old!r} not in {path}"
        file.write_text(text.replace(old, new), encoding="utf-8")

    def commit(self, tag: str) -> None:
        git(self.root, "add", "-A")
        git(self.root, "commit", "-qm", tag)
        git(self.root, "tag", tag)

    def reset(self, ref: str = "base") -> None:
        git(self.root, "reset", "-q", "--hard", ref)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    where = tmp_path_factory.mktemp("own")
    previous = Path.cwd()
    os.chdir(where)
    try:
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            assert main(["init", "lab", "--region", "eu-west-1", "--instance-type", "g5.12xlarge"]) == 0
    finally:
        os.chdir(previous)
    made = Project(where / "lab")
    git(made.root, "init", "-q")
    made.commit("base")
    made.edit("platform/platform.yaml", "    markets: [spot, on-demand]\n", f"    markets: [spot, on-demand]\n{INFER}")
    made.commit("infer")
    made.reset()
    made.edit(
        "requirements.txt", (made.root / "requirements.txt").read_text().splitlines()[-1], "gpuplat[verify]==0.0.9"
    )
    made.commit("old-pin")
    made.reset()
    yield made


def _move_region(project: Project) -> None:
    for path in ("platform/platform.yaml", *(f"stacks/Pulumi.{s}.yaml" for s in ("dev", "staging", "prod"))):
        project.edit(path, "eu-west-1", "us-west-2")


def test_a_region_move_is_refused_naming_what_it_would_replace(project: Project) -> None:
    """Before: the cluster an update, the key and the VPC unchanged, and nothing blocked."""
    _move_region(project)
    try:
        run = project.run("preview", "--stack", "dev", "--base", "base", "--format", "json")
        allowed = project.run("preview", "--stack", "dev", "--base", "base", "--allow-replace", "--format", "json")
    finally:
        project.reset()
    assert run.code == 1 and "refusing the diff" in run.err, run.err
    changes = {c["name"]: c for c in run.json()["changes"]}
    for name in ("lab-cluster-eks", "lab-cluster-secrets-key", "lab-network-vpc"):
        assert changes[name]["op"] == "replace", name
        assert changes[name]["replaceCause"] == "region eu-west-1 -> us-west-2, the region of provider lab-aws"
    refused = [line.strip() for line in run.err.splitlines() if line.startswith("  replace ")]
    assert "replace aws:eks/cluster:Cluster lab-cluster-eks (region eu-west-1 -> us-west-2, the region of " \
        "provider lab-aws)" in refused  # fmt: skip
    assert any(line.startswith("replace aws:kms/key:Key lab-cluster-secrets-key") for line in refused)
    # The tenant's namespace goes with the Kubernetes provider, on the new cluster.
    assert (
        "replace kubernetes:core/v1:Namespace lab-tenant-ml-platform-ns (its provider lab-k8s is replaced)" in refused
    )
    roles = [c for c in changes.values() if c["type"] == "aws:iam/role:Role"]
    assert all(c["op"] != "replace" for c in roles)  # IAM is global: a region move keeps it
    assert allowed.code == 0, allowed.err


def test_the_comment_against_the_previous_commit_shows_the_base_plan_and_the_cost_delta(project: Project) -> None:
    project.reset("infer")
    try:
        run = project.run("preview", "--stack", "dev", "--base", "HEAD~1", "--format", "markdown")
    finally:
        project.reset()
    assert run.code == 0, run.err
    assert "Base plan not available" not in run.out
    assert "Base `HEAD~1` compiled and planned by gpuplat " in run.out
    assert "|  | base | head | delta |" in run.out and "| infer | $0.00 |" in run.out
    total = next(line for line in run.out.splitlines() if line.startswith("| **GPU total** |"))
    assert total.count("$") == 3 and "**+$" in total
    assert "| infer (new) | on-demand | 0 → 1 | 0 → 4 |" in run.out
    assert "| gpu | spot | 0 → 1 | 0 → 4 |" in run.out and "| gpu | on-demand | 1 → 0 | 4 → 0 |" in run.out
    assert "- pool gpu: spot 0 -> 1, on-demand 1 -> 0 nodes, with no change of its own." in run.out
    assert "because pool infer was added (markets on-demand; 4 GPUs)" in run.out


def test_plan_base_says_per_pool_what_changed_and_why(project: Project) -> None:
    project.reset("infer")
    try:
        document = project.run("plan", "--stack", "dev", "--base", "base", "--format", "json")
        text = project.run("plan", "--stack", "dev", "--base", "base")
    finally:
        project.reset()
    assert document.code == 0, document.err
    plan = document.json()
    assert [p["name"] for p in plan["pools"]] == ["gpu", "infer"]  # the head's plan, as without --base
    assert plan["base"]["ref"] == "base" and plan["base"]["compiler"].startswith("gpuplat ")
    pools = {p["name"]: p for p in plan["delta"]["pools"]}
    assert pools["infer"]["change"] == "added" and pools["gpu"]["own"] == []
    assert pools["gpu"]["markets"]["spot"]["nodes"] == {"base": 0, "head": 1, "delta": 1}
    assert pools["gpu"]["markets"]["onDemand"]["gpus"] == {"base": 4, "head": 0, "delta": -4}
    assert plan["delta"]["fleet"]["gpus"] == {"base": 4, "head": 8, "delta": 4}
    assert plan["delta"]["cost"]["monthlyUsd"]["delta"] > 0
    (moved,) = plan["delta"]["knockOn"]
    assert moved["pool"] == "gpu" and moved["because"] == ["pool infer was added (markets on-demand; 4 GPUs)"]
    assert text.code == 0 and "Plan of lab against base: the base planned by gpuplat" in text.out
    assert "gpu    changed" in text.out and "infer  added" in text.out
    assert "Markets that moved with no change of their own pool:\n  pool gpu: spot 0 -> 1, on-demand 1 -> 0" in text.out


def test_a_base_pinning_another_gpuplat_is_said_so(project: Project) -> None:
    document = project.run("plan", "--stack", "dev", "--base", "old-pin", "--format", "json")
    comment = project.run("preview", "--stack", "dev", "--base", "old-pin", "--format", "markdown")
    assert document.code == 0, document.err
    note = document.json()["base"]["versionNote"]
    assert note.startswith("the base's requirements.txt pins gpuplat==0.0.9, another gpuplat than the one")
    assert "> [!NOTE]\n> The base's requirements.txt pins gpuplat==0.0.9" in comment.out


def test_plan_base_errors(project: Project) -> None:
    assert project.run("plan", "--base", "").code == 2
    missing = project.run("plan", "--base", "no-such-ref")
    assert missing.code == 2 and "no-such-ref" in missing.err and "Traceback" not in missing.err
