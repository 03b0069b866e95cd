"""A cluster of existing 8-GPU nodes, one pool and one tenant that may hold all of it: the
simplest platform a trace can be replayed on."""

from __future__ import annotations

from pathlib import Path

from gpuplat.compile import Sources, compile_sources
from gpuplat.model import Platform
from gpuplat.plan import Plan


def existing_nodes(tmp: Path, nodes: int, tenant: str = "lab") -> tuple[Platform, Plan]:
    spec = tmp / f"nodes-{nodes}.yaml"
    spec.write_text(
        "apiVersion: gpuplat/v1\nkind: Platform\nmetadata: {name: nodes}\n"
        'target: {provider: kubernetes, kubernetesVersion: "1.33"}\n'
        "gpuNodePools:\n  - name: gpu\n    gpu: {model: A10G-24GB, count: 8}\n"
        f"    nodeSelector: {{gpuplat.dev/pool: gpu}}\n    nodes: {{min: {nodes}, max: {nodes}}}\n"
        f"tenants:\n  - {{name: {tenant}, gpus: {nodes * 8}}}\n"
    )
    compiled = compile_sources(Sources(spec, None))
    assert compiled.ok and compiled.model is not None and compiled.plan is not None
    return compiled.model, compiled.plan
