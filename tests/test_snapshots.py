"""The compiled shipped stacks equal their committed snapshots (regenerate: make snapshots)."""

from __future__ import annotations

import difflib
import json

import pytest

from tests.snapshots import STACKS, render, snapshot_path


@pytest.mark.parametrize("stack", STACKS)
def test_stack_matches_snapshot(stack: str) -> None:
    expected = snapshot_path(stack).read_text(encoding="utf-8")
    actual = render(stack)
    if actual != expected:
        diff = "".join(
            list(
                difflib.unified_diff(
                    expected.splitlines(keepends=True), actual.splitlines(keepends=True), "committed", "now", n=2
                )
            )[:80]
        )
        pytest.fail(f"the {stack} stack changed; review and run `make snapshots`:\n{diff}")


@pytest.mark.parametrize("stack", STACKS)
def test_snapshot_urns_are_unique(stack: str) -> None:
    urns = [r["urn"] for r in json.loads(snapshot_path(stack).read_text(encoding="utf-8"))["resources"]]
    assert len(urns) == len(set(urns))
