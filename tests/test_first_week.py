"""A new team's first week, lived through with the installed wheel (issue 32's "Done when").

gpuplat is the wheel installed into an empty virtualenv outside the repository (the session's
`team`, tests/support_install.py). Its `gpuplat init` writes an aws and a kubernetes project; each
is installed as its README's "Set up" block says, made a git repository and committed; then the
edits of a first week are made to the YAML text, as a user makes them, one commit each: a MIG
pool, a new tenant with a quota, a fabric pool, and a move to another region (aws: the spec's
region and zones and every stack's `aws:region`) or another cluster (kubernetes: the spec's
`target.context`, the kubeconfig context the provider uses).

At every commit every offline command passes on every stack (`--all-stacks`), and the
pull-request comment against the previous commit shows the base plan, compiled by the installed
gpuplat, with the cost delta (aws) and the capacity delta, both the difference of what `plan`
said at the two commits. The move is what the diff gate refuses: exit 1, naming every protected
resource it would replace. One project virtualenv per provider serves every step.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from gpuplat import __version__
from gpuplat.render.comment import usd, usd_delta
from tests.support_install import installed_from, run, set_up_block

# With the other tests that build and install the wheel, on one pytest-xdist worker (Makefile).
pytestmark = pytest.mark.xdist_group("installed-wheel")

STACKS = ("dev", "prod", "staging")  # the order --all-stacks runs them in
Json = dict[str, Any]


@dataclass(frozen=True)
class Edit:
    """`old` replaced by `new` in `path`: once, or everywhere (a region renamed with an editor)."""

    path: str
    old: str
    new: str
    everywhere: bool = False

    def apply(self, root: Path) -> None:
        file = root / self.path
        text = file.read_text(encoding="utf-8")
        assert text.count(self.old) == 1 or (self.everywhere and self.old in text), f"{self.old!r} in {self.path}"
        file.write_text(text.replace(self.old, self.new), encoding="utf-8")


@dataclass(frozen=True)
class Step:
    message: str
    edits: tuple[Edit, ...]
    refused: bool = False  # the diff gate must refuse the comment against the previous commit
    new_pools: tuple[str, ...] = ()
    new_resources: tuple[str, ...] = ()  # created, by name without the platform's prefix


SPEC = "platform/platform.yaml"
MIG_AWS = """  - name: infer
    instanceType: p4d.24xlarge       # 8x A100 40GB
    nodes: {min: 0, max: 2}
    sharing: {mode: mig, profile: all-1g.5gb}
    markets: [spot, on-demand]
"""
FABRIC_AWS = """  - name: train
    instanceType: p4d.24xlarge       # 4 EFA cards per node
    nodes: {min: 0, max: 2}
    fabric: true
    markets: [on-demand]
network:
  fabric: {tiers: 2, switchRadix: 64, linkGbps: 400, transport: efa}
"""
ACKNOWLEDGE = """acknowledge:                         # warnings weighed and accepted
  GP352:
    reason: train scales to zero between runs; its jobs keep locality through the cluster placement group
    paths:
      - $.gpuNodePools[train].nodes
"""
MIG_K8S = """  - name: infer
    gpu: {model: H100-SXM-80GB, count: 8}
    nodeSelector: {gpuplat.dev/pool: infer}
    nodes: {min: 0, max: 2}
    sharing: {mode: mig, profile: all-1g.10gb}
"""
FABRIC_K8S = """  - name: train
    gpu: {model: H100-SXM-80GB, count: 8}
    nodeSelector: {gpuplat.dev/pool: train}
    nodes: {min: 2, max: 2}
    fabric: true                     # RDMA over the nodes' fabric NICs
network:
  fabric: {tiers: 2, switchRadix: 64, linkGbps: 400, transport: roce}
"""
RESEARCH = "  - {name: research, gpus: 8, priority: high, isolation: hard, pools: [infer]}\n"


def _tenant(first: str) -> Step:
    return Step(
        "a tenant with a quota",
        (Edit(SPEC, first, first + RESEARCH),),
        new_resources=("tenant-research-ns", "tenant-research-quota", "scheduling-cq-research"),
    )


AWS_TENANT = "  - {name: ml-platform, gpus: 16, priority: normal, isolation: soft}\n"
K8S_TENANT = "  - {name: ml-platform, gpus: 32, priority: normal, isolation: soft}\n"
WEEK = {
    "aws": (
        Step("a MIG pool", (Edit(SPEC, "procurement:", MIG_AWS + "procurement:"),), new_pools=("infer",)),
        _tenant(AWS_TENANT),
        Step(
            "a fabric (EFA) pool",
            (Edit(SPEC, "procurement:", FABRIC_AWS + "procurement:"), Edit(SPEC, "tenants:", ACKNOWLEDGE + "tenants:")),
            new_pools=("train",),
            new_resources=("fabric-pg-train-eu-west-1a", "fabric-efa-device-plugin"),
        ),
        Step(
            "move to us-west-2",
            (
                Edit(SPEC, "eu-west-1", "us-west-2", everywhere=True),  # target.region and target.zones
                *(Edit(f"stacks/Pulumi.{s}.yaml", "aws:region: eu-west-1", "aws:region: us-west-2") for s in STACKS),
            ),
            refused=True,
        ),
    ),
    "kubernetes": (
        Step("a MIG pool", (Edit(SPEC, "tenants:", MIG_K8S + "tenants:"),), new_pools=("infer",)),
        _tenant(K8S_TENANT),
        Step(
            "a fabric (RDMA) pool",
            (Edit(SPEC, "tenants:", FABRIC_K8S + "tenants:"),),
            new_pools=("train",),
            new_resources=("fabric-topology-topology", "fabric-topology-nic-policy"),
        ),
        Step(
            "move to another cluster",
            (Edit(SPEC, "  provider: kubernetes\n", "  provider: kubernetes\n  context: gpu-west\n"),),
            refused=True,
        ),
    ),
}
MOVED = {
    "aws": "(replaced: region eu-west-1 -> us-west-2, the region of provider {name}-aws)",
    "kubernetes": "| replace | `{name}-k8s` | `pulumi:providers:kubernetes` | `context` (forces replacement",
}
WHO = {"NAME": "A Team", "EMAIL": "team@example.com"}
INIT = {"aws": ("--provider", "aws", "--region", "eu-west-1"), "kubernetes": ("--provider", "kubernetes")}


@dataclass
class Project:
    """The team's project: its root, its own virtualenv's gpuplat, and what each step found."""

    root: Path
    env: dict[str, str]
    gpuplat: str
    plans: dict[str, Json] = field(default_factory=dict)  # stack -> `plan --format json` at HEAD

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return run([self.gpuplat, *argv], self.root, self.env)

    def git(self, *argv: str) -> None:
        who = {f"GIT_{role}_{key}": value for role in ("AUTHOR", "COMMITTER") for key, value in WHO.items()}
        done = run(["git", "-c", "commit.gpgsign=false", *argv], self.root, {**self.env, **who})
        assert done.returncode == 0, done.stderr

    def commit(self, message: str) -> None:
        self.git("add", "-A")
        self.git("commit", "-qm", message)


def _by_stack(stdout: str) -> dict[str, Json]:
    return {s["stack"]: s["result"] for s in json.loads(stdout)["stacks"]}


def _sections(markdown: str) -> dict[str, str]:
    """The comment of each stack, by stack."""
    parts = re.split(r"^## gpuplat preview: stack `([a-z]+)` against `HEAD~1`\n", markdown, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _every_offline_command(project: Project, label: str) -> dict[str, list[Json]]:
    """check, plan, preview, verify and policy over every stack; each stack's preview resources."""
    check = project.run("check", "--all-stacks")
    assert check.returncode == 0, f"{label}: check\n{check.stdout}{check.stderr}"
    for stack in STACKS:  # warnings too: the team answers each (the fabric pool's with an acknowledgement)
        assert f"stacks/{stack}.yaml: valid (0 error(s), 0 warning(s)" in check.stdout, f"{label}: {check.stdout}"
    assert check.stdout.endswith("3 stack(s): dev ok, prod ok, staging ok\n"), check.stdout
    plan = project.run("plan", "--all-stacks", "--format", "json")
    assert plan.returncode == 0, f"{label}: plan\n{plan.stderr}"
    project.plans = _by_stack(plan.stdout)
    preview = project.run("preview", "--all-stacks", "--format", "json")
    assert preview.returncode == 0, f"{label}: preview\n{preview.stderr}"
    for command in ("verify", "policy"):
        done = project.run(command, "--all-stacks")
        assert done.returncode == 0, f"{label}: {command}\n{done.stdout[-3000:]}{done.stderr}"
        assert "prerequisite" not in done.stdout + done.stderr, done.stdout[-3000:]
    return {stack: result["resources"] for stack, result in _by_stack(preview.stdout).items()}


def _comment_shows_the_base(provider: str, step: Step, comment: str, base: Json, head: Json) -> None:
    assert f"Base `HEAD~1` compiled and planned by gpuplat {__version__} (the running one)." in comment
    cost = comment.split("### Monthly cost\n", 1)[1].split("\n### ", 1)[0]
    capacity = comment.split("### Capacity and markets\n", 1)[1].split("\n### ", 1)[0]
    if provider == "aws":
        before, after = base["cost"]["monthlyUsd"], head["cost"]["monthlyUsd"]
        delta = usd_delta(round(after - before, 2))
        assert f"| **GPU total** | {usd(before)} | {usd(after)} | **{delta}**" in cost, cost
    else:
        assert "No procurement on provider kubernetes: the nodes are already owned." in cost
    fleet = (base["fleet"]["gpus"], head["fleet"]["gpus"])
    assert re.search(rf"^\| {fleet[1] if fleet[0] == fleet[1] else f'{fleet[0]} → {fleet[1]}'} \|", capacity, re.M)
    for pool in step.new_pools:
        assert f"| {pool} (new) |" in capacity, capacity


def _refusal_names_every_protected_resource(provider: str, stderr: str, resources: dict[str, list[Json]]) -> None:
    parts = re.split(r"^== stack ([a-z]+) ==\n", stderr, flags=re.M)  # each stack's stderr, headed
    said = dict(zip(parts[1::2], parts[2::2], strict=True))
    assert sorted(said) == sorted(STACKS), stderr
    for stack, refusal in said.items():
        assert "gpuplat preview: refusing the diff" in refusal, refusal
        replaced = {name: kind for kind, name in re.findall(r"^  replace (\S+) (\S+) \(", refusal, re.M)}
        protected = {r["name"]: r["type"] for r in resources[stack] if r["options"].get("protect")}
        assert replaced == protected, refusal
        assert "kubernetes:core/v1:Namespace" in protected.values()  # the tenants' namespaces
        if provider == "aws":
            assert {"aws:eks/cluster:Cluster", "aws:kms/key:Key"} <= set(protected.values())
            assert "region eu-west-1 -> us-west-2" in refusal


@pytest.mark.parametrize("provider", sorted(WEEK))
def test_a_new_team_lives_through_its_first_week(provider: str, team: tuple[Path, dict[str, str]]) -> None:
    home, env = team
    name = f"week-{provider}"
    done = run(["gpuplat", "init", name, *INIT[provider]], home, env)
    assert done.returncode == 0, done.stderr
    root = home / name
    install = run(["bash", "-euc", set_up_block((root / "README.md").read_text())], root, env)
    assert install.returncode == 0, install.stdout + install.stderr
    assert installed_from(root / ".venv").endswith(".whl")
    project = Project(root, env, str(root / ".venv" / "bin" / "gpuplat"))
    try:
        project.git("init", "-q", "-b", "main")
        project.commit("gpuplat init")
        _every_offline_command(project, "the first commit")
        for step in WEEK[provider]:
            base_plans = project.plans
            for edit in step.edits:
                edit.apply(root)
            project.commit(step.message)
            resources = _every_offline_command(project, step.message)
            comment = project.run("preview", "--all-stacks", "--base", "HEAD~1", "--format", "markdown")
            assert comment.returncode == (1 if step.refused else 0), f"{step.message}: {comment.stderr}"
            sections = _sections(comment.stdout)
            assert sorted(sections) == sorted(STACKS), comment.stdout[:2000]
            for stack, text in sections.items():
                _comment_shows_the_base(provider, step, text, base_plans[stack], project.plans[stack])
                for created in step.new_resources:
                    assert f"| create | `{name}-{created}` |" in text, f"{step.message}: {created}"
            if step.refused:
                _refusal_names_every_protected_resource(provider, comment.stderr, resources)
                assert all("> [!CAUTION]" in text for text in sections.values())
                why = MOVED[provider].format(name=name)  # what moves the provider's resources
                assert all(why in text for text in sections.values()), why
    finally:
        shutil.rmtree(root / ".venv", ignore_errors=True)  # ~0.5 GB each
