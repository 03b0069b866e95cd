"""Where the running gpuplat came from, and the requirement a new project installs it by.

A project's `requirements.txt` must resolve on the project's CI runner, not only on the laptop
that ran `gpuplat init`. pip records how it installed a distribution in its `direct_url.json`
(PEP 610): a wheel or sdist file, a URL, a VCS URL with the commit, a local source tree
(editable or not); a distribution from an index has none. `init --gpuplat-from` chooses:

- `wheel`: the archive gpuplat was installed from, or a wheel built from the source tree it runs
  from, copied into the project's `vendor/` and named by a relative path (committed, CI has it);
- `vcs`: the VCS URL it was installed from, pinned to the installed commit;
- `index`: `gpuplat[verify]==VERSION`, right only where an index serves that version;
- a path (an archive, a source tree: vendored as above) or a URL (taken as it is);
- `auto`, the default: the installation's own record, turned into one of the above that CI can
  install (a local file or tree becomes `wheel`; nothing recorded means an index).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from importlib.metadata import distributions
from pathlib import Path
from typing import Any, cast
from urllib.parse import unquote, urlparse

DISTRIBUTION = "gpuplat"
VENDOR = "vendor"
NAMED = ("auto", "wheel", "vcs", "index")
_EXTRAS = "[verify]"  # what `gpuplat verify` renders charts with
_ARCHIVES = (".whl", ".tar.gz", ".zip")


class SourceError(Exception):
    """A --gpuplat-from that cannot be honoured here (a usage error: nothing is written)."""


@dataclass(frozen=True)
class Origin:
    """How the running gpuplat was installed. kind: archive (a local file), tree (a local source
    directory), vcs (url is pip's form, `git+https://...@commit`), url (a remote archive), index."""

    kind: str
    url: str = ""
    path: Path | None = None


@dataclass(frozen=True)
class Source:
    """What a new project installs gpuplat from. kind: vendored | vcs | url | index."""

    kind: str
    requirement: str  # the line of requirements.txt
    where: str  # the vendored file, the URL, or "" for the index
    vendored: bytes = b""  # the file to write at `where` (kind vendored)


def _local_path(url: str) -> Path | None:
    parsed = urlparse(url)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" else None


def _mapping(value: object) -> dict[str, Any]:
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def _vcs_url(record: dict[str, Any], url: str) -> str:
    info = _mapping(record.get("vcs_info"))
    vcs, commit = str(info.get("vcs", "git")), str(info.get("commit_id", ""))
    pinned = f"{vcs}+{url}@{commit}" if commit else f"{vcs}+{url}"
    sub = record.get("subdirectory")
    return f"{pinned}#subdirectory={sub}" if sub else pinned


def origin_of(direct_url: str | None) -> Origin:
    """The origin a PEP 610 record (the text of direct_url.json; None: from an index) names."""
    if direct_url is None:
        return Origin("index")
    record = _mapping(json.loads(direct_url))
    url = str(record.get("url", ""))
    local = _local_path(url)
    if "vcs_info" in record:
        return Origin("vcs", _vcs_url(record, url))
    if local is not None:
        return Origin("tree" if "dir_info" in record else "archive", url, local)
    sha256 = _mapping(_mapping(record.get("archive_info")).get("hashes")).get("sha256")
    return Origin("url", f"{url}#sha256={sha256}" if sha256 else url)  # pip checks the download against it


def _is_source_tree(root: Path) -> bool:
    """gpuplat's own pyproject.toml beside the package (not some file a wheel left in site-packages)."""
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return isinstance(project, dict) and cast("dict[str, Any]", project).get("name") == DISTRIBUTION


def installed_origin() -> Origin:
    """The origin of the running gpuplat: a source tree when it runs from one (an editable install,
    or the tree on the path), else the record of the distribution installed beside it."""
    root = Path(__file__).resolve().parents[2]  # the directory holding the gpuplat package
    if _is_source_tree(root):
        return Origin("tree", root.as_uri(), root)
    for dist in distributions(name=DISTRIBUTION, path=[str(root)]):
        return origin_of(dist.read_text("direct_url.json"))
    return Origin("index")  # no metadata beside it: nothing says more


def _vendor(path: Path) -> Source:
    if path.is_dir():
        name, data = _build_wheel(path)
    elif path.is_file() and path.name.startswith(f"{DISTRIBUTION}-") and path.name.endswith(_ARCHIVES):
        name, data = path.name, path.read_bytes()
    elif path.exists():
        raise SourceError(f"{path} is not a gpuplat wheel or sdist (gpuplat-*.whl, gpuplat-*.tar.gz) nor a source tree")
    else:
        raise SourceError(
            f"{path} does not exist (gpuplat was installed from it, or it was given): pass --gpuplat-from "
            "with a wheel or source tree that exists, vcs, index or a URL"
        )
    where = f"{VENDOR}/{name}"
    return Source("vendored", f"./{where}{_EXTRAS}", where, data)


# Not copied into the build: VCS data, environments and build leftovers (setuptools would package
# stale files it finds in an old build/ directory).
_NOT_SOURCE = shutil.ignore_patterns(".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache")


def _build_wheel(tree: Path) -> tuple[str, bytes]:
    """A wheel of the source tree, built by pip from a copy (the tree is left as it was), with the
    running environment's setuptools when it has one (no download), else in pip's isolated build
    environment."""
    if not _is_source_tree(tree):
        raise SourceError(f"{tree} is not a gpuplat source tree (no pyproject.toml of project gpuplat)")
    with tempfile.TemporaryDirectory(prefix="gpuplat-wheel-") as scratch:
        copy, out = Path(scratch) / "src", Path(scratch) / "out"
        shutil.copytree(tree, copy, ignore=_NOT_SOURCE, symlinks=True)
        command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(copy)]
        if importlib.util.find_spec("setuptools") is not None:
            command.insert(4, "--no-build-isolation")
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        wheels = sorted(out.glob(f"{DISTRIBUTION}-*.whl"))
        if done.returncode != 0 or len(wheels) != 1:
            why = " ".join((done.stderr or done.stdout).split())[-400:]
            raise SourceError(f"building a wheel of {tree} failed ({why or 'no wheel written'})")
        return wheels[0].name, wheels[0].read_bytes()


def _named(choice: str, version: str, origin: Origin) -> Source:
    index = Source("index", f"{DISTRIBUTION}{_EXTRAS}=={version}", "")
    if choice == "index":
        return index
    if choice == "vcs":
        if origin.kind != "vcs":
            raise SourceError(f"gpuplat was not installed from a VCS URL (it came from {_said(origin)})")
        return Source("vcs", f"{DISTRIBUTION}{_EXTRAS} @ {origin.url}", origin.url)
    if origin.path is not None:  # wheel or auto: a local archive or tree goes into vendor/
        return _vendor(origin.path)
    if choice == "wheel":
        raise SourceError(f"gpuplat was not installed from a local wheel or source tree (it came from {_said(origin)})")
    if origin.kind in ("vcs", "url"):
        return Source(origin.kind, f"{DISTRIBUTION}{_EXTRAS} @ {origin.url}", origin.url)
    return index


def _said(origin: Origin) -> str:
    return "a package index" if origin.kind == "index" else origin.url


def source(choice: str, version: str, origin: Origin) -> Source:
    """The source `--gpuplat-from CHOICE` names for a project of gpuplat `version`."""
    if choice in NAMED:
        return _named(choice, version, origin)
    if "://" in choice:  # a URL: https://.../gpuplat-X.whl, git+https://...@commit
        return Source("url", f"{DISTRIBUTION}{_EXTRAS} @ {choice}", choice)
    return _vendor(Path(choice).expanduser().resolve())
