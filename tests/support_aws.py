"""Shared by the AWS component tests: compile a stack, record GpuPlatform, validate CRs.

Recordings run the real components through gpuplat.preview (the offline engine), so what
these tests see is exactly what `gpuplat preview` and CrossGuard would see.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from components import GpuPlatform, GpuPlatformArgs
from gpuplat.compile import compile_stack
from gpuplat.model import Platform
from gpuplat.plan import Plan
from gpuplat.preview import RecordedResource, record_program
from gpuplat.preview.stack import stack_config
from tests import support_k8s
from tests.upstream import chart_values_dir

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "gpu-platform"
STACKS = ("dev", "staging", "prod")

NODE_CLASS = ("karpenter.k8s.aws/v1", "EC2NodeClass")
NODE_POOL = ("karpenter.sh/v1", "NodePool")
NODE_OVERLAY = ("karpenter.sh/v1alpha1", "NodeOverlay")


def compile_model(stack: str, overlay: Path | None = None) -> tuple[Platform, Plan]:
    default = ROOT / "stacks" / f"{stack}.yaml"
    compiled = compile_stack(stack, spec=str(ROOT / "platform" / "platform.yaml"), overlay=str(overlay or default))
    assert compiled.ok and compiled.model is not None and compiled.plan is not None, compiled.diagnostics
    return compiled.model, compiled.plan


def record(model: Platform, plan: Plan, stack: str, config: dict[str, str] | None = None) -> list[RecordedResource]:
    """Record GpuPlatform; the stack config defaults to the spec's region, as in a matching stack,
    and the stack's declared runner access (a private endpoint without one stops at preflight)."""

    def program() -> None:
        GpuPlatform(model.metadata.name, GpuPlatformArgs(model, plan))

    access = {k: v for k, v in stack_config(stack, ROOT).items() if k.startswith("gpu-platform:apiAccess")}
    settings = config if config is not None else {"aws:region": model.target.region or "", **access}
    return record_program(program, project=PROJECT, stack=stack, config=settings)


def overlay_with(directory: Path, stack: str, **sections: Any) -> Path:
    """The stack's overlay with whole top-level sections replaced (target, metadata, ...)."""
    overlay = yaml.safe_load((ROOT / "stacks" / f"{stack}.yaml").read_text(encoding="utf-8"))
    overlay.update(sections)
    path = directory / f"{stack}-changed.yaml"
    path.write_text(yaml.safe_dump(overlay), encoding="utf-8")
    return path


AWS_COMPONENTS = frozenset(
    f"gpuplat:index:{n}"
    for n in (
        "Network",
        "Cluster",
        "Karpenter",
        "Fabric",
        "Procurement",
        "GpuNodePool",
        "CpuNodePool",
        "StorageTiers",
        "TenantAccess",
    )
)


def aws_side(resources: list[RecordedResource]) -> tuple[RecordedResource, ...]:
    """The AWS components, their children, the root and its Kubernetes provider (the
    Kubernetes-side components have their own tests)."""
    by_urn = {r.urn: r for r in resources}

    def mine(r: RecordedResource) -> bool:
        if r.type in ("pulumi:pulumi:Stack", "gpuplat:index:GpuPlatform", "pulumi:providers:kubernetes"):
            return True
        node: RecordedResource | None = r
        while node is not None:
            if node.type in AWS_COMPONENTS:
                return True
            node = by_urn.get(node.parent) if node.parent else None
        return False

    return tuple(r for r in resources if mine(r))


@functools.cache
def recorded_all(stack: str) -> tuple[Platform, Plan, tuple[RecordedResource, ...]]:
    model, plan = compile_model(stack)
    return model, plan, tuple(record(model, plan, stack))


@functools.cache
def recorded(stack: str) -> tuple[Platform, Plan, tuple[RecordedResource, ...]]:
    """The stack's AWS side, as recorded by the whole program."""
    model, plan, resources = recorded_all(stack)
    return model, plan, aws_side(list(resources))


def of_type(resources: tuple[RecordedResource, ...] | list[RecordedResource], type_: str) -> list[RecordedResource]:
    return [r for r in resources if r.type == type_]


def custom_resources(resources: tuple[RecordedResource, ...], kind: tuple[str, str]) -> list[dict[str, Any]]:
    api_version, name = kind
    return [
        r.inputs
        for r in resources
        if r.type == f"kubernetes:{api_version}:{name}"
        or (r.inputs.get("apiVersion") == api_version and r.inputs.get("kind") == name)
    ]


# ------------------------------------------------------------------------------- CRD schemas


def crd_errors(kind: tuple[str, str], obj: dict[str, Any]) -> Iterator[str]:
    """Errors of `obj` against its upstream CRD (the Kubernetes tests' strict validator)."""
    api_version, name = kind
    assert (obj.get("apiVersion"), obj.get("kind")) == (api_version, name)
    yield from support_k8s.crd_errors(obj)


# ------------------------------------------------------------------------------ chart values


def chart_values(key: str) -> dict[str, Any]:
    """Chart `key`'s upstream values.yaml (the test fails, naming it, when it is missing)."""
    path = chart_values_dir(key) / "values.yaml"
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


def unknown_value_keys(values: Any, defaults: Any, path: str = "") -> Iterator[str]:
    """Paths set in `values` that the chart's values.yaml does not have (lists are leaves)."""
    if not isinstance(values, dict):
        return
    for key, value in values.items():
        here = f"{path}.{key}" if path else str(key)
        if not isinstance(defaults, dict) or key not in defaults:
            yield here
        elif isinstance(value, dict) and defaults[key]:
            yield from unknown_value_keys(value, defaults[key], here)
