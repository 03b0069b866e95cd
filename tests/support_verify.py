"""Shared by the rendering and verify tests: every shipped stack recorded whole, as plain dicts.

aws stacks run the whole program (AWS side, Karpenter releases and NodePools included); the
kubernetes example records its Kubernetes side, which on that provider is everything the
platform applies. Resources come back as the preview's JSON form (`{"type", "inputs", ...}`),
the form `gpuplat verify` reads; tests deep-copy them before mutating.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from gpuplat.model import Platform
from gpuplat.plan import Plan
from tests import support_aws, support_k8s

SPECS = ("kubernetes", *support_aws.STACKS)


@functools.cache
def _recorded(which: str) -> tuple[Platform, Plan, tuple[dict[str, Any], ...]]:
    if which == "kubernetes":
        model, plan, resources = support_k8s.recorded("kubernetes")
    else:
        model, plan, resources = support_aws.recorded_all(which)
    return model, plan, tuple(r.to_json() for r in resources)


def recorded(which: str) -> tuple[Platform, Plan, list[dict[str, Any]]]:
    """A fresh deep copy of the recording of `which` (a stack name or `kubernetes`)."""
    model, plan, resources = _recorded(which)
    return model, plan, copy.deepcopy(list(resources))


def objects(resources: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The inputs (the object itself) of every recorded resource of `kind`, mutable in place."""
    return [r["inputs"] for r in resources if r["inputs"].get("kind") == kind]


def release(resources: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(r["inputs"] for r in resources if r["type"] == support_k8s.RELEASE and r["inputs"]["name"] == name)
