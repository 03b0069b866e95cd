"""The wheel: `pip install` it and gpuplat works with nothing of this repository around.

Built from this checkout, unpacked into a directory of its own and put first on the path, so
the code that runs (the CLI, the schema, the scaffold's templates, the components) is the
wheel's, in a project that `gpuplat init` wrote from it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(out)]
    done = subprocess.run([*build, str(ROOT)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    (built,) = out.glob("gpuplat-*.whl")
    return built


def test_the_wheel_carries_the_schema_templates_and_components(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "gpuplat/schemas/platform.schema.json" in names
    assert "gpuplat/scaffold/templates/platform.yaml.j2" in names
    assert "gpuplat/scaffold/templates/workflows/pull-request.yml" in names
    assert "components/platform.py" in names
    assert not any("chart_sources" in n for n in names)  # upstream charts are never shipped
    assert any(n.endswith("entry_points.txt") for n in names)


def _gpuplat(site: Path, cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    # The wheel's files first on the path; the venv supplies only the dependencies.
    program = (
        "import sys; sys.path.insert(0, sys.argv[1]); import gpuplat, components; "
        "assert gpuplat.__file__.startswith(sys.argv[1]) and components.__file__.startswith(sys.argv[1]); "
        "from gpuplat.cli import main; sys.exit(main(sys.argv[2:]))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-c", program, str(site), *argv], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def test_an_installed_gpuplat_starts_and_previews_a_platform(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site), str(wheel)]
    assert subprocess.run(install, capture_output=True, text=True, check=False).returncode == 0
    assert _gpuplat(site, tmp_path, "init", "lab").returncode == 0
    project = tmp_path / "lab"
    for command in ("check", "plan", "preview", "verify", "policy", "graph"):
        done = _gpuplat(site, project / "platform", command)
        assert done.returncode == 0, done.stderr
        assert "warning" not in done.stderr.lower() and str(ROOT) not in done.stdout + done.stderr
