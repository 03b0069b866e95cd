"""A stand-in for e2e.cluster.Cluster's reads, for judging the engines' objects without a cluster."""

from __future__ import annotations

from typing import Any


class Canned:
    """Lists of objects by kind and namespace, as the cluster would list them."""

    def __init__(self, lists: dict[tuple[str, str], list[dict[str, Any]]]) -> None:
        self.lists = lists

    def items(self, resource: str, namespace: str = "") -> list[dict[str, Any]]:
        return self.lists.get((resource, namespace), [])

    def get(self, resource: str, name: str = "", namespace: str = "") -> dict[str, Any] | None:
        return {"items": self.items(resource, namespace)}
