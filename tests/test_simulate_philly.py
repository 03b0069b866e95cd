"""Philly's trace on a spec of Philly itself, against Philly's published queueing delay.

The whole trace (82,247 jobs) replays in about 2 s of CPU, so this runs in the unit suite. The
spec and its published inputs are tests/support_philly.py's; docs/simulate.md has the table and
states the error this test holds: the replay does not reproduce Philly's queueing yet, and this
test keeps the gap where docs/simulate.md says it is, so a change that moves it is seen.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from gpuplat.compile import Sources, compile_sources
from gpuplat.plan.fabric import topology_domains
from gpuplat.simulate import Options, Trace, load_trace
from gpuplat.simulate.nodes import FRAGMENTATION
from gpuplat.simulate.outcomes import PHILLY_OUTCOMES
from gpuplat.simulate.result import percentile
from gpuplat.simulate.run import replay
from tests.support_philly import (
    EIGHT_GPU_SERVERS,
    FIXTURE,
    PHILLY_JOBS,
    PUBLISHED_MEAN_WAIT,
    PUBLISHED_MEDIAN_WAIT,
    RACK_SWITCH_RADIX,
    TWO_GPU_SERVERS,
    philly_spec,
    strict_spec,
    subset_share,
    tenant_map,
)

needs_traces = pytest.mark.skipif(not PHILLY_JOBS.exists(), reason=f"no public traces at {PHILLY_JOBS.parent}")

# The stated error (docs/simulate.md, "Philly on Philly"): seeds 0-4 replay a mean of 21-23 % of
# the published one and a median of 0 s against 189 s.
MEAN_WITHIN = (0.15, 0.40)
# Strict VC quotas, the same replay: seeds 0-4 give 144-151 % of the published mean.
STRICT_MEAN_WITHIN = (1.2, 2.0)


@pytest.fixture(scope="module")
def trace() -> Trace:
    return load_trace(PHILLY_JOBS)


@needs_traces
def test_the_philly_fixture_is_philly(trace: Trace) -> None:
    """tests/fixtures/philly.yaml is the generator's spec: 2,490 GPUs in 2- and 8-GPU servers, a
    tenant per virtual cluster that holds at least its widest job."""
    assert FIXTURE.read_text() == philly_spec(trace)
    compiled = compile_sources(Sources(FIXTURE, None))
    assert compiled.ok and compiled.model is not None and compiled.plan is not None
    servers = {p.name: (p.gpus_per_node, p.nodes.max) for p in compiled.plan.pools}
    assert servers == {"two": (2, TWO_GPU_SERVERS), "eight": (8, EIGHT_GPU_SERVERS)}
    assert sum(g * n for g, n in servers.values()) == 2490
    widest: dict[str, int] = {}
    for job in trace.jobs:
        widest[job.tenant] = max(widest.get(job.tenant, 0), job.gpus)
    assert {t.name: t.gpus >= widest[t.name[3:]] for t in compiled.model.tenants} == {f"vc-{vc}": True for vc in widest}


def _waits(text: str, trace: Trace) -> tuple[list[float], float]:
    """Seed 0's queueing delays, sorted, of the headline replay (node packing, Philly's outcomes)
    on the spec `text`, and the GPU-seconds waited on fragmentation; every job runs (each VC holds
    its widest job)."""
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "philly.yaml"
        spec.write_text(text)
        compiled = compile_sources(Sources(spec, None))
    assert compiled.ok and compiled.model is not None and compiled.plan is not None, compiled.diagnostics
    options = Options(tenant_map=tenant_map(trace), spot=False, node_packing=True, outcomes=PHILLY_OUTCOMES)
    done = replay(compiled.model, compiled.plan, trace, options)
    assert done.stranded == 0 and not done.unplaceable
    engine = done.engine
    waits = sorted(engine.started[i] - j.submit for i, j in enumerate(engine.jobs))
    return waits, engine.node_waits.gpu_s[FRAGMENTATION]


@needs_traces
def test_philly_on_its_share_of_philly_against_the_published_delay(trace: Trace) -> None:
    share = subset_share(trace)
    assert share == pytest.approx(0.511, abs=0.001)
    waits, fragmentation = _waits(philly_spec(trace, share), trace)
    mean = sum(waits) / len(waits)
    low, high = MEAN_WITHIN
    assert low * PUBLISHED_MEAN_WAIT <= mean <= high * PUBLISHED_MEAN_WAIT
    # Not reproduced: fewer than half of the replayed jobs wait at all, where Philly's median job
    # waited 189 s (docs/simulate.md says what the replay leaves out).
    assert percentile(waits, 50) < PUBLISHED_MEDIAN_WAIT
    assert fragmentation > 0  # multi-GPU jobs did wait for whole servers


@needs_traces
def test_the_published_mean_lies_between_lending_and_strict_vc_quotas(trace: Trace) -> None:
    """Whether Philly's virtual clusters lent each other idle GPUs is not published. With every VC
    a hard tenant (none lends) the same replay waits longer than Philly did, as with lending it
    waits shorter; the median stays 0 s either way (docs/simulate.md, "Lending between VCs")."""
    share = subset_share(trace)
    waits, _ = _waits(strict_spec(trace, share), trace)
    mean = sum(waits) / len(waits)
    low, high = STRICT_MEAN_WITHIN
    assert low * PUBLISHED_MEAN_WAIT <= mean <= high * PUBLISHED_MEAN_WAIT
    assert percentile(waits, 50) < PUBLISHED_MEDIAN_WAIT
    assert sum(1 for w in waits if w > 0) < len(waits) / 2


@needs_traces
def test_the_what_if_racks_are_the_fabric_leaves(trace: Trace) -> None:
    """docs/simulate.md's what-if racks: a 36-port leaf at 1:1 with one port a server holds 18
    servers of either pool, and both pools' flavors are placed by the Topology."""
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "philly-racks.yaml"
        spec.write_text(philly_spec(trace, 1.0, RACK_SWITCH_RADIX))
        compiled = compile_sources(Sources(spec, None))
    assert compiled.ok and compiled.model is not None and compiled.plan is not None
    domains = {f.key: topology_domains(compiled.model, compiled.plan.fabric, f) for f in compiled.plan.flavors}
    assert domains == {"two": (18,), "eight": (18,)}
