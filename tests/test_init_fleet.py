"""`gpuplat init --fleet`: a fleet project (a manager and two workers, each a stack) that passes
gpuplat's own checks as written, deploys the workers before the manager, and refuses flags that
do not fit a fleet with nothing written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.support_cli import INDEX, run_captured

MANAGER_EGRESS = "198.51.100.0/24"


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    monkeypatch.chdir(tmp_path)
    code, out, err = run_captured(capsys, "init", "atlas", "--fleet", "--manager-cidr", MANAGER_EGRESS, *INDEX)
    assert code == 0, err
    assert "wrote fleet atlas in atlas" in out and "gpuplat check --stack hub" in out
    return tmp_path / "atlas"


@pytest.mark.parametrize("command", ["check", "verify", "policy"])
def test_every_member_passes_without_warnings(
    fleet: Path, command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(fleet)
    code, out, err = run_captured(capsys, command, "--all-stacks")
    assert code == 0, out + err
    assert "warning" not in err.lower() and "warning" not in out.lower().replace("0 warning(s)", "")
    if command == "check":
        assert "3 stack(s): cloud ok, hub ok, onprem ok" in out


def test_the_managers_plan_shows_the_fleet_in_order(
    fleet: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(fleet)
    code, out, err = run_captured(capsys, "plan", "--stack", "hub", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)["clusterFleet"]
    members = [(m["name"], m["role"], m["dispatchPosition"], m["provider"]) for m in doc["members"]]
    assert members == [
        ("hub", "manager", None, "kubernetes"),
        ("onprem", "worker", 1, "kubernetes"),
        ("cloud", "worker", 2, "aws"),
    ]
    cloud = next(m for m in doc["members"] if m["name"] == "cloud")
    assert cloud["monthlyUsd"] > 0  # the burst member is priced from its own plan


def test_the_cloud_api_is_public_to_the_manager_only(fleet: Path) -> None:
    cloud: Any = YAML(typ="safe").load((fleet / "stacks" / "cloud.yaml").read_text())
    assert cloud["target"]["endpoint"] == "public"
    assert cloud["target"]["publicAccessCidrs"] == [MANAGER_EGRESS]


def test_the_deploy_runs_the_workers_before_the_manager(fleet: Path) -> None:
    workflow = fleet / ".github" / "workflows" / "deploy.yml"
    jobs: dict[str, Any] = YAML(typ="safe").load(workflow.read_text())["jobs"]
    assert set(jobs) == {"onprem", "cloud", "hub"}
    assert set(jobs["hub"]["needs"]) == {"onprem", "cloud"}
    stacks = {
        name: next(s["with"]["stack-name"] for s in job["steps"] if s.get("with", {}).get("command") == "up")
        for name, job in jobs.items()
    }
    assert all(stack.endswith(name) for name, stack in stacks.items())
    # Only the aws member assumes the AWS role, and runs preflight with it before its up.
    steps = [str(s.get("uses", "")) + str(s.get("run", "")) for s in jobs["cloud"]["steps"]]
    role = next(i for i, s in enumerate(steps) if s.startswith("aws-actions/configure-aws-credentials@"))
    preflight = next(i for i, s in enumerate(steps) if "gpuplat preflight" in s)
    up = next(i for i, s in enumerate(jobs["cloud"]["steps"]) if s.get("with", {}).get("command") == "up")
    assert role < preflight < up
    for kube in ("onprem", "hub"):
        assert not any("configure-aws-credentials" in str(s.get("uses", "")) for s in jobs[kube]["steps"])
    actionlint = shutil.which("actionlint", path=str(Path(sys.executable).parent))
    if actionlint:  # tests/test_init.py requires it; here it is one more check of the same kind
        workflows = sorted(str(p) for p in (fleet / ".github" / "workflows").glob("*.yml"))
        done = subprocess.run([actionlint, "-no-color", *workflows], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr


def test_simulate_in_the_new_fleet(
    fleet: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # onprem: 4 nodes x 8 GPUs for the team; six 8-GPU jobs at once, so two go to the cloud.
    monkeypatch.chdir(fleet)
    (fleet / "jobs.csv").write_text("submit,duration,gpus,tenant\n" + "0,3600,8,ml-platform\n" * 6)
    code, out, err = run_captured(capsys, "simulate", "--stack", "hub", "--trace", "jobs.csv", "--format", "json")
    assert code == 0, err
    jobs = {m["name"]: m["jobs"] for m in json.loads(out)["members"]}
    assert jobs == {"onprem": 4, "cloud": 2}


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--fleet", "--manager-cidr", MANAGER_EGRESS, "--provider", "aws"], "no --provider"),
        (["--fleet"], "--fleet needs --manager-cidr"),
        (["--manager-cidr", MANAGER_EGRESS], "--manager-cidr is for --fleet"),
        (["--fleet", "--manager-cidr", "not-a-cidr"], "--manager-cidr"),
    ],
)
def test_flags_that_do_not_fit_a_fleet_write_nothing(
    tmp_path: Path, flags: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_captured(capsys, "init", str(tmp_path / "atlas"), *flags, *INDEX)
    assert code == 2 and said in err, err
    assert not (tmp_path / "atlas").exists()


def test_init_fleet_never_overwrites(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = (fleet / "stacks" / "cloud.yaml").read_text()
    code, _, err = run_captured(capsys, "init", str(fleet), "--fleet", "--manager-cidr", MANAGER_EGRESS, *INDEX)
    assert code == 2 and "init never overwrites" in err
    assert (fleet / "stacks" / "cloud.yaml").read_text() == before
