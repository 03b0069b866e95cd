"""A fractional pool's pods placed GPU by GPU in the replay (gpuplat/simulate/gpus.py): the
scheduler's filter (a GPU whose free share holds the pod's) and its score (spread: the least-used
node and GPU first; binpack: the fullest), and the what-if of a GPU per job."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from gpuplat.cli import main
from gpuplat.compile import Sources, compile_sources
from gpuplat.model import Platform
from gpuplat.plan import Plan
from gpuplat.simulate import Options, Trace, load_trace
from gpuplat.simulate.gpus import GpuMap
from gpuplat.simulate.nodes import FRAGMENTATION
from gpuplat.simulate.run import GpuPlacementError, replay, simulate
from tests.support_simulate import existing_nodes


def _shared(tmp: Path, nodes: int, gpus: int, policy: str) -> tuple[Platform, Plan, Path]:
    spec = tmp / f"shared-{policy}.yaml"
    spec.write_text(
        "apiVersion: gpuplat/v1\nkind: Platform\nmetadata: {name: shared}\n"
        'target: {provider: kubernetes, kubernetesVersion: "1.35"}\n'
        f"gpuNodePools:\n  - name: lab\n    gpu: {{model: A100-SXM-80GB, count: {gpus}}}\n"
        f"    nodeSelector: {{gpuplat.dev/pool: lab}}\n    nodes: {{min: {nodes}, max: {nodes}}}\n"
        "    sharing: {mode: fractional, replicas: 10}\n"
        f"scheduling: {{gpuScheduler: {{policy: {policy}}}}}\n"
        f"tenants:\n  - {{name: team, gpus: {nodes * gpus}, pools: [lab]}}\n"
    )
    compiled = compile_sources(Sources(spec, None))
    assert compiled.ok and compiled.model is not None and compiled.plan is not None, compiled.diagnostics
    return compiled.model, compiled.plan, spec


def _trace(tmp: Path, rows: Sequence[tuple[float, float, float]]) -> Trace:
    """(submit, duration, fraction of one GPU) rows, each busy half of its share's time."""
    path = tmp / "shares.csv"
    path.write_text(
        "submit,duration,gpus,fraction,tenant,utilization\n" + "".join(f"{s},{d},1,{f},team,0.5\n" for s, d, f in rows)
    )
    return load_trace(path)


# Two halves, then 60 %: spread gives each half a GPU of its own, and no GPU then has 60 % free
# until a half ends at 1000; binpack puts both halves on one GPU and the 60 % on the other at once.
HALVES_THEN_MORE = [(0, 1000, 0.5), (1, 2000, 0.5), (2, 100, 0.6)]


@pytest.mark.parametrize(("policy", "third_starts", "fragmented_s"), [("spread", 1000, 998 * 1), ("binpack", 2, 0)])
def test_the_specs_policy_decides_which_gpu_a_share_goes_on(
    tmp_path: Path, policy: str, third_starts: float, fragmented_s: float
) -> None:
    model, plan, _ = _shared(tmp_path, 1, 2, policy)
    engine = replay(model, plan, _trace(tmp_path, HALVES_THEN_MORE), Options(node_packing=True)).engine
    assert engine.started == [0, 1, third_starts]
    # 1.1 GPUs' worth of units are free the whole time, so the spread wait is fragmentation.
    assert engine.node_waits.gpu_s[FRAGMENTATION] == pytest.approx(fragmented_s)
    perfect = replay(model, plan, _trace(tmp_path, HALVES_THEN_MORE), Options()).engine
    assert perfect.started == [0, 1, 2]  # units packed perfectly: shares may span GPUs


def test_a_what_if_policy_overrides_the_specs(tmp_path: Path) -> None:
    model, plan, _ = _shared(tmp_path, 1, 2, "spread")
    options = Options(node_packing=True, gpu_placement="binpack")
    assert replay(model, plan, _trace(tmp_path, HALVES_THEN_MORE), options).engine.started == [0, 1, 2]


def test_spread_picks_the_least_used_node_and_binpack_the_fullest() -> None:
    spread, binpack = GpuMap(3, 2, 10, "spread"), GpuMap(3, 2, 10, "binpack")
    for m in (spread, binpack):
        m.take([(0, 6)])  # node 0, GPU 0: 4 free
        m.take([(2, 2)])  # node 1, GPU 2: 8 free
    assert spread.fit(3) == [(4, 3)]  # node 2 is empty: usage 0, score 1/(1+0) the highest
    assert binpack.fit(3) == [(0, 3)]  # node 0 is the fullest, and GPU 0 its fullest that holds 3
    assert binpack.fit(5) == [(1, 5)]  # GPU 0 has 4 free: the node's other GPU
    spread.take([(4, 3), (5, 1), (3, 1)])  # node usages 6, 3 and 4: node 1 is the least used
    assert spread.fit(3) == [(3, 3)]  # and GPU 3 (9 free) its GPU with the most free


def test_a_share_never_spans_gpus_and_the_integrals_follow_the_pods() -> None:
    m = GpuMap(1, 2, 10, "spread")
    m.take([(0, 5)])
    m.take([(1, 5)])
    assert sum(m.free) == 10 and m.fit(6) is None  # 10 units free, but 5 and 5 on two GPUs
    m.advance(100)
    m.take([(0, 5)], -1)
    m.advance(300)
    assert (m.occupied_gpu_s, m.empty_node_s) == (2 * 100 + 1 * 200, 0)
    m.take([(1, 5)], -1)
    m.advance(400)
    assert (m.occupied, m.empty_nodes, m.empty_node_s) == (0, 1, 100)
    assert m.fit(10) == [(0, 10)]


def test_a_gpu_per_job_holds_more_gpus_for_the_same_work(tmp_path: Path) -> None:
    model, plan, _ = _shared(tmp_path, 1, 2, "binpack")
    trace = _trace(tmp_path, [(0, 3600, 0.3), (0, 3600, 0.3), (0, 3600, 0.3)])
    shared = simulate(model, plan, trace, Options(node_packing=True))
    whole = simulate(model, plan, trace, Options(node_packing=True, gpu_placement="whole"))
    s, w = shared.gpu_placements[0], whole.gpu_placements[0]
    assert (s.policy, w.policy) == ("binpack", "whole")
    assert s.busy_gpu_h == pytest.approx(w.busy_gpu_h) == pytest.approx(3 * 0.3 * 0.5)  # the same work
    assert s.occupied_gpu_h == pytest.approx(1.0)  # three 30 % shares on one GPU
    # Two GPUs: the third job waits an hour for one of its own.
    assert whole.waits[0].mean_seconds == pytest.approx(3600 / 3)
    assert w.occupied_gpu_h == pytest.approx(3.0) and w.busy_of_occupied < s.busy_of_occupied


def test_the_cli_reports_the_placement_and_refuses_it_where_nothing_is_placed_by_gpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, spec = _shared(tmp_path, 1, 2, "spread")
    _trace(tmp_path, HALVES_THEN_MORE)
    trace = str(tmp_path / "shares.csv")
    args = ["simulate", "--spec", str(spec), "--trace", trace, "--seeds", "1", "--node-packing"]
    assert main([*args, "--format", "json"]) == 0
    placed = json.loads(capsys.readouterr().out)["gpuPlacement"]
    assert [(p["flavor"], p["policy"]) for p in placed] == [("lab", "spread")]
    assert main(args) == 0
    assert "GPU placement on lab (shared, spread)" in capsys.readouterr().out
    assert main(["simulate", "--spec", str(spec), "--trace", trace, "--gpu-placement", "whole"]) == 2
    assert "needs --node-packing" in capsys.readouterr().err
    model, plan = existing_nodes(tmp_path, 1)
    with pytest.raises(GpuPlacementError, match="no pool of sharing mode fractional"):
        replay(model, plan, _trace(tmp_path, [(0, 10, 0.5)]), Options(node_packing=True, gpu_placement="spread"))
