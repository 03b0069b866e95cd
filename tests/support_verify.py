"""Shared by the rendering and verify tests: every shipped stack recorded whole, as plain dicts.

aws stacks run the whole program (AWS side, Karpenter releases and NodePools included); the
kubernetes example records its Kubernetes side, which on that provider is everything the
platform applies. Resources come back as the preview's JSON form (`{"type", "inputs", ...}`),
the form `gpuplat verify` reads; tests deep-copy them before mutating.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpuplat.model import Platform
from gpuplat.plan import Plan
from gpuplat.verify import ChartDirectory, Journey, Step, render_text, verify
from tests import support_aws, support_k8s

SPECS = ("kubernetes", *support_aws.STACKS)
# The project's own stand-ins of the charts verify reads (tests/fixtures/charts/README.md).
FIXTURE_CHARTS = ChartDirectory(Path(__file__).resolve().parent / "fixtures" / "charts")
Mutation = Callable[[list[dict[str, Any]]], None]


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


# ---- journeys over a mutated recording ------------------------------------------------------


def run(which: str, *mutations: Mutation) -> list[Journey]:
    model, plan, resources = recorded(which)
    for mutate in mutations:
        mutate(resources)
    return verify(model, plan, resources, FIXTURE_CHARTS)


def journey(journeys: list[Journey], tenant: str, pool: str, resource: str | None = None) -> Journey:
    return next(
        j for j in journeys if (j.tenant, j.pool) == (tenant, pool) and (resource is None or j.resource == resource)
    )


def steps(j: Journey, name: str) -> list[Step]:
    found = [s for s in j.steps if s.step == name]
    assert found, f"no {name} step in {render_text([j])}"
    return found


def assert_ok(j: Journey, name: str) -> None:
    assert all(s.ok for s in steps(j, name)), render_text([j])


def assert_fails(j: Journey, name: str, needle: str) -> None:
    assert not j.ok
    assert any(not s.ok and needle in s.detail for s in steps(j, name)), render_text([j])


def find(resources: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(o for o in objects(resources, kind) if o["metadata"]["name"] == name)


# ---- repairs of today's defects, so a later mutation is the only break ------------------------


def lift_default_limits(resources: list[dict[str, Any]]) -> None:
    for lr in objects(resources, "LimitRange"):
        for item in lr["spec"]["limits"]:
            item.pop("default", None)


def own_volume_handles(resources: list[dict[str, Any]]) -> None:
    for pv in objects(resources, "PersistentVolume"):
        pv["spec"]["csi"]["volumeHandle"] = pv["metadata"]["name"]


def hami_selector_without_chart_default(resources: list[dict[str, Any]]) -> None:
    release(resources, "hami")["values"]["devicePlugin"]["nvidiaNodeSelector"]["gpu"] = None


def node_overlay(node_pool: str, resource: str, count: int = 56) -> Mutation:
    def add(resources: list[dict[str, Any]]) -> None:
        overlay = {
            "apiVersion": "karpenter.sh/v1alpha1",
            "kind": "NodeOverlay",
            "metadata": {"name": f"{node_pool}-units"},
            "spec": {
                "requirements": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": [node_pool]}],
                "capacity": {resource: str(count)},
            },
        }
        resources.append({"type": "kubernetes:karpenter.sh/v1alpha1:NodeOverlay", "name": "o", "inputs": overlay})

    return add


def node_overlay_gate(resources: list[dict[str, Any]]) -> None:
    release(resources, "karpenter")["values"]["settings"]["featureGates"]["nodeOverlay"] = True


# ---- the defects of the issue, each (re)introduced into the recording -------------------------------
# Written so they hold before and after the fix branches: each mutation puts the defect back.


def small_default_limits(resources: list[dict[str, Any]]) -> None:
    for lr in objects(resources, "LimitRange"):
        for item in lr["spec"]["limits"]:
            item["default"] = {"cpu": "2", "memory": "8Gi"}


def baseline_namespaces(resources: list[dict[str, Any]]) -> None:
    for ns in objects(resources, "Namespace"):
        if "gpuplat.dev/tenant" in ns["metadata"].get("labels", {}):
            ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] = "baseline"


def shared_hot_handle(resources: list[dict[str, Any]]) -> None:
    for pv in objects(resources, "PersistentVolume"):
        if pv["spec"]["csi"]["driver"] == "fsx.csi.aws.com":
            pv["spec"]["csi"]["volumeHandle"] = "fs-0123456789abcdef0"


def drop_overlays(resources: list[dict[str, Any]]) -> None:
    resources[:] = [r for r in resources if r["inputs"].get("kind") != "NodeOverlay"]


def replicas_as_whole_gpus(resources: list[dict[str, Any]]) -> None:
    data = release(resources, "gpu-operator")["values"]["devicePlugin"]["config"]["data"]
    data["dev"] = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 4}\n"


def hami_chart_default_selector(resources: list[dict[str, Any]]) -> None:
    """The defect as it was: our selector without `gpu`, and pool nodes not labelled gpu=on."""
    values = release(resources, "hami")["values"]
    values["devicePlugin"]["nvidiaNodeSelector"] = {"gpuplat.dev/sharing": "fractional"}
    for ds in objects(resources, "DaemonSet"):
        for container in ds["spec"]["template"]["spec"].get("initContainers", []):
            container["command"] = [arg for arg in container["command"] if arg != "gpu=on"]
