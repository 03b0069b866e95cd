"""A team's machine, shared by the tests that install gpuplat as a user does (test_wheel.py,
test_first_week.py): the release `make dist` builds, a wheelhouse of this environment, and the
wheel installed into an empty virtualenv outside the repository. The fixtures are session-wide
(conftest.py imports them), so the wheel is built and installed once for every such test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support_wheelhouse import wheelhouse

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the release workflow's `make dist` builds (its venv taken as set up)."""
    out = tmp_path_factory.mktemp("dist")
    make = ["make", "--no-print-directory", "-o", ".venv/.installed", "dist", f"DIST={out}"]
    done = subprocess.run(
        [*make, f"BIN={Path(sys.executable).parent}"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.fixture(scope="session")
def house(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return wheelhouse(tmp_path_factory.mktemp("wheelhouse"))


@pytest.fixture(scope="session")
def wheel(dist: Path) -> Path:
    (built,) = dist.glob("gpuplat-*.whl")
    return built


def offline_env(bin_dir: Path, house: Path) -> dict[str, str]:
    """No index, the wheelhouse, and `python3` this interpreter (the wheelhouse's ABI)."""
    # PYTHONDONTWRITEBYTECODE too: a team's machine writes the bytecode of what it imports.
    dropped = ("PYTHONPATH", "VIRTUAL_ENV", "PIP_FIND_LINKS", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "python3").symlink_to(getattr(sys, "_base_executable", sys.executable))
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    # PIP_NO_COMPILE=0 is pip's inverted spelling of --no-compile: bytecode of 400 MB of SDKs would
    # take most of the test's minutes, and Python writes what it imports on first use anyway.
    offline = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(house), "PIP_NO_COMPILE": "0"}
    return {**env, **offline, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


@pytest.fixture(scope="session")
def team(wheel: Path, house: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """A team's machine: gpuplat installed from the wheel into an empty virtualenv outside the
    repository (its directory, its environment); removed afterwards (the venvs hold ~1 GB)."""
    home = tmp_path_factory.mktemp("team")
    env = offline_env(home / "bin", house)
    tool = home / "tool"
    assert run(["python3", "-m", "venv", str(tool)], home, env).returncode == 0
    done = run([str(tool / "bin" / "pip"), "install", "--quiet", f"{wheel}[verify]"], home, env)
    assert done.returncode == 0, done.stderr
    env["PATH"] = f"{tool / 'bin'}{os.pathsep}{env['PATH']}"  # `gpuplat` is the wheel's
    yield home, env
    shutil.rmtree(home, ignore_errors=True)


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def set_up_block(readme: str) -> str:
    """The shell block of the README's "Set up" section, as written."""
    section = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```sh\n(.*?)```", section, re.S)
    assert match, "the README's Set up section has no sh block"
    return match[1]


def installed_from(venv: Path) -> str:
    (info,) = (venv / "lib").glob("python3*/site-packages/gpuplat-*.dist-info")
    return json.loads((info / "direct_url.json").read_text())["url"]
