"""The one way tests reach upstream data: CRDs and charts' values.yaml.

The repository holds only what this project wrote. The upstream files the tests validate against
are found by e2e/upstream.py (shared with the e2e suite): in the upstream data directory beside
the clone, ../shared/upstream (`GPUPLAT_UPSTREAM` points elsewhere), else in the Go module that
carries the pinned release's copy, downloaded through the Go module proxy and checked against
go.sum. Layout: one directory per upstream project holding its CRDs
(`kueue/kueue.x-k8s.io_clusterqueues.yaml`, ...) and `charts/<chart key>/values.yaml` (with
vendored subcharts under `charts/<chart key>/charts/<name>/`), at the versions the catalog pins.

A test needing a file found in neither place is skipped with the reason (`UpstreamMissing`,
turned into a skip by tests/conftest.py), never failed: a clone without the data directory and
without the module proxy fails no test. A test going through several charts checks every one it
has data for, then skips naming the others (`Partly`).

Real chart templates are code, not data: tests that render the real charts read them from the
directory in `GPUPLAT_CHARTS` (one subdirectory per chart key, as `gpuplat verify --charts`
takes) and are skipped without it, saying so.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.upstream import UPSTREAM_ENV, UpstreamMissing, crd_files, data_dir, resolve

__all__ = ["UPSTREAM_ENV", "Partly", "UpstreamMissing", "chart_values_dir", "crd_files", "real_charts", "upstream"]

CHARTS_ENV = "GPUPLAT_CHARTS"


def upstream_root() -> Path:
    return data_dir()


def upstream(*parts: str) -> Path:
    """The upstream file or directory at `parts` (UpstreamMissing, a skip, when there is none)."""
    return resolve("/".join(parts))


def chart_values_dir(key: str) -> Path:
    """The directory of chart `key`'s upstream values.yaml (and of its subcharts' values)."""
    return upstream("charts", key, "values.yaml").parent


class Partly:
    """For a test going through several charts or objects: each item is checked when its upstream
    data is there; `done()` then skips, naming the items that were not (a failure fails first)."""

    def __init__(self) -> None:
        self.checked: list[str] = []
        self.missing: dict[str, str] = {}

    @contextlib.contextmanager
    def item(self, name: str) -> Iterator[None]:
        try:
            yield
        except UpstreamMissing as err:
            self.missing[name] = str(err)
        else:
            self.checked.append(name)

    def done(self) -> None:
        if self.missing:
            names = ", ".join(self.missing)
            first = next(iter(self.missing.values()))
            pytest.skip(f"checked {len(self.checked)}; no upstream data for {names} (first: {first})")


def real_charts() -> Path:
    """The directory of real charts (`GPUPLAT_CHARTS`); the test is skipped, saying so, without it."""
    given = os.environ.get(CHARTS_ENV)
    if not given:
        pytest.skip(f"renders the real charts: set {CHARTS_ENV} to a directory holding one chart per key")
    path = Path(given)
    if not path.is_dir():
        pytest.fail(f"{CHARTS_ENV}={given} is not a directory", pytrace=False)
    return path
