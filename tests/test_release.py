"""The release workflow: a tag publishes the one version, through PyPI's trusted publishing.

The tag check is the workflow's own step, run here with bash against this gpuplat: a tag that is
not `v` + the version in gpuplat/__init__.py stops the release before anything is built.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from gpuplat import __version__

ROOT = Path(__file__).resolve().parent.parent
RELEASE = ROOT / ".github" / "workflows" / "release.yml"


def _workflow() -> dict[str, Any]:
    return YAML(typ="safe").load(RELEASE.read_text())


def _tag_check(tag: str) -> subprocess.CompletedProcess[str]:
    (step,) = [s for s in _workflow()["jobs"]["build"]["steps"] if s.get("name") == "The tag is the version"]
    env = {**os.environ, "TAG": tag, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["bash", "-eo", "pipefail", "-c", step["run"]], env=env, capture_output=True, text=True,
                          check=False)


def test_a_tag_of_the_version_is_released() -> None:
    done = _tag_check(f"v{__version__}")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("tag", ["v9.9.9", __version__, f"v{__version__}.1", f"v{__version__}rc1"])
def test_a_tag_that_is_not_the_version_is_refused(tag: str) -> None:
    done = _tag_check(tag)
    assert done.returncode == 1
    assert f"::error::tag {tag} is not v{__version__}" in done.stdout


def test_it_builds_with_make_and_publishes_with_trusted_publishing_only() -> None:
    workflow = _workflow()
    assert workflow["on"] == {"push": {"tags": ["v*"]}}
    assert workflow["permissions"] == {}
    build, publish = workflow["jobs"]["build"], workflow["jobs"]["publish"]
    runs = [s.get("run", "") for s in build["steps"]]
    assert runs.index("make test") < runs.index("make dist")  # tested, then built from the lock
    assert "id-token" not in build["permissions"]  # the job that runs the project's code gets no OIDC token
    assert publish["needs"] == "build" and publish["permissions"] == {"id-token": "write"}
    assert publish["environment"]["name"] == "pypi"
    uses = [s["uses"].split("@")[0] for s in publish["steps"]]
    assert uses == ["actions/download-artifact", "pypa/gh-action-pypi-publish"]
    assert not any("with" in s and {"password", "user"} & set(s["with"]) for s in publish["steps"])  # no token
