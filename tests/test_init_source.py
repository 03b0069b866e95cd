"""`gpuplat init --gpuplat-from`: the requirement a new project installs gpuplat by resolves on CI.

The origin comes from the installed distribution's PEP 610 record (direct_url.json); the records
below are the forms PEP 610 specifies. tests/test_wheel.py installs a project end to end.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from gpuplat import __version__
from gpuplat.cli import main
from gpuplat.scaffold.source import Origin, SourceError, installed_origin, origin_of, source

# With the other tests that build and install the wheel, on one pytest-xdist worker (Makefile).
pytestmark = pytest.mark.xdist_group("installed-wheel")

ROOT = Path(__file__).resolve().parent.parent
COMMIT = "7f2c4c5e0c8d4b1f9a3e2d1c0b9a8f7e6d5c4b3a"


def test_pep_610_records_name_the_origin() -> None:
    editable = origin_of(json.dumps({"url": "file:///home/me/gpuplat", "dir_info": {"editable": True}}))
    assert editable == Origin("tree", "file:///home/me/gpuplat", Path("/home/me/gpuplat"))
    wheel = origin_of(json.dumps({"url": "file:///tmp/d/gpuplat-1.0-py3-none-any.whl", "archive_info": {}}))
    assert wheel.kind == "archive" and wheel.path == Path("/tmp/d/gpuplat-1.0-py3-none-any.whl")
    vcs = origin_of(json.dumps({
        "url": "https://github.com/acme/gpuplat.git",
        "vcs_info": {"vcs": "git", "requested_revision": "main", "commit_id": COMMIT},
    }))
    assert vcs == Origin("vcs", f"git+https://github.com/acme/gpuplat.git@{COMMIT}")
    remote = origin_of(json.dumps({
        "url": "https://files.example/gpuplat-1.0-py3-none-any.whl",
        "archive_info": {"hashes": {"sha256": "ab" * 32}},
    }))
    assert remote == Origin("url", f"https://files.example/gpuplat-1.0-py3-none-any.whl#sha256={'ab' * 32}")
    assert origin_of(None) == Origin("index")  # no record: installed from an index


def test_this_checkout_is_an_editable_source_tree() -> None:
    assert installed_origin() == Origin("tree", ROOT.as_uri(), ROOT)


@pytest.mark.parametrize(
    ("origin", "requirement"),
    [
        (Origin("index"), "gpuplat[verify]==1.2.3"),
        (Origin("vcs", f"git+https://github.com/acme/gpuplat.git@{COMMIT}"),
         f"gpuplat[verify] @ git+https://github.com/acme/gpuplat.git@{COMMIT}"),
        (Origin("url", "https://files.example/gpuplat-1.2.3-py3-none-any.whl"),
         "gpuplat[verify] @ https://files.example/gpuplat-1.2.3-py3-none-any.whl"),
    ],
)
def test_auto_keeps_what_ci_can_install(origin: Origin, requirement: str) -> None:
    chosen = source("auto", "1.2.3", origin)
    assert chosen.requirement == requirement and not chosen.vendored
    parsed = Requirement(chosen.requirement)  # a requirement pip reads
    assert parsed.name == "gpuplat" and parsed.extras == {"verify"}


def test_a_local_wheel_is_vendored_not_named_by_its_laptop_path(tmp_path: Path) -> None:
    wheel = tmp_path / "gpuplat-1.2.3-py3-none-any.whl"
    wheel.write_bytes(b"PK-not-really")
    for chosen in (
        source("auto", "1.2.3", Origin("archive", wheel.as_uri(), wheel)),
        source("wheel", "1.2.3", Origin("archive", wheel.as_uri(), wheel)),
        source(str(wheel), "1.2.3", Origin("index")),
    ):
        assert chosen.kind == "vendored" and chosen.vendored == b"PK-not-really"
        assert chosen.requirement == f"./vendor/{wheel.name}[verify]" and str(tmp_path) not in chosen.requirement


@pytest.mark.parametrize(
    ("choice", "origin", "says"),
    [
        ("vcs", Origin("index"), "not installed from a VCS URL"),
        ("wheel", Origin("url", "https://files.example/gpuplat-1.whl"), "not installed from a local wheel"),
        ("auto", Origin("archive", "file:///gone/gpuplat-1-py3-none-any.whl", Path("/gone/gpuplat-1-py3-none-any.whl")),
         "does not exist"),
        ("/nowhere/gpuplat-1-py3-none-any.whl", Origin("index"), "does not exist"),
    ],
)
def test_a_source_that_cannot_be_honoured_is_refused(choice: str, origin: Origin, says: str) -> None:
    with pytest.raises(SourceError, match=says):
        source(choice, "1", origin)


def test_a_file_that_is_not_gpuplat_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "numpy-2.0-py3-none-any.whl"
    other.write_bytes(b"")
    with pytest.raises(SourceError, match="not a gpuplat wheel"):
        source(str(other), "1", Origin("index"))


def test_init_from_this_checkout_vendors_a_wheel_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    had_build = (ROOT / "build").exists()
    monkeypatch.chdir(tmp_path)
    assert main(["init", "lab"]) == 0  # the default: auto
    out = capsys.readouterr().out
    name = f"gpuplat-{__version__}-py3-none-any.whl"
    assert f"  vendor/{name}\n" in out and f"requirements.txt installs gpuplat {__version__} from vendor/{name}" in out
    wheel = zipfile.ZipFile(tmp_path / "lab" / "vendor" / name)
    # built from the running source tree: the same code, the components with it
    assert wheel.read("gpuplat/scaffold/source.py") == (ROOT / "gpuplat/scaffold/source.py").read_bytes()
    assert "components/platform.py" in wheel.namelist()
    assert (ROOT / "build").exists() == had_build  # built from a copy: the checkout is left as it was
    requirements = (tmp_path / "lab" / "requirements.txt").read_text().splitlines()
    assert requirements[-1] == f"./vendor/{name}[verify]"
    readme = (tmp_path / "lab" / "README.md").read_text()
    assert f"`vendor/{name}`" in readme and "pypi.org" not in readme


@pytest.mark.parametrize(("flag", "says"), [("vcs", "not installed from a VCS URL"), ("./nope.whl", "does not exist")])
def test_a_refused_source_is_a_usage_error_that_writes_nothing(
    flag: str, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["init", "lab", "--gpuplat-from", flag]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gpuplat init: error: --gpuplat-from {flag}: ") and says in err
    assert not (tmp_path / "lab").exists()


def test_an_index_pin_says_where_it_resolves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["init", "lab", "--gpuplat-from", "index"]) == 0
    assert not (tmp_path / "lab" / "vendor").exists()
    assert (tmp_path / "lab" / "requirements.txt").read_text().splitlines()[-1] == f"gpuplat[verify]=={__version__}"
    assert "your pip's package index" in (tmp_path / "lab" / "README.md").read_text()
