"""What every test shares: missing upstream data skips, and no test reads this machine's chart cache."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Generator
from pathlib import Path

import pytest

from e2e.upstream import UpstreamMissing
from tests.support_install import dist, house, team, wheel  # noqa: F401  (session fixtures: one wheel, one install)

# verify renders from the chart cache `gpuplat charts pull` fills: the tests' outputs must not
# depend on what this machine pulled, so they see an empty one unless a test names its own.
os.environ["GPUPLAT_CHART_CACHE"] = str(Path(tempfile.gettempdir()) / f"gpuplat-tests-no-chart-cache-{os.getpid()}")


# Upstream data neither beside the clone nor in a module this machine can get (e2e/upstream.py):
# the test is skipped with the one-line reason, in its fixtures or in its body.
@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    try:
        return (yield)
    except UpstreamMissing as err:
        pytest.skip(f"upstream data: {err}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    try:
        return (yield)
    except UpstreamMissing as err:
        pytest.skip(f"upstream data: {err}")
