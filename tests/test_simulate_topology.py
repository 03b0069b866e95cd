"""Topology domains in the replay (--node-packing on a fabric pool Kueue places by its Topology):
a multi-node job runs within one leaf's nodes, as the spec's fat-tree gives them, so it can wait
while the pool's free nodes would hold it but no one leaf does; that wait is counted apart from
fragmentation, and a pool without domains places as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuplat.cli import main
from gpuplat.compile import Sources, compile_sources
from gpuplat.model import Platform
from gpuplat.plan import Plan
from gpuplat.plan.fabric import topology_domains
from gpuplat.simulate import Options, Trace
from gpuplat.simulate.engine import Engine
from gpuplat.simulate.nodes import FRAGMENTATION, TOPOLOGY
from gpuplat.simulate.run import replay
from tests.support_simulate import lab_trace

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _spec(tmp: Path, labels: str = "[example.com/leaf]", radix: int = 4) -> Path:
    """Four 8-GPU nodes with one fabric port each; radix 4 at 1:1 gives a leaf 2 host ports: 2 leaves of 2 nodes."""
    spec = tmp / f"leaves-{radix}-{len(labels)}.yaml"
    labelled = f", topologyLabels: {labels}" if labels else ""
    spec.write_text(
        "apiVersion: gpuplat/v1\nkind: Platform\nmetadata: {name: leaves}\n"
        'target: {provider: kubernetes, kubernetesVersion: "1.33"}\n'
        "gpuNodePools:\n  - name: train\n    gpu: {model: A10G-24GB, count: 8}\n"
        "    nodeSelector: {gpuplat.dev/pool: train}\n    nodes: {min: 4, max: 4}\n    nicsPerNode: 1\n"
        "    fabric: true\n"
        f"network:\n  fabric: {{tiers: 2, switchRadix: {radix}, linkGbps: 100, transport: infiniband{labelled}}}\n"
        "tenants:\n  - {name: lab, gpus: 32}\n"
    )
    return spec


def _compiled(spec: Path) -> tuple[Platform, Plan]:
    compiled = compile_sources(Sources(spec, None))
    assert compiled.ok and compiled.model is not None and compiled.plan is not None
    return compiled.model, compiled.plan


def _replay(spec: Path, trace: Trace, topology: bool = True) -> Engine:
    model, plan = _compiled(spec)
    return replay(model, plan, trace, Options(spot=False, node_packing=True, topology=topology)).engine


# Four 8-GPU jobs fill nodes 0-3 (leaves {0, 1} and {2, 3}); the ones on nodes 1 and 3 end at 100
# and 50, so from 100 two whole nodes are free, one in each leaf. The 16-GPU job submitted at 10
# fits the pool then but no leaf until node 0's job ends at 1000.
SPLIT = [(0, 1000, 8), (0, 100, 8), (0, 2000, 8), (0, 50, 8), (10, 10, 16)]


def test_a_job_that_fits_the_pool_but_no_leaf_waits_and_the_wait_counts_as_topology(tmp_path: Path) -> None:
    engine = _replay(_spec(tmp_path), lab_trace(tmp_path, SPLIT))
    assert engine.started == [0, 0, 0, 0, 1000]
    assert engine.node_waits.gpu_s[TOPOLOGY] == pytest.approx((1000 - 100) * 16)
    assert engine.node_waits.jobs[TOPOLOGY] == {4}
    assert engine.node_waits.gpu_s[FRAGMENTATION] == 0  # whole nodes were free: not fragmentation


def test_without_domains_the_same_job_starts_when_two_nodes_are_free(tmp_path: Path) -> None:
    """No topologyLabels: Kueue's Topology has the host level only, so nothing keeps a job under
    one leaf, and placement is as before; the same holds with the constraint turned off."""
    trace = lab_trace(tmp_path, SPLIT)
    for engine in (_replay(_spec(tmp_path, labels=""), trace), _replay(_spec(tmp_path), trace, topology=False)):
        assert engine.started == [0, 0, 0, 0, 100]
        assert engine.node_waits.gpu_s[TOPOLOGY] == 0 and not engine.node_waits.jobs[TOPOLOGY]


def test_a_multi_node_job_goes_to_the_fullest_leaf_that_holds_it(tmp_path: Path) -> None:
    # 4 GPUs on node 0; the 12-GPU job fits leaf {0, 1} (node 1 whole, 4 on node 0) and the empty
    # leaf {2, 3}: best fit takes the fuller first leaf, so the 16-GPU job still finds a whole leaf.
    trace = lab_trace(tmp_path, [(0, 1000, 4), (1, 1000, 12), (2, 10, 16)])
    engine = _replay(_spec(tmp_path), trace)
    assert engine.started == [0, 1, 2]
    assert not engine.node_waits.jobs[TOPOLOGY]


def test_a_job_wider_than_every_leaf_runs_on_any_nodes(tmp_path: Path) -> None:
    # From 60 nodes 1 and 2 are free, one in each leaf: a 16-GPU job (2 nodes) waits for a leaf,
    # but a 24-GPU job (3 nodes, wider than a leaf of 2) is held to no leaf and starts when 3 are free.
    busy = [(0, 1000, 8), (0, 50, 8), (0, 50, 8), (0, 2000, 8)]
    assert _replay(_spec(tmp_path), lab_trace(tmp_path, [*busy, (60, 5, 16)])).started[4] == 1000
    wide = [(0, 1000, 8), (0, 50, 8), (0, 50, 8), (0, 50, 8), (60, 5, 24)]
    assert _replay(_spec(tmp_path), lab_trace(tmp_path, wide)).started[4] == 60


def test_domains_come_from_the_spec_fabric_as_the_emitted_topology(tmp_path: Path) -> None:
    """The kubernetes example: radix 64 at 1:1 gives a leaf 32 host ports, and a train node has
    8 NICs, so 4 nodes share a leaf; its flavor is the one that names the Kueue Topology."""
    model, plan = _compiled(FIXTURES / "kubernetes_example.yaml")
    domains = {f.key: topology_domains(model, plan.fabric, f) for f in plan.flavors}
    assert domains["train"] == (4,)
    assert all(sizes == () for key, sizes in domains.items() if key != "train")
    assert {f.key for f in plan.flavors if f.topology_aware} == {"train"}
    model, plan = _compiled(_spec(tmp_path, radix=8))  # 4 host ports a leaf: all four nodes under one
    assert [topology_domains(model, plan.fabric, f) for f in plan.flavors] == [(4,)]


def test_cli_states_the_domains_and_counts_the_topology_wait(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "jobs.csv"
    lab_trace(tmp_path, SPLIT)
    argv = ["simulate", "--spec", str(_spec(tmp_path)), "--trace", str(trace), "--node-packing"]
    assert main([*argv, "--tenant-map", "lab=lab", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["assumptions"]["topologyDomains"] == {"train": [2]}
    assert out["topologyWait"] == {"gpuHours": pytest.approx(900 * 16 / 3600), "jobs": 1}
    assert out["fragmentation"]["jobs"] == 0
    assert main([*argv, "--tenant-map", "lab=lab"]) == 0
    text = capsys.readouterr().out
    assert "topology domains (leaf" in text and "train 2 nodes" in text and "1 jobs waited 4 GPU-hours" in text
    assert main([*argv, "--tenant-map", "lab=lab", "--no-topology", "--format", "json"]) == 0
    off = json.loads(capsys.readouterr().out)
    assert off["assumptions"]["topologyDomains"] == {} and off["topologyWait"]["jobs"] == 0
