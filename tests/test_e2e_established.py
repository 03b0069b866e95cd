"""The suite waits for CRDs as Helm does, including one created a moment ago (e2e/cluster.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from e2e.cluster import Cluster
from e2e.errors import E2EError


def _crd(name: str, status: dict[str, Any] | None) -> dict[str, Any]:
    return {"metadata": {"name": name}, **({"status": status} if status is not None else {})}


ESTABLISHED = {"conditions": [{"type": "NamesAccepted", "status": "True"}, {"type": "Established", "status": "True"}]}


class _Scripted(Cluster):
    """A cluster whose CRD list is one answer per read."""

    def __init__(self, answers: list[list[dict[str, Any]]]) -> None:
        super().__init__("scripted", Path("/nonexistent"), {})
        self.answers = answers
        self.reads = 0

    def items(self, resource: str, namespace: str = "") -> list[dict[str, Any]]:
        assert resource == "customresourcedefinitions"
        self.reads += 1
        return self.answers[min(self.reads, len(self.answers)) - 1]


def test_a_crd_without_status_yet_is_waited_for_not_an_error() -> None:
    # `kubectl wait --for=condition=established crd --all` failed the fleet's setup on such a CRD:
    # ".status.conditions accessor error: <nil> is of the type <nil>".
    cluster = _Scripted([[_crd("a.x.io", ESTABLISHED), _crd("b.x.io", None)],
                         [_crd("a.x.io", ESTABLISHED), _crd("b.x.io", {"conditions": None})],
                         [_crd("a.x.io", ESTABLISHED), _crd("b.x.io", ESTABLISHED)]])
    assert cluster.wait_established(timeout=10) == []
    assert cluster.reads == 3


def test_one_never_established_is_named_or_returned() -> None:
    stuck = [_crd("a.x.io", ESTABLISHED),
             _crd("b.x.io", {"conditions": [{"type": "Established", "status": "False"}]})]
    with pytest.raises(E2EError, match=r"not Established after 1 s: b\.x\.io"):
        _Scripted([stuck]).wait_established(timeout=1)
    assert _Scripted([stuck]).wait_established(timeout=1, check=False) == ["b.x.io"]
