"""GP233: a tenant cannot need more Kueue flavors for one resource than a ClusterQueue group holds."""

from __future__ import annotations

from pathlib import Path

from gpuplat.compile import Sources, compile_sources


def _spec(pools: int, allow: int | None) -> str:
    lines = [
        "apiVersion: gpuplat/v1",
        "kind: Platform",
        "metadata: {name: wide}",
        "target: {provider: aws, region: eu-west-1, zones: [eu-west-1a, eu-west-1b], kubernetesVersion: '1.33'}",
        "gpuNodePools:",
    ]
    lines += [f"  - {{name: p{i}, instanceType: g6.xlarge, nodes: {{min: 0, max: 1}}}}" for i in range(pools)]
    allow_list = f", pools: [{', '.join(f'p{i}' for i in range(allow))}]" if allow is not None else ""
    lines += ["tenants:", f"  - {{name: team, gpus: 1{allow_list}}}"]
    return "\n".join(lines) + "\n"


def _codes(tmp_path: Path, pools: int, allow: int | None = None) -> list[tuple[str, int]]:
    spec = tmp_path / "platform.yaml"
    spec.write_text(_spec(pools, allow), encoding="utf-8")
    compiled = compile_sources(Sources(spec, None))
    return [(d.code, d.line) for d in compiled.diagnostics if d.is_error]


def test_64_flavors_fit_and_65_do_not(tmp_path: Path) -> None:
    # One on-demand flavor per pool: 64 pools fill a resource group exactly, 65 overflow it.
    assert _codes(tmp_path, 64) == []
    assert _codes(tmp_path, 65) == [("GP233", 72)]  # the tenant's line


def test_an_allow_list_keeps_the_tenant_within_the_limit(tmp_path: Path) -> None:
    assert _codes(tmp_path, 65, allow=10) == []
