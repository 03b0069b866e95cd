"""`gpuplat init` and the new user's journey: a project of one's own, outside this repository.

A platform team installs gpuplat, runs `gpuplat init`, and every command works there, from any
directory of the project, with no warning and nothing that points back at this repository.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support_cli import INDEX, run_captured
from tests.test_ci import assert_preflight_runs_before_up

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = ("check", "plan", "preview", "verify", "policy", "graph")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    monkeypatch.chdir(tmp_path)
    code, out, err = run_captured(
        capsys, "init", "atlas", "--region", "eu-central-1", "--instance-type", "g6e.12xlarge", *INDEX
    )
    assert code == 0, err
    assert "wrote platform atlas in atlas" in out
    return tmp_path / "atlas"


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_works_in_a_new_project_without_warnings(
    project: Path, command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project / "stacks")  # a directory inside: the project is found upward
    code, out, err = run_captured(capsys, command)
    assert code == 0, err
    assert "warning" not in err.lower() and "warning" not in out.lower().replace("0 warning(s)", "")
    assert str(ROOT) not in out + err and "gpuplat/" not in err


def test_the_new_spec_and_every_stack_validate_quietly(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project)
    for stack in ("dev", "staging", "prod"):
        code, out, _ = run_captured(capsys, "check", "--stack", stack)
        assert code == 0
        assert out == f"platform/platform.yaml + stacks/{stack}.yaml: valid (0 error(s), 0 warning(s))\n"
    spec = (project / "platform" / "platform.yaml").read_text()
    assert "region: eu-central-1" in spec and "instanceType: g6e.12xlarge" in spec
    for stack in ("dev", "staging", "prod"):
        settings = (project / "stacks" / f"Pulumi.{stack}.yaml").read_text()
        assert "aws:region: eu-central-1" in settings and f"environment: {stack}" in settings
        assert "LegacyName" not in settings  # a new platform gets the current bucket names


def test_init_never_overwrites(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = project / "platform" / "platform.yaml"
    spec.write_text("# ours\n")
    monkeypatch.chdir(project.parent)
    code, _, err = run_captured(capsys, "init", "atlas", *INDEX)
    assert code == 2
    assert "already has" in err and "platform/platform.yaml" in err
    assert spec.read_text() == "# ours\n"


def test_a_choice_the_catalog_rejects_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run_captured(capsys, "init", "new", "--instance-type", "p5.48xlarg", *INDEX)
    assert code == 2
    assert "platform/platform.yaml:" in err and "p5.48xlarge" in err  # the validator's did-you-mean
    assert not (tmp_path / "new").exists()


def test_an_on_prem_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ("init", "--provider", "kubernetes", "--gpu-model", "H100-SXM-80GB", "--name", "orion", *INDEX)
    assert run_captured(capsys, *argv)[0] == 0
    spec = (tmp_path / "platform" / "platform.yaml").read_text()
    assert "provider: kubernetes" in spec and "model: H100-SXM-80GB" in spec and "procurement" not in spec
    for command in ("check", "plan", "verify"):
        code, _, err = run_captured(capsys, command)
        assert code == 0 and "warning" not in err.lower(), err


@pytest.mark.parametrize("command", COMMANDS)
def test_outside_a_project_every_command_is_a_usage_error(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run_captured(capsys, command)
    assert code == 2 and out == ""
    assert "no Pulumi.yaml" in err and "gpuplat init" in err


def test_a_spec_of_ones_own_is_checked_outside_a_project(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = (project / "platform" / "platform.yaml").read_text()
    (tmp_path / "mine.yaml").write_text(spec.split("\n", 1)[1])  # without the editor line: no schema beside it
    monkeypatch.chdir(tmp_path)
    valid = (0, "mine.yaml: valid (0 error(s), 0 warning(s))\n", "")
    assert run_captured(capsys, "check", "--spec", "mine.yaml") == valid


def test_spec_without_stack_says_which_stack_it_runs_as(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project)
    code, _, err = run_captured(capsys, "policy", "--spec", "platform/platform.yaml")
    # The base spec alone has the private endpoint and no overlay: dev's settings declare no
    # runner access, so a deploy would stop at preflight; policy judges the resources and says
    # so beside its verdict. What matters here is the stack named.
    assert code == 0 and "would stop at preflight" in err and "GP241" in err
    assert "--spec without --stack: running it as stack dev, with the settings of stacks/Pulumi.dev.yaml" in err


def test_the_new_projects_workflows_pass_actionlint(project: Path) -> None:
    actionlint = shutil.which("actionlint", path=str(Path(sys.executable).parent))
    assert actionlint, "actionlint is not installed in the venv: run `make setup`"
    workflows = sorted(str(p) for p in (project / ".github" / "workflows").glob("*.yml"))
    assert len(workflows) == 2
    done = subprocess.run([actionlint, "-no-color", *workflows], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_new_projects_deploy_runs_preflight_before_up(project: Path) -> None:
    assert_preflight_runs_before_up(project / ".github" / "workflows" / "deploy.yml")


def test_an_on_prem_project_deploys_with_a_kubeconfig_not_an_aws_role(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert run_captured(capsys, "init", "orion", "--provider", "kubernetes", *INDEX)[0] == 0
    project = tmp_path / "orion"
    deploy = (project / ".github" / "workflows" / "deploy.yml").read_text()
    assert "aws" not in deploy.lower() and "id-token" not in deploy
    assert "if: vars.GPUPLAT_DEPLOY == 'true'" in deploy
    readme = (project / "README.md").read_text()
    assert "AWS" not in readme
    assert 'pulumi config set --stack dev --secret gpu-platform:kubeconfig "$(cat kubeconfig)"' in readme
    actionlint = shutil.which("actionlint", path=str(Path(sys.executable).parent))
    assert actionlint, "actionlint is not installed in the venv: run `make setup`"
    workflows = sorted(str(p) for p in (project / ".github" / "workflows").glob("*.yml"))
    done = subprocess.run([actionlint, "-no-color", *workflows], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_new_project_runs_the_same_program_as_this_repository(project: Path) -> None:
    program = (project / "__main__.py").read_text()
    # Past its docstring, line for line: a spec error ends in its diagnostics, not a traceback.
    assert program.split('"""\n\n', 1)[1] == (ROOT / "__main__.py").read_text()
