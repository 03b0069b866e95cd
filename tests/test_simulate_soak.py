"""Any small AWS platform, any trace: the replay keeps its invariants. Hypothesis draws an
exclusive spot/on-demand pool and a fractional one of random sizes, a trace of whole-GPU and
fractional jobs of two tenants (one hard), and the options (node by node or packed perfectly,
autoscaled or static, Philly's outcomes or none), with a spot notice about once an hour per node
so nodes come and go all the time. With `audit` every change checks provisioned >= allocated >=
busy and that a node map holds exactly the Ready nodes; every job must start no earlier than its
submission and end."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuplat.compile import Compiled, Sources, compile_sources
from gpuplat.simulate import Options, load_trace
from gpuplat.simulate.outcomes import PHILLY_OUTCOMES
from gpuplat.simulate.run import replay

MARKETS = ("[on-demand]", "[spot]", "[spot, on-demand]")
pools = st.tuples(st.integers(0, 1), st.integers(1, 4), st.sampled_from(MARKETS))
jobs = st.lists(
    st.tuples(
        st.floats(0, 3_600),  # gap to the previous submission
        st.floats(1, 20_000),  # duration
        st.sampled_from([1, 2, 4, 8, 12, 16, 0.25, 0.5, 0.75]),  # GPUs, or a fraction of one
        st.sampled_from("ab"),
    ),
    min_size=1,
    max_size=60,
)


def _platform(tmp: Path, exclusive: tuple[int, int, str], shared: tuple[int, int, str]) -> Compiled:
    """The first procurement split the spec's semantic rules accept (the pools' markets fix it)."""
    (lo, extra, markets), (s_lo, s_extra, s_markets) = exclusive, shared
    spec = tmp / "soak.yaml"
    compiled = None
    for spot in range(0, 101, 5):
        spec.write_text(
            "apiVersion: gpuplat/v1\nkind: Platform\nmetadata: {name: soak}\n"
            'target: {provider: aws, region: us-east-1, zones: [us-east-1a, us-east-1b], kubernetesVersion: "1.35"}\n'
            "gpuNodePools:\n"
            f"  - {{name: train, instanceType: p5.48xlarge, nodes: {{min: {lo}, max: {lo + extra}}}, "
            f"markets: {markets}}}\n"
            f"  - {{name: share, instanceType: g6e.12xlarge, nodes: {{min: {s_lo}, max: {s_lo + s_extra}}}, "
            f"markets: {s_markets}, sharing: {{mode: fractional, replicas: 4}}}}\n"
            f"procurement: {{spot: {spot}, reserved: 0, onDemand: {100 - spot}}}\n"
            "tenants:\n  - {name: a, gpus: 4}\n  - {name: b, gpus: 4, isolation: hard}\n"
        )
        compiled = compile_sources(Sources(spec, None))
        if compiled.ok:
            return compiled
    assert compiled is not None
    return compiled


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pools, pools, jobs, st.booleans(), st.booleans(), st.booleans(), st.integers(0, 3))
def test_any_small_platform_and_trace_keep_the_replays_invariants(
    tmp_path: Path,
    exclusive: tuple[int, int, str],
    shared: tuple[int, int, str],
    rows: list[tuple[float, float, float, str]],
    node_packing: bool,
    autoscaling: bool,
    outcomes: bool,
    seed: int,
) -> None:
    compiled = _platform(tmp_path, exclusive, shared)
    if not compiled.ok:  # no split of the markets drawn is a valid spec: nothing to replay
        return
    assert compiled.model is not None and compiled.plan is not None
    submit, lines = 0.0, []
    for gap, duration, gpus, tenant in rows:
        submit += gap
        whole, fraction = (int(gpus), 1) if gpus >= 1 else (1, gpus)
        lines.append(f"{submit:.0f},{duration:.0f},{whole},{fraction},{tenant}\n")
    path = tmp_path / "jobs.csv"
    path.write_text("submit,duration,gpus,fraction,tenant\n" + "".join(lines))
    trace = load_trace(path)
    options = Options(
        seed=seed,
        audit=True,
        node_packing=node_packing,
        autoscaling=autoscaling,
        outcomes=PHILLY_OUTCOMES if outcomes else None,
    )
    with mock.patch("gpuplat.simulate.fleet.hazard", lambda instance_type: 1 / 3600):
        done = replay(compiled.model, compiled.plan, trace, options)
    engine = done.engine
    assert done.stranded == 0
    for i, job in enumerate(engine.jobs):
        if i in done.unplaceable:
            continue
        assert engine.started[i] >= job.submit and engine.remaining[i] <= 1e-6, (i, job)
