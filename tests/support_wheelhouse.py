"""A wheelhouse of gpuplat's dependencies, built offline from this environment.

The tests that install gpuplat and a generated project into fresh virtualenvs resolve every
dependency with `pip --no-index --find-links` from here, so they need no package index. The
wheels are the distributions the repository's `.venv` installed from the lock (exact versions,
compiled extensions for this interpreter), packed back into wheels from their installed files as
their RECORD lists them: the same metadata and requirements, so pip's resolution is the real one.
Console scripts are left out (the installer writes them from the entry points); bytecode too.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import re
import zipfile
from collections.abc import Iterable
from importlib.metadata import Distribution, distribution
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

_SKIPPED = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}


def closure(name: str, extras: Iterable[str] = ()) -> dict[str, Distribution]:
    """The installed distributions `name[extras]` needs, by canonical name (itself included)."""
    found: dict[str, Distribution] = {}
    todo = [(name, tuple(extras))]
    while todo:
        wanted, wanted_extras = todo.pop()
        dist = distribution(wanted)
        found[canonicalize_name(dist.metadata["Name"])] = dist
        for text in dist.requires or []:
            req = Requirement(text)
            applies = req.marker is None or any(req.marker.evaluate({"extra": e}) for e in ("", *wanted_extras))
            if applies and (canonicalize_name(req.name) not in found or req.extras):
                todo.append((req.name, tuple(req.extras)))
    return found


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _wheel_name(dist: Distribution, info: Path) -> str:
    lines = (info / "WHEEL").read_text().splitlines()
    tags = [line.split(":", 1)[1].strip() for line in lines if line.startswith("Tag:")]
    parts = [".".join(dict.fromkeys(tag.split("-")[i] for tag in tags)) for i in range(3)]
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"]).lower()
    return f"{name}-{dist.version}-{'-'.join(parts)}.whl"


def repack(dist: Distribution, out: Path) -> Path:
    """The installed distribution as a wheel in `out`."""
    info = Path(str(dist.locate_file(""))) / next(
        f.parts[0] for f in dist.files or () if f.parts[0].endswith(".dist-info")
    )
    site = info.parent
    scripts = {ep.name for ep in dist.entry_points if ep.group in ("console_scripts", "gui_scripts")}
    data_dir = f"{re.sub(r'[-_.]+', '_', dist.metadata['Name']).lower()}-{dist.version}.data"
    target = out / _wheel_name(dist, info)
    record: list[tuple[str, str, str]] = []
    with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as wheel:
        for row in csv.reader((info / "RECORD").read_text().splitlines()):
            relative = row[0]
            if relative.endswith(".pyc") or "__pycache__" in relative:
                continue
            if relative.startswith(f"{info.name}/") and relative.split("/", 1)[1] in _SKIPPED:
                continue
            source = (site / relative).resolve()
            if source.is_relative_to(site):
                arcname = source.relative_to(site).as_posix()
            elif source.name in scripts:
                continue
            else:  # a script outside site-packages that is not an entry point: the wheel's data
                arcname = f"{data_dir}/scripts/{source.name}"
            data = source.read_bytes()
            wheel.writestr(arcname, data)
            record.append((arcname, _digest(data), str(len(data))))
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        writer.writerows([*record, (f"{info.name}/RECORD", "", "")])
        wheel.writestr(f"{info.name}/RECORD", text.getvalue())
    return target


def wheelhouse(out: Path, name: str = "gpuplat", extras: Iterable[str] = ("verify",)) -> Path:
    """The dependencies of `name[extras]` (not itself) as wheels in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    for key, dist in closure(name, extras).items():
        if key != canonicalize_name(name):
            repack(dist, out)
    return out
