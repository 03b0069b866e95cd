"""The components follow one wiring convention (components/conventions.py), checked on the source.

Short functions, one name for "what must exist first" in every Args, one Helm helper, one
child-options helper: each check fails on the code as it was before the convention.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import components

ROOT = Path(components.__file__).resolve().parent
SOURCES = sorted(ROOT.rglob("*.py"))
MAX_FUNCTION_LINES = 60
# Other names "depends on" had before it was one.
_DEPENDENCY_SYNONYMS = {"ready", "cluster_ready", "releases", "after", "wait_for"}


def _functions(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (
            f"{path.relative_to(ROOT.parent)}:{node.lineno} {node.name}",
            (node.end_lineno or node.lineno) - node.lineno + 1,
        )
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def _args_classes() -> list[type]:
    found: list[type] = []
    for module in pkgutil.walk_packages([str(ROOT)], prefix="components."):
        mod = importlib.import_module(module.name)
        for _, cls in inspect.getmembers(mod, inspect.isclass):
            if cls.__module__ == mod.__name__ and cls.__name__.endswith("Args") and dataclasses.is_dataclass(cls):
                found.append(cls)
    return found


def test_no_component_function_is_longer_than_60_lines() -> None:
    long = [(where, n) for path in SOURCES for where, n in _functions(path) if n > MAX_FUNCTION_LINES]
    assert not long, f"split these into spec builders and a thin constructor: {long}"


def test_args_name_their_prerequisites_depends_on() -> None:
    classes = _args_classes()
    assert len(classes) > 10  # every component's Args was found
    odd = {f"{c.__name__}.{f.name}" for c in classes for f in dataclasses.fields(c) if f.name in _DEPENDENCY_SYNONYMS}
    assert not odd, f"call these depends_on: {sorted(odd)}"


@pytest.mark.parametrize("needle", ["helm.v3.Release(", "def chart_release", "def own("])
def test_one_helm_helper_and_one_options_helper(needle: str) -> None:
    homes = {"helm.v3.Release(": {"kubernetes/_common.py"}}.get(needle, set())
    found = {str(p.relative_to(ROOT)) for p in SOURCES if needle in p.read_text(encoding="utf-8")}
    assert found == homes, f"{needle!r} outside its one home: {sorted(found - homes)}"


def test_every_kubernetes_object_carries_the_one_ownership_label() -> None:
    from components.conventions import OWNER, PART_OF_LABEL
    from tests.support_aws import recorded_all

    _, _, resources = recorded_all("dev")
    objects = [r for r in resources if r.custom and r.type.startswith("kubernetes:") and "metadata" in r.inputs]
    karpenter = [r for r in objects if r.type.startswith("kubernetes:karpenter")]
    assert karpenter  # NodePools, EC2NodeClasses, NodeOverlays
    for r in objects:
        labels = r.inputs["metadata"].get("labels") or {}
        assert "app.kubernetes.io/managed-by" not in labels, r.urn
    assert all(r.inputs["metadata"]["labels"][PART_OF_LABEL] == OWNER for r in karpenter)
