"""`gpuplat simulate` honours Capacity Block windows: a capacity-block pool's reserved nodes exist
only while a booked block is open, are terminated 30 minutes before its end, and every block is
billed in full; a bad schedule is refused with the line of the row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuplat.catalog.capacity_blocks import BLOCK_TERMINATION_LEAD_SECONDS
from gpuplat.catalog.service_prices import CAPACITY_BLOCK_HOURLY_USD
from gpuplat.compile import Sources, compile_sources
from gpuplat.model import Platform
from gpuplat.plan import Plan
from gpuplat.simulate import Options, Trace, TraceError, simulate
from gpuplat.simulate.blocks import Block, load_blocks
from gpuplat.simulate.engine import INTERRUPT
from gpuplat.simulate.run import replay
from tests.support_simulate import lab_trace

DAY = 86400.0
BOOT = Options.boot_seconds
RATE = CAPACITY_BLOCK_HOURLY_USD["p5.48xlarge"].usd
SPEC = """apiVersion: gpuplat/v1
kind: Platform
metadata: {name: blocks}
target: {provider: aws, region: us-east-1, zones: [us-east-1a, us-east-1b], kubernetesVersion: "1.35"}
gpuNodePools:
  - name: train
    instanceType: p5.48xlarge
    nodes: {min: 0, max: 8}
    sharing: {mode: exclusive}
    markets: [reserved, on-demand]
    reservation: {kind: capacity-block, ids: [cr-0123456789abcdef0]}
procurement: {spot: 0, reserved: 50, onDemand: 50}
tenants:
  - {name: lab, gpus: 64}
"""


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("spec") / "blocks.yaml"
    path.write_text(SPEC)
    return path


@pytest.fixture(scope="module")
def platform(spec: Path) -> tuple[Platform, Plan]:
    compiled = compile_sources(Sources(spec, None))
    assert compiled.ok and compiled.model is not None and compiled.plan is not None
    # Kueue tries the reserved flavor first; each holds 4 nodes of 8 GPUs.
    assert [f.key for f in compiled.plan.flavors] == ["train-reserved", "train-on-demand"]
    return compiled.model, compiled.plan


def _delays(model: Platform, plan: Plan, trace: Trace, options: Options) -> list[float]:
    engine = replay(model, plan, trace, options).engine
    return [start - job.submit for start, job in zip(engine.started, engine.jobs, strict=True)]


@pytest.mark.parametrize("autoscaling", [True, False], ids=["autoscaled", "static"])
def test_reserved_nodes_wait_for_the_window_and_the_block_is_billed_in_full(
    tmp_path: Path, platform: tuple[Platform, Plan], autoscaling: bool
) -> None:
    model, plan = platform
    # Five one-node jobs at 0: Kueue admits four onto the reserved flavor (its quota), whose
    # block opens on day 1, and the fifth on-demand. A small job on day 9, after the block:
    # Kueue admits on quota, which the reserved flavor keeps between windows, so it lands there
    # and never gets a node (waitForPodsReady requeues it onto the same flavor): stranded.
    trace = lab_trace(tmp_path, [(0, 3600, 8)] * 5 + [(9 * DAY, 600, 1)])
    options = Options(capacity_blocks=(Block("train", DAY, 8 * DAY, 4),), autoscaling=autoscaling, audit=True)
    delays = _delays(model, plan, trace, options)
    on_demand = BOOT if autoscaling else 0.0  # the static fleet's on-demand nodes stand from the start
    assert delays[:5] == [DAY + BOOT] * 4 + [on_demand]
    result = simulate(model, plan, trace, options)
    (train,) = result.pools
    assert train.cost_usd["reserved"] == pytest.approx(4 * 7 * 24 * RATE, rel=1e-9)  # used or not
    assert result.windows == {"train": 1} and result.stranded == 1 and result.block_stops == 0
    assert delays[5] < 0  # never started


def test_without_a_schedule_the_block_pool_is_there_around_the_clock(
    tmp_path: Path, platform: tuple[Platform, Plan]
) -> None:
    model, plan = platform
    trace = lab_trace(tmp_path, [(0, 3600, 8)] * 5 + [(9 * DAY, 600, 1)])
    delays = _delays(model, plan, trace, Options())
    assert delays[:5] == [BOOT] * 5
    result = simulate(model, plan, trace, Options())
    assert result.pools[0].cost_usd["reserved"] == pytest.approx(4 * RATE * result.hours, rel=1e-9)
    assert result.windows == {}


@pytest.mark.parametrize("node_packing", [False, True], ids=["units", "node-by-node"])
def test_a_block_end_stops_its_pods_and_the_next_window_finishes_them(
    tmp_path: Path, platform: tuple[Platform, Plan], node_packing: bool
) -> None:
    model, plan = platform
    # Four one-node jobs of 3 days from day 1 (block A open): A ends on day 3, its instances go
    # 30 minutes before; the jobs keep their admission and wait for block B on day 5. Node by
    # node, the terminated nodes take exactly the jobs on them, and B's nodes take their slots.
    trace = lab_trace(tmp_path, [(DAY, 3 * DAY, 8)] * 4)
    a, b = Block("train", DAY - BOOT, 3 * DAY, 4), Block("train", 5 * DAY, 12 * DAY, 4)
    only_a = simulate(model, plan, trace, Options(capacity_blocks=(a,), audit=True, node_packing=node_packing))
    assert only_a.block_stops == 4 and only_a.stranded == 4  # no window after A: they never finish
    assert only_a.hours * 3600 == a.usable_until  # and the replay ends there
    both = simulate(model, plan, trace, Options(capacity_blocks=(a, b), audit=True, node_packing=node_packing))
    assert both.block_stops == 4 and both.stranded == 0
    ran = a.usable_until - DAY  # from day 1 until A's instances were terminated
    lost = ran % Options.checkpoint_seconds
    # Each job reruns what it lost since its last checkpoint: 3 days of work plus that, on B's nodes.
    assert both.hours * 3600 == pytest.approx(5 * DAY + BOOT + 3 * DAY - ran + lost)
    assert both.lost_gpu_h == pytest.approx(4 * 8 * lost / 3600)


def test_a_replay_with_stranded_jobs_ends_when_the_last_job_that_could_run_has(tmp_path: Path) -> None:
    """A spot node's notice is drawn months ahead and stays in the heap after the node is gone:
    the replay ends when nothing can start a job any more, not when the last stale notice falls."""
    spec = tmp_path / "spot.yaml"
    text = SPEC.replace("markets: [reserved, on-demand]", "markets: [reserved, spot, on-demand]")
    spec.write_text(text.replace("{spot: 0, reserved: 50, onDemand: 50}", "{spot: 25, reserved: 50, onDemand: 25}"))
    compiled = compile_sources(Sources(spec, None))
    assert compiled.model is not None and compiled.plan is not None
    assert [f.market.value for f in compiled.plan.flavors if f.market] == ["reserved", "spot", "on-demand"]
    # Four jobs wait for the block on the reserved flavor, the fifth runs on a spot node; the
    # day-9 job lands on the reserved flavor after the window and is stranded.
    trace = lab_trace(tmp_path, [(0, 3600, 8)] * 5 + [(9 * DAY, 600, 1)])
    for autoscaling in (True, False):
        options = Options(capacity_blocks=(Block("train", DAY, 8 * DAY, 4),), autoscaling=autoscaling, seed=1)
        done = replay(compiled.model, compiled.plan, trace, options)
        assert (done.stranded, done.horizon) == (1, 9 * DAY), autoscaling
        assert any(e[0] > 9 * DAY and e[2] == INTERRUPT for e in done.engine.heap)  # a notice was still ahead


def test_the_floor_stands_on_a_block_only_while_it_is_open(tmp_path: Path) -> None:
    """Placeholders go on reserved nodes first, on-demand otherwise: a closed block holds none."""
    spec = tmp_path / "floor.yaml"
    spec.write_text(SPEC.replace("nodes: {min: 0, max: 8}", "nodes: {min: 2, max: 8}"))
    compiled = compile_sources(Sources(spec, None))
    assert compiled.model is not None and compiled.plan is not None
    trace = lab_trace(tmp_path, [(0, 600, 1), (4 * DAY, 600, 1)])
    block = Block("train", 2 * DAY, 3 * DAY, 4)
    engine = replay(compiled.model, compiled.plan, trace, Options(capacity_blocks=(block,), audit=True)).engine
    reserved, on_demand = engine.flavors
    # The reserved flavor runs nodes only inside the window: at most its 4 instances for one day,
    # at least the floor's 2 from the window's opening (and a boot) until EC2 terminates them.
    assert 2 * (block.usable_until - block.start - BOOT) <= reserved.node_s <= 4 * DAY
    # Before the window the floor's 2 nodes stood on-demand.
    assert on_demand.node_s >= 2 * 2 * DAY


def test_a_bad_schedule_is_refused_at_its_lines(tmp_path: Path, platform: tuple[Platform, Plan]) -> None:
    model, plan = platform
    path = tmp_path / "blocks.csv"
    path.write_text(
        "pool,start,days,instances,id\n"
        "train,2017-10-02 11:30,14,8,cr-0123456789abcdef0\n"
        "infer,2017-10-02 11:30,14,8,\n"
        "train,2017-10-02 11:30,15,8,\n"
        "train,2017-10-02 11:30,7,3,\n"
        "train,noon,7,4,\n"
    )
    with pytest.raises(TraceError) as err:
        load_blocks(path, model, plan, 0.0)
    assert [line for line, _ in err.value.problems] == [3, 4, 5, 6]
    messages = [m for _, m in err.value.problems]
    assert "capacity-block pools: train" in messages[0] and "15 days" in messages[1] and "3 instances" in messages[2]
    good = tmp_path / "good.csv"
    good.write_text("pool,start,days,instances\ntrain,2017-10-02 11:30,14,8\n")
    (block,) = load_blocks(good, model, plan, origin=1506902400.0)  # 2017-10-02 00:00 UTC
    assert (block.start, block.end - block.start, block.usable_until - block.start) == (
        41400.0,
        14 * DAY,
        14 * DAY - BLOCK_TERMINATION_LEAD_SECONDS,
    )


def test_cli_replays_the_windows_and_refuses_a_pool_without_blocks(
    tmp_path: Path, spec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gpuplat.cli import main

    jobs = tmp_path / "jobs.csv"
    jobs.write_text("submit,duration,gpus,tenant\n0,3600,8,lab\n" + f"{9 * DAY},600,1,lab\n")
    blocks = tmp_path / "blocks.csv"
    blocks.write_text(f"pool,start,days,instances\ntrain,{DAY},7,4\n")
    args = ["simulate", "--spec", str(spec), "--trace", str(jobs), "--capacity-blocks", str(blocks)]
    assert main([*args, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["assumptions"]["capacityBlockWindows"] == {"train": 1}
    assert doc["waiting"][0]["p95Seconds"] == DAY + BOOT
    blocks.write_text(f"pool,start,days,instances\nbatch,{DAY},7,4\n")
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{blocks}:2:1: error GP032 $: pool 'batch'") and "Traceback" not in err


def test_a_stack_can_name_its_booked_windows(tmp_path: Path) -> None:
    from gpuplat.commands.simulate import BLOCKS_CONFIG_KEY, configured_trace

    (tmp_path / "stacks").mkdir()
    settings = tmp_path / "stacks" / "Pulumi.prod.yaml"
    settings.write_text("config:\n  gpuplat:simulateTrace: jobs.csv\n")
    assert configured_trace("prod", tmp_path, BLOCKS_CONFIG_KEY) is None
    settings.write_text(f"config:\n  gpuplat:simulateTrace: jobs.csv\n  {BLOCKS_CONFIG_KEY}: blocks.csv\n")
    assert configured_trace("prod", tmp_path, BLOCKS_CONFIG_KEY) == str(tmp_path / "blocks.csv")
    assert configured_trace("prod", tmp_path) == str(tmp_path / "jobs.csv")
