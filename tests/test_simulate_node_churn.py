"""Node packing on a fleet whose nodes come and go: Karpenter launches a node for a job that no
Ready node holds even when the flavor's free GPUs would, consolidation removes only nodes that run
no pod, and a node that goes takes its pods (and only its pods) with it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplat.compile import load_for_stack
from gpuplat.simulate import Options, load_trace
from gpuplat.simulate.gpus import GpuMap
from gpuplat.simulate.nodes import ABSENT, FRAGMENTATION, TOPOLOGY, NodeMap
from gpuplat.simulate.run import replay
from tests.support_simulate import compiled_spec, lab_trace

TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"
BOOT = Options().boot_seconds


def _scaled(
    tmp: Path,
    pools: str = "{name: train, instanceType: p5.48xlarge, nodes: {min: 0, max: 4}}",
    procurement: str = "{spot: 0, reserved: 0, onDemand: 100}",
    gpus: int = 32,
) -> Path:
    spec = tmp / "aws.yaml"
    spec.write_text(
        "apiVersion: gpuplat/v1\nkind: Platform\nmetadata: {name: scaled}\n"
        'target: {provider: aws, region: us-east-1, zones: [us-east-1a, us-east-1b], kubernetesVersion: "1.35"}\n'
        f"gpuNodePools:\n  - {pools}\n"
        f"procurement: {procurement}\ntenants:\n  - {{name: lab, gpus: {gpus}}}\n"
    )
    return spec


def test_a_launched_node_takes_the_first_empty_slot_and_only_an_empty_node_leaves() -> None:
    nodes = NodeMap(2, 8, domains=(2,), slots=4)
    assert nodes.free == [8, 8, ABSENT, ABSENT] and nodes.total == 16
    nodes.take([(0, 8), (1, 3)])
    assert nodes.fit(8) is None  # no Ready node is empty
    assert nodes.add() == 2
    assert nodes.fit(8) == [(2, 8)]
    with pytest.raises(AssertionError):
        nodes.remove(1)  # it runs a pod
    nodes.take([(0, 8)], -1)
    assert nodes.empty() == [2, 0]  # the last slot first
    nodes.remove(0)
    assert nodes.add() == 0  # a node leaving frees its slot (its port) for the next
    # A two-node job runs within one domain of two slots.
    nodes.remove(0)
    assert nodes.fit(16) is None and nodes.waits_on(16) == FRAGMENTATION  # one empty node only
    nodes.add()
    assert nodes.fit(16) is None and nodes.waits_on(16) == TOPOLOGY  # two empty nodes, in two domains
    nodes.take([(1, 3)], -1)
    assert nodes.fit(16) == [(0, 8), (1, 8)]

def test_karpenter_launches_a_node_for_a_job_the_scattered_free_gpus_would_hold(tmp_path: Path) -> None:
    """Two 5-GPU jobs leave 3 GPUs free on each of two nodes: a 6-GPU job fits in the flavor's
    free units (and starts at once when units are packed perfectly) but on no node, so it waits
    for a node Karpenter launches for it, and that wait is fragmentation."""
    model, plan = compiled_spec(_scaled(tmp_path))
    trace = lab_trace(tmp_path, [(0, 10_000, 5), (0, 10_000, 5), (1_000, 100, 6)])
    perfect = replay(model, plan, trace, Options(spot=False, audit=True)).engine
    packed = replay(model, plan, trace, Options(spot=False, audit=True, node_packing=True)).engine
    assert perfect.started == [BOOT, BOOT, 1_000]
    assert packed.started == [BOOT, BOOT, 1_000 + BOOT]
    assert packed.node_waits.gpu_s[FRAGMENTATION] == pytest.approx(BOOT * 6)
    train = next(f for f in packed.flavors if f.pool == "train")
    assert train.node_s > next(f for f in perfect.flavors if f.pool == "train").node_s


def test_consolidation_keeps_every_node_a_pod_runs_on(tmp_path: Path) -> None:
    """Two 7-GPU jobs fill two nodes but a GPU each; two 1-GPU jobs then take those, one a node;
    once the 7-GPU jobs end, two GPUs are allocated. Packed perfectly they would fill one node and
    Karpenter would remove the other; on nodes, each runs a pod and both stay."""
    model, plan = compiled_spec(_scaled(tmp_path))
    long = 50_000
    trace = lab_trace(tmp_path, [(0, 1_000, 7), (0, 1_000, 7), (BOOT + 10, long, 1), (BOOT + 10, long, 1)])
    perfect = replay(model, plan, trace, Options(spot=False, audit=True)).engine
    packed = replay(model, plan, trace, Options(spot=False, audit=True, node_packing=True)).engine
    assert perfect.started == packed.started == [BOOT, BOOT, BOOT + 10, BOOT + 10]
    node_h = {
        name: next(f for f in e.flavors if f.pool == "train").node_s / 3600
        for name, e in (("perfect", perfect), ("packed", packed))
    }
    # The second node runs the second small job to its end: about `long` seconds more of a node.
    assert node_h["packed"] - node_h["perfect"] == pytest.approx(long / 3600, rel=0.1)


def test_a_fractional_pool_scales_by_its_shares_and_keeps_each_node_a_share_runs_on(tmp_path: Path) -> None:
    """Fractional g6e nodes (4 GPUs, a GPU in 10 shares), the seed's spread policy: eight 0.7-GPU
    jobs take two nodes, then two 0.1-GPU jobs go one to each node (the least used). Once the
    large ones end, the two small ones hold a node each: both nodes stay until they end, where
    perfect packing would keep one."""
    spec = _scaled(
        tmp_path,
        "{name: share, instanceType: g6e.12xlarge, nodes: {min: 0, max: 4}, sharing: {mode: fractional, replicas: 10}}",
        gpus=16,
    )
    model, plan = compiled_spec(spec)
    path = tmp_path / "shares.csv"
    long = 50_000
    rows = [(0, 1_000, 0.7)] * 8 + [(BOOT + 10, long, 0.1)] * 2
    path.write_text("submit,duration,gpus,fraction,tenant\n" + "".join(f"{s},{d},1,{f},lab\n" for s, d, f in rows))
    trace = load_trace(path)
    perfect = replay(model, plan, trace, Options(spot=False, audit=True)).engine
    packed = replay(model, plan, trace, Options(spot=False, audit=True, node_packing=True)).engine
    assert packed.started == perfect.started == [BOOT] * 8 + [BOOT + 10] * 2
    node_h = [next(f for f in e.flavors if f.pool == "share").node_s / 3600 for e in (perfect, packed)]
    assert node_h[1] - node_h[0] == pytest.approx(long / 3600, rel=0.1)


def test_an_interrupted_spot_node_takes_its_pods_and_karpenter_replaces_it(tmp_path: Path) -> None:
    """Four one-node jobs of 60 days on spot p5 nodes: each interruption stops the one job on that
    node, which starts again on the node Karpenter launches, and all four end."""
    spec = _scaled(
        tmp_path,
        "{name: train, instanceType: p5.48xlarge, nodes: {min: 0, max: 4}, markets: [spot]}",
        "{spot: 100, reserved: 0, onDemand: 0}",
    )
    model, plan = compiled_spec(spec)
    trace = lab_trace(tmp_path, [(0, 60 * 86_400, 8)] * 4)
    # A pool without a floor going quiet and waking again once ended the replay in an AssertionError.
    assert replay(model, plan, trace, Options(audit=True)).stranded == 0
    done = replay(model, plan, trace, Options(audit=True, node_packing=True))
    engine = done.engine
    assert done.stranded == 0 and engine.interrupted > 0
    assert sum(runs - 1 for runs in engine.runs) == engine.interrupted  # one job stopped per interruption


@pytest.mark.parametrize("autoscaling", [True, False], ids=["autoscaled", "static"])
def test_prod_replays_node_by_node(tmp_path: Path, autoscaling: bool) -> None:
    """The shipped prod stack (spot pools among its pools; autoscaled, or static at `nodes.max`
    with every interrupted node replaced) on 3,000 Philly jobs: every change keeps the invariants
    (with `audit`, a node map of exactly the Ready nodes among them), every job ends, and scattered
    free GPUs make some jobs wait."""
    model, plan = load_for_stack("prod")
    rows = (TRACES / "philly-jobs.csv").read_text().splitlines()[:3_001]
    path = tmp_path / "philly-3000.csv"
    path.write_text("\n".join(rows) + "\n")
    options = Options(audit=True, node_packing=True, autoscaling=autoscaling)
    done = replay(model, plan, load_trace(path), options)
    assert done.stranded == 0
    assert done.engine.node_waits.gpu_s[FRAGMENTATION] > 0


def _check(nodes: NodeMap, present: dict[int, int], per_node: int) -> None:
    """The map's bookkeeping against a plain model: node -> free units of the nodes present."""
    assert nodes.present_count() == len(present)
    assert nodes.total == sum(present.values())
    assert nodes.empty_count() == sum(1 for free in present.values() if free == per_node)
    for node, free in enumerate(nodes.free):
        assert free == present.get(node, ABSENT)
    for size, maps in nodes.levels:
        for index, domain in enumerate(maps):
            assert domain.total == sum(f for n, f in present.items() if n // size == index)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "remove", "take", "give"]), st.integers(0, 40)), max_size=60))
def test_the_map_keeps_its_books_through_any_launches_removals_and_pods(steps: list[tuple[str, int]]) -> None:
    """Any sequence of launches, removals of empty nodes, and pods placed where `fit` says and
    given back keeps the map equal to a plain model of it, in every topology domain, and `fit`
    only places pods on present nodes with the room for them."""
    per_node, slots = 8, 6
    nodes = NodeMap(2, per_node, domains=(2, 4), slots=slots)
    present = {0: per_node, 1: per_node}
    running: list[list[tuple[int, int]]] = []
    for action, n in steps:
        if action == "add" and len(present) < slots:
            node = nodes.add()
            assert node not in present and node == min(set(range(slots)) - set(present))
            present[node] = per_node
        elif action == "remove" and nodes.empty():
            node = nodes.empty()[n % len(nodes.empty())]
            nodes.remove(node)
            del present[node]
        elif action == "take" and n:
            pods = nodes.fit(n)
            if pods is not None:
                assert sum(u for _, u in pods) == n
                assert all(node in present and present[node] >= u for node, u in pods)
                nodes.take(pods)
                for node, u in pods:
                    present[node] -= u
                running.append(pods)
        elif action == "give" and running:
            pods = running.pop(n % len(running))
            nodes.take(pods, -1)
            for node, u in pods:
                present[node] += u
        _check(nodes, present, per_node)


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(["spread", "binpack"]),
    st.lists(st.tuples(st.sampled_from(["add", "remove", "take", "give"]), st.integers(0, 40)), max_size=60),
)
def test_the_gpu_map_keeps_its_books_through_any_launches_removals_and_shares(
    policy: str, steps: list[tuple[str, int]]
) -> None:
    """The fractional pool's map (2 GPUs a node, 4 shares a GPU) against a plain model: a share goes
    only on a present node's GPU with the room for it, and the counts the replay reads (present and
    empty nodes, GPUs with room, GPUs holding a share) stay right through launches and removals."""
    gpus, per_gpu, slots = 2, 4, 4
    nodes = GpuMap(1, gpus, per_gpu, policy, slots)
    present = {0}
    free = {g: per_gpu for g in range(slots * gpus)}
    running: list[list[tuple[int, int]]] = []
    for action, n in steps:
        if action == "add" and len(present) < slots:
            node = nodes.add()
            assert node == min(set(range(slots)) - present)
            present.add(node)
        elif action == "remove" and nodes.empty():
            node = nodes.empty()[n % len(nodes.empty())]
            nodes.remove(node)
            present.remove(node)
        elif action == "take" and n % per_gpu:
            pods = nodes.fit(n % per_gpu)
            fits = any(free[g] >= n % per_gpu for g in free if g // gpus in present)
            assert (pods is not None) == fits
            if pods is not None:
                ((gpu, units),) = pods
                assert nodes.node_of(gpu) in present and free[gpu] >= units
                nodes.take(pods)
                free[gpu] -= units
                running.append(pods)
        elif action == "give" and running:
            pods = running.pop(n % len(running))
            nodes.take(pods, -1)
            free[pods[0][0]] += pods[0][1]
        on = [g for g in free if g // gpus in present]
        assert nodes.present_count() == len(present)
        idle = [node for node in present if all(free[node * gpus + i] == per_gpu for i in range(gpus))]
        assert nodes.empty_count() == len(idle)
        assert nodes.occupied == sum(1 for g in on if free[g] < per_gpu)
        assert [sum(1 for g in on if free[g] == k) for k in range(per_gpu + 1)] == nodes.with_free
