"""The release and a new team's first hour: `make dist` builds what the release workflow publishes,
and a project `gpuplat init` writes installs and works as its README says.

`make dist` builds the sdist and then the wheel from the sdist, so a file the sdist forgets is
missing from the wheel too. The wheel is installed into an empty virtualenv outside the
repository; its `gpuplat init` writes an aws and a kubernetes project, each installed into a
fresh virtualenv with the command its README gives, and every stack is checked and planned there.
No package index is used: pip resolves gpuplat from what init wrote and every other dependency
from a wheelhouse of this environment's own distributions (tests/support_wheelhouse.py).
"""

from __future__ import annotations

import shutil
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

from gpuplat import __version__
from tests.support_install import installed_from, run, set_up_block

# With the other tests that build and install the wheel, on one pytest-xdist worker (Makefile).
pytestmark = pytest.mark.xdist_group("installed-wheel")

ROOT = Path(__file__).resolve().parent.parent
STACKS = ("dev", "staging", "prod")


def test_the_release_is_an_sdist_and_a_wheel_of_the_one_version(dist: Path) -> None:
    assert sorted(p.name for p in dist.iterdir()) == [
        f"gpuplat-{__version__}-py3-none-any.whl",
        f"gpuplat-{__version__}.tar.gz",
    ]
    with tarfile.open(dist / f"gpuplat-{__version__}.tar.gz") as sdist:
        names = set(sdist.getnames())
        info = sdist.extractfile(f"gpuplat-{__version__}/PKG-INFO")
        assert info is not None and f"\nVersion: {__version__}\n" in info.read().decode()
    assert f"gpuplat-{__version__}/gpuplat/schemas/platform.schema.json" in names
    wheel = zipfile.ZipFile(dist / f"gpuplat-{__version__}-py3-none-any.whl")
    metadata = wheel.read(f"gpuplat-{__version__}.dist-info/METADATA").decode()
    assert f"\nVersion: {__version__}\n" in metadata
    # The version is written once, in gpuplat/__init__.py; pyproject reads it.
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "gpuplat.__version__"}


def test_the_wheel_carries_the_schema_templates_and_components(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "gpuplat/schemas/platform.schema.json" in names
    assert "gpuplat/scaffold/templates/platform.yaml.j2" in names
    assert "gpuplat/scaffold/templates/workflows/pull-request.yml" in names
    assert "gpuplat/docs/templates/spec.md.j2" in names  # `gpuplat docs` renders from the package
    assert "components/platform.py" in names
    assert not any("chart_sources" in n for n in names)  # upstream charts are never shipped
    assert any(n.endswith("entry_points.txt") for n in names)


@pytest.mark.parametrize("provider", ["aws", "kubernetes"])
def test_a_new_team_installs_gpuplat_and_its_project_as_the_readme_says(
    provider: str, wheel: Path, team: tuple[Path, dict[str, str]]
) -> None:
    home, env = team
    assert run(["gpuplat", "--version"], home, env).stdout == f"gpuplat {__version__}\n"
    done = run(["gpuplat", "init", provider, "--provider", provider], home, env)
    assert done.returncode == 0, done.stderr
    project = home / provider
    vendored = project / "vendor" / wheel.name
    assert vendored.read_bytes() == wheel.read_bytes()  # the wheel it was installed from, in the project
    assert f"./vendor/{wheel.name}[verify]" in (project / "requirements.txt").read_text().splitlines()

    script = set_up_block((project / "README.md").read_text())
    done = run(["bash", "-euc", script], project, env)  # exactly the README's lines, from the project's root
    assert done.returncode == 0, done.stdout + done.stderr
    venv = project / ".venv"
    assert installed_from(venv) == vendored.resolve().as_uri()  # gpuplat from what init wrote
    gpuplat = str(venv / "bin" / "gpuplat")
    for stack in STACKS:
        for command in ("check", "plan"):
            done = run([gpuplat, command, "--stack", stack], project / "stacks", env)
            assert done.returncode == 0, f"{command} --stack {stack}: {done.stdout}{done.stderr}"
            assert "warning" not in done.stderr.lower() and str(ROOT) not in done.stdout + done.stderr
    for command in ("preview", "verify", "policy"):  # the installed components, on the stack CI deploys first
        done = run([gpuplat, command, "--stack", "dev"], project, env)
        assert done.returncode == 0, f"{command}: {done.stdout[-2000:]}{done.stderr}"
    # The documentation of the installed package, with no repository around it.
    explained = run([gpuplat, "explain", "GP201"], project, env).stdout
    assert explained.startswith("GP201 mig-profile-valid: error") and "fix:    " in explained
    assert "rules:  none known for this installation" in explained  # a local wheel names no page
    assert run([gpuplat, "docs", "spec"], project, env).stdout == (ROOT / "docs" / "spec.md").read_text()
    shutil.rmtree(venv)
