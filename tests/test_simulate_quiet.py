"""Skipping quiet stretches of the replay (idle pools' polls, and the poll itself while every pool
is idle) is for speed only: every decision, number and timeline sample is the full poll's."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuplat.compile import load_for_stack
from gpuplat.model import Platform
from gpuplat.plan import Plan
from gpuplat.scaling import POLLING_SECONDS
from gpuplat.simulate import Options, Trace, load_trace, simulate
from gpuplat.simulate.result import Result
from gpuplat.simulate.run import replay

TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"
PHILLY = TRACES / "philly-jobs.csv"
DAY = 86400
TENANTS = {"a": "research", "b": "product"}


@pytest.fixture(scope="module")
def prod() -> tuple[Platform, Plan]:
    return load_for_stack("prod")


def _write(path: Path, rows: list[tuple[int, int, int, str]]) -> Trace:
    path.write_text("submit,duration,gpus,tenant\n" + "".join(f"{s},{d},{g},{t}\n" for s, d, g, t in rows))
    return load_trace(path)


def _same_with_and_without_skip(model: Platform, plan: Plan, trace: Trace, options: Options) -> None:
    fast, slow = (replay(model, plan, trace, dataclasses.replace(options, skip_quiet=q)) for q in (True, False))
    assert fast.engine.polls <= slow.engine.polls
    assert fast.engine.started == slow.engine.started  # every job starts at the same second
    assert fast.horizon == slow.horizon and fast.stranded == slow.stranded
    assert fast.timeline == slow.timeline
    quick, full = (simulate(model, plan, trace, dataclasses.replace(options, skip_quiet=q)) for q in (True, False))
    # Waits, cost by pool and market, provisioned and allocated GPU-hours, preemptions, the timeline:
    # equal, exactly. Busy GPU-hours integrate a float rate: over a skipped stretch in one step, not in
    # 30-s steps, so their last bits may differ (and the wastes that read them, within 1e-9).
    assert _busy_aside(quick) == dataclasses.replace(_busy_aside(full), options=quick.options)
    assert [p.busy_gpu_h for p in quick.pools] == pytest.approx([p.busy_gpu_h for p in full.pools], rel=1e-9)
    assert quick.waste == pytest.approx(full.waste, rel=1e-9)
    sensitivity = (quick.busy_share.waste_at_p25, quick.busy_share.waste_at_p75)
    assert sensitivity == pytest.approx((full.busy_share.waste_at_p25, full.busy_share.waste_at_p75), rel=1e-9)


def _busy_aside(result: Result) -> Result:
    pools = tuple(dataclasses.replace(p, busy_gpu_h=0.0) for p in result.pools)
    share = dataclasses.replace(result.busy_share, waste_at_p25=0.0, waste_at_p75=0.0)
    return dataclasses.replace(result, pools=pools, busy_share=share)


# Jobs of the two tests' traces, quiet stretches between them: an idle fleet at its floor, a burst
# that scales it up, a gap longer than every window, spot work and a second tenant.
TRACES_WITH_GAPS = [
    [(0, 600, 1, "a"), (10, 600, 64, "a"), (20, 60, 2, "b")],
    [(0, 3600, 8, "a"), (60, 600, 1, "a"), (2 * DAY, 7200, 32, "b"), (2 * DAY + 5, 600, 2, "a")],
    [(0, 600, 1, "a"), (3 * DAY + 7, 600, 1, "a")],
    [(3600 * h, 1800, 8 * (h % 4 + 1), "ab"[h % 2]) for h in range(0, 72, 5)],
]


@pytest.mark.parametrize("rows", TRACES_WITH_GAPS)
def test_traces_with_quiet_stretches_replay_the_same(
    tmp_path: Path, prod: tuple[Platform, Plan], rows: list[tuple[int, int, int, str]]
) -> None:
    _same_with_and_without_skip(*prod, _write(tmp_path / "t.csv", rows), Options(tenant_map=TENANTS))


@pytest.mark.skipif(not PHILLY.exists(), reason=f"no public traces at {TRACES} (see docs/simulate.md)")
def test_a_shuffled_slice_of_philly_replays_the_same(tmp_path: Path, prod: tuple[Platform, Plan]) -> None:
    """Philly's jobs 0-400 with their order shuffled and their submissions spread over a week."""
    jobs = list(load_trace(PHILLY).jobs[:400])
    rng = random.Random(7)
    rng.shuffle(jobs)
    rows = [(rng.randrange(7 * DAY), int(j.duration), j.gpus, j.tenant) for j in jobs]
    trace = _write(tmp_path / "philly.csv", rows)
    _same_with_and_without_skip(*prod, trace, Options(tenant_map={t: "research" for t in {r[3] for r in rows}}))


_row = st.tuples(
    st.integers(0, 3 * DAY), st.integers(1, DAY), st.sampled_from([1, 2, 4, 8, 16, 64]), st.sampled_from("ab")
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(_row, min_size=1, max_size=10), seed=st.integers(0, 3), autoscaled=st.booleans())
def test_generated_traces_replay_the_same(
    tmp_path: Path, prod: tuple[Platform, Plan], rows: list[tuple[int, int, int, str]], seed: int, autoscaled: bool
) -> None:
    trace = _write(tmp_path / "gen.csv", rows)
    _same_with_and_without_skip(*prod, trace, Options(seed=seed, autoscaling=autoscaled, tenant_map=TENANTS))


def test_two_jobs_a_year_apart_poll_only_around_their_events(tmp_path: Path, prod: tuple[Platform, Plan]) -> None:
    """The fuzz run's hang: polled every 30 s this was over a million polls (a minute of CPU)."""
    year = int(365.7 * DAY)
    trace = _write(tmp_path / "year.csv", [(0, 600, 1, "a"), (year, 600, 1, "a")])
    done = replay(*prod, trace, Options(tenant_map=TENANTS))
    assert done.stranded == 0 and done.horizon == year + 600
    assert done.engine.polls < 1000 < year / POLLING_SECONDS
