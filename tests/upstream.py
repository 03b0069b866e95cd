"""The one way tests reach upstream data: CRDs and charts' values.yaml, read in place.

The repository holds only what this project wrote, so the upstream files the tests validate
against live beside the clone, in ../shared/upstream (CI and every development machine have
it; `GPUPLAT_UPSTREAM` points elsewhere). Layout: one directory per upstream project holding
its CRDs (`kueue/kueue.x-k8s.io_clusterqueues.yaml`, ...) and `charts/<chart key>/values.yaml`
(with vendored subcharts under `charts/<chart key>/charts/<name>/`), at the versions the catalog
pins. A test needing a file that is not there fails and names the file, never skips.

Real chart templates are code, not data: tests that render the real charts read them from the
directory in `GPUPLAT_CHARTS` (one subdirectory per chart key, as `gpuplat verify --charts`
takes) and are skipped without it, saying so.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM_ENV = "GPUPLAT_UPSTREAM"
CHARTS_ENV = "GPUPLAT_CHARTS"
DEFAULT_UPSTREAM = ROOT.parent / "shared" / "upstream"


def upstream_root() -> Path:
    return Path(os.environ.get(UPSTREAM_ENV) or DEFAULT_UPSTREAM)


def upstream(*parts: str) -> Path:
    """The upstream file or directory at `parts`; the test fails, naming it, when it is missing."""
    path = upstream_root().joinpath(*parts)
    if not path.exists():
        pytest.fail(
            f"upstream data missing: {path} (the upstream data directory is {upstream_root()}; "
            f"set {UPSTREAM_ENV} to the directory holding the CRDs and charts/<chart>/values.yaml)",
            pytrace=False,
        )
    return path


@functools.cache
def crd_files() -> tuple[Path, ...]:
    """Every CRD file of the upstream data (the per-project directories, not charts/)."""
    projects = [d for d in sorted(upstream().iterdir()) if d.is_dir() and d.name != "charts"]
    return tuple(sorted(p for d in projects for p in d.glob("*.yaml")))


def chart_values_dir(key: str) -> Path:
    """The directory of chart `key`'s upstream values.yaml (and of its subcharts' values)."""
    return upstream("charts", key, "values.yaml").parent


def real_charts() -> Path:
    """The directory of real charts (`GPUPLAT_CHARTS`); the test is skipped, saying so, without it."""
    given = os.environ.get(CHARTS_ENV)
    if not given:
        pytest.skip(f"renders the real charts: set {CHARTS_ENV} to a directory holding one chart per key")
    path = Path(given)
    if not path.is_dir():
        pytest.fail(f"{CHARTS_ENV}={given} is not a directory", pytrace=False)
    return path

