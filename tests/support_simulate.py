"""Clusters of existing 8-GPU nodes to replay traces on: one pool and one tenant that may hold all
of it (the simplest), or pools of one node each and the tenants a test gives; a spec file compiled
with its plan; and a trace of one tenant's jobs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gpuplat.compile import Sources, compile_sources
from gpuplat.model import Platform
from gpuplat.plan import Plan
from gpuplat.simulate import Trace, load_trace


def compiled_spec(spec: Path) -> tuple[Platform, Plan]:
    """A spec file that must compile, with its plan."""
    compiled = compile_sources(Sources(spec, None))
    assert compiled.ok and compiled.model is not None and compiled.plan is not None, compiled.diagnostics
    return compiled.model, compiled.plan


def lab_trace(tmp: Path, rows: Sequence[tuple[float, float, int]], tenant: str = "lab") -> Trace:
    """(submit, duration, GPUs) rows, every job the tenant's."""
    path = tmp / "jobs.csv"
    path.write_text("submit,duration,gpus,tenant\n" + "".join(f"{s},{d},{g},{tenant}\n" for s, d, g in rows))
    return load_trace(path)


def existing_nodes(tmp: Path, nodes: int, tenant: str = "lab") -> tuple[Platform, Plan]:
    spec = tmp / f"nodes-{nodes}.yaml"
    spec.write_text(
        "apiVersion: gpuplat/v1\nkind: Platform\nmetadata: {name: nodes}\n"
        'target: {provider: kubernetes, kubernetesVersion: "1.33"}\n'
        "gpuNodePools:\n  - name: gpu\n    gpu: {model: A10G-24GB, count: 8}\n"
        f"    nodeSelector: {{gpuplat.dev/pool: gpu}}\n    nodes: {{min: {nodes}, max: {nodes}}}\n"
        f"tenants:\n  - {{name: {tenant}, gpus: {nodes * 8}}}\n"
    )
    return compiled_spec(spec)


def lab_cluster(tmp: Path, pools: Sequence[str], tenants: Sequence[str]) -> tuple[Platform, Plan]:
    """The spec's `tenants` entries are given as flow mappings, e.g. `{name: research, gpus: 8}`."""
    spec = tmp / "cluster.yaml"
    spec.write_text(
        "apiVersion: gpuplat/v1\nkind: Platform\nmetadata: {name: lab}\n"
        'target: {provider: kubernetes, kubernetesVersion: "1.33"}\n'
        "gpuNodePools:\n"
        + "".join(
            f"  - {{name: {pool}, gpu: {{model: A10G-24GB, count: 8}}, nodeSelector: {{gpuplat.dev/pool: {pool}}}, "
            "nodes: {min: 1, max: 1}}\n"
            for pool in pools
        )
        + "tenants:\n"
        + "".join(f"  - {tenant}\n" for tenant in tenants)
    )
    return compiled_spec(spec)
