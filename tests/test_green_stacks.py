"""A fresh `gpuplat init` project is green on every stack, and what a deploy would refuse for lack
of a stack setting is a `check` finding at the stack's settings file.

Every stack of a new project (aws and kubernetes) passes check, plan, preview, verify and policy
offline; the pull request that declares the runner's access gets its preview against a base
that lacked it; verify and policy judge their subject when a deploy prerequisite is missing and
list it beside their verdict; check compares the stack's aws:region with the spec's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.support_cli import run_captured
from tests.support_git import git

COMMANDS = ("check", "plan", "preview", "verify", "policy")
STACKS = ("dev", "staging", "prod")
INIT = {
    "aws": ("--provider", "aws", "--region", "eu-west-1"),
    "kubernetes": ("--provider", "kubernetes", "--gpu-model", "H100-SXM-80GB", "--gpus-per-node", "8"),
}


def _init(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], provider: str, *extra: str
) -> Path:
    monkeypatch.chdir(tmp_path)
    code, _, err = run_captured(capsys, "init", "fresh", *INIT[provider], *extra)
    assert code == 0, err
    monkeypatch.chdir(tmp_path / "fresh")
    return tmp_path / "fresh"


def _without_runner(settings: Path) -> None:
    kept = [line for line in settings.read_text().splitlines() if "apiAccessCidrs" not in line]
    settings.write_text("\n".join(kept) + "\n")


@pytest.mark.parametrize("provider", sorted(INIT))
def test_every_stack_of_a_fresh_project_passes_every_offline_command(
    provider: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _init(tmp_path, monkeypatch, capsys, provider)
    for stack in STACKS:
        for command in COMMANDS:
            code, _, err = run_captured(capsys, command, "--stack", stack)
            assert code == 0, f"gpuplat {command} --stack {stack}: {err}"
            assert "prerequisite" not in err and "would stop" not in err, err


def test_staging_and_prod_keep_a_private_endpoint_with_the_runners_access(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _init(tmp_path, monkeypatch, capsys, "aws")
    code, out, _ = run_captured(capsys, "preview", "--all-stacks", "--format", "json")
    assert code == 0
    by_stack = {s["stack"]: s["result"]["resources"] for s in json.loads(out)["stacks"]}
    for stack in STACKS:
        (eks,) = [r for r in by_stack[stack] if r["type"] == "aws:eks/cluster:Cluster"]
        rules = [r for r in by_stack[stack] if "-cluster-api-" in r["name"]]
        if stack == "dev":  # public, for engineers' laptops and GitHub's hosted runners
            assert eks["inputs"]["vpcConfig"]["endpointPublicAccess"] is True and rules == []
        else:  # private; HTTPS from the VPC, where the self-hosted runner of the deploy runs
            assert eks["inputs"]["vpcConfig"]["endpointPublicAccess"] is False
            assert [r["inputs"]["cidrIpv4"] for r in rules] == ["10.0.0.0/16"]
    assert "gpu-platform:apiAccessCidrs: 10.0.0.0/16" in (root / "stacks" / "Pulumi.prod.yaml").read_text()


def test_init_lets_the_runners_network_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _init(tmp_path, monkeypatch, capsys, "aws", "--runner-cidr", "10.20.0.0/24", "--runner-cidr", "10.30.0.0/24")
    for stack in ("staging", "prod"):
        settings = YAML(typ="safe").load((root / "stacks" / f"Pulumi.{stack}.yaml").read_text())
        assert settings["config"]["gpu-platform:apiAccessCidrs"] == "10.20.0.0/24, 10.30.0.0/24"
    assert "apiAccessCidrs" not in (root / "stacks" / "Pulumi.dev.yaml").read_text()
    assert run_captured(capsys, "check", "--all-stacks")[0] == 0
    monkeypatch.chdir(tmp_path)
    code, _, err = run_captured(capsys, "init", "other", "--runner-cidr", "10.20.0.1/24")
    assert code == 2 and "10.20.0.1/24 is not a CIDR block" in err and not (tmp_path / "other").exists()
    code, _, err = run_captured(capsys, "init", "onprem", *INIT["kubernetes"], "--runner-cidr", "10.20.0.0/24")
    assert code == 2 and "--runner-cidr is for provider aws" in err


def test_a_private_stack_without_the_runners_access_is_a_check_error_at_its_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _init(tmp_path, monkeypatch, capsys, "aws")
    settings = root / "stacks" / "Pulumi.staging.yaml"
    _without_runner(settings)
    code, out, _ = run_captured(capsys, "check", "--stack", "staging", "--format", "json")
    assert code == 1
    (found,) = json.loads(out)["diagnostics"]
    config_line = settings.read_text().splitlines().index("config:") + 1
    assert (found["code"], found["level"], found["file"], found["line"]) == (
        "GP241",
        "error",
        "stacks/Pulumi.staging.yaml",
        config_line,
    )
    assert all(setting in found["message"] for setting in ("apiAccessCidrs", "apiAccessSecurityGroupIds"))
    # A value no security group rule can carry: at its own line.
    settings.write_text(settings.read_text() + "  gpu-platform:apiAccessSecurityGroupIds: default\n")
    code, out, _ = run_captured(capsys, "check", "--stack", "staging", "--format", "json")
    (found,) = json.loads(out)["diagnostics"]
    assert code == 1 and found["code"] == "GP242" and found["line"] == len(settings.read_text().splitlines())
    assert "default is not a security group id" in found["message"]


def test_check_holds_the_stacks_region_equal_to_the_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _init(tmp_path, monkeypatch, capsys, "aws")
    settings = root / "stacks" / "Pulumi.prod.yaml"
    settings.write_text(settings.read_text().replace("aws:region: eu-west-1", "aws:region: us-west-2"))
    code, out, _ = run_captured(capsys, "check", "--all-stacks", "--format", "json")
    assert code == 1
    results = {s["stack"]: s for s in json.loads(out)["stacks"]}
    assert [results[s]["exitCode"] for s in STACKS] == [0, 0, 1]
    (found,) = results["prod"]["result"]["diagnostics"]
    region_line = next(i for i, line in enumerate(settings.read_text().splitlines(), 1) if "aws:region" in line)
    assert (found["code"], found["file"], found["line"]) == ("GP243", "stacks/Pulumi.prod.yaml", region_line)
    assert "target.region is eu-west-1" in found["message"] and "set aws:region: eu-west-1" in found["message"]


def test_verify_and_policy_judge_a_stack_missing_a_prerequisite_and_list_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _init(tmp_path, monkeypatch, capsys, "aws")
    _without_runner(root / "stacks" / "Pulumi.prod.yaml")
    code, out, err = run_captured(capsys, "verify", "--stack", "prod")
    assert code == 0 and re.search(r"1 journey\(s\): 1 ok, 0 failed", out)
    assert "a deploy of this stack would first need" in err and "stacks/Pulumi.prod.yaml:2:1: error GP241" in err
    code, out, _ = run_captured(capsys, "verify", "--stack", "prod", "--format", "json")
    document = json.loads(out)
    assert code == 0 and all(j["ok"] for j in document["journeys"])
    assert [p.split(" ")[2] for p in document["prerequisites"]] == ["GP241"]
    code, out, err = run_captured(capsys, "policy", "--stack", "prod", "--format", "json")
    document = json.loads(out)
    assert code == 0 and document["violations"] == [] and len(document["prerequisites"]) == 1
    # preview itself shows what `pulumi preview` would do: the program stops at preflight.
    code, _, err = run_captured(capsys, "preview", "--stack", "prod")
    assert code == 1 and "would stop at preflight" in err


def test_the_pull_request_that_declares_the_runners_access_gets_its_preview(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _init(tmp_path, monkeypatch, capsys, "aws")
    settings = root / "stacks" / "Pulumi.prod.yaml"
    declared = settings.read_text()
    _without_runner(settings)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "without the runner's access")
    settings.write_text(declared)
    code, out, err = run_captured(capsys, "preview", "--stack", "prod", "--base", "HEAD", "--format", "json")
    assert code == 0, err
    changes = json.loads(out)["changes"]
    assert [(c["op"], c["urn"].rsplit("::", 1)[1]) for c in changes] == [("create", "fresh-cluster-api-10.0.0.0-16")]


def test_verify_lists_the_accounts_refusals_beside_its_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _init(tmp_path, monkeypatch, capsys, "aws")
    facts = {
        "region": "eu-west-1",
        "readAt": "2026-01-01T00:00:00Z",
        "zones": {"eu-west-1a": "euw1-az1", "eu-west-1b": "euw1-az2"},
        "offerings": {},  # the pool's type offered in none of the spec's zones
    }
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts))
    code, _, err = run_captured(capsys, "preview", "--stack", "dev", "--account-facts", str(path))
    assert code == 1 and "would stop at preflight" in err
    code, out, _ = run_captured(capsys, "verify", "--stack", "dev", "--account-facts", str(path), "--format", "json")
    document = json.loads(out)
    assert code == 0 and document["journeys"] and all(j["ok"] for j in document["journeys"])
    (refusal,) = document["prerequisites"]
    assert refusal.startswith("preflight: pool gpu: ") and "is offered in none of the zones" in refusal


def test_all_stacks_is_one_exit_code_and_refuses_a_stack_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _init(tmp_path, monkeypatch, capsys, "kubernetes")
    code, out, _ = run_captured(capsys, "check", "--all-stacks")
    assert code == 0
    assert [line for line in out.splitlines() if line.startswith("== stack")] == [
        "== stack dev ==",
        "== stack prod ==",
        "== stack staging ==",
    ]
    assert out.endswith("3 stack(s): dev ok, prod ok, staging ok\n")
    code, _, err = run_captured(capsys, "verify", "--all-stacks", "--stack", "dev")
    assert code == 2 and "--all-stacks" in err


def test_all_stacks_heads_each_stacks_stderr_when_stdout_is_a_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """JSON and markdown keep stdout for the document; what one stack says on stderr (a warning of
    dev's overlay here, a refusal of the diff gate in a pull request) is headed with its stack."""
    root = _init(tmp_path, monkeypatch, capsys, "aws")
    overlay = root / "stacks" / "dev.yaml"
    overlay.write_text(
        overlay.read_text().replace("  endpoint: public", "  publicAccessCidrs: [0.0.0.0/0]\n  endpoint: public")
    )
    code, out, err = run_captured(capsys, "plan", "--all-stacks", "--format", "json")
    assert code == 0 and [s["stack"] for s in json.loads(out)["stacks"]] == sorted(STACKS)
    assert err.startswith("== stack dev ==\nstacks/dev.yaml:3:23: warning GP306 "), err
    assert "== stack prod ==" not in err and "== stack staging ==" not in err
