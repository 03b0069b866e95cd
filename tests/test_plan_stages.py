"""Sharing, storage, cost, reservations and build_plan, pinned on hand-checked numbers."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from gpuplat.catalog.fsx import capacity_gib as fsx_capacity_gib
from gpuplat.catalog.fsx import largest_size_within, standard_file_system
from gpuplat.diagnostics import Level
from gpuplat.model import Market, Platform, build_model
from gpuplat.plan import build_plan
from gpuplat.plan.cost import plan_cost
from gpuplat.plan.procurement import even_spread
from gpuplat.plan.sharing import sharing_units
from gpuplat.plan.storage import plan_storage
from gpuplat.plan.types import MarketShare

ROOT = Path(__file__).resolve().parent.parent
R, S, OD = Market.RESERVED, Market.SPOT, Market.ON_DEMAND
Doc = dict[str, Any]


def _load(path: Path) -> Doc:
    data = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data  # pyright: ignore[reportUnknownVariableType]


BASE = _load(ROOT / "platform" / "platform.yaml")
K8S = _load(ROOT / "tests" / "fixtures" / "kubernetes_example.yaml")


def model(edit: Callable[[Doc], None] | None = None, base: Doc = BASE) -> Platform:
    data = copy.deepcopy(base)
    if edit is not None:
        edit(data)
    return build_model(data)


# ---- sharing ---------------------------------------------------------------------------------


def test_sharing_units_of_the_example() -> None:
    pools = {p.name: sharing_units(p) for p in model().pools}
    # train: exclusive, 8 x H100 -> 8 x nvidia.com/gpu, no overhead.
    assert (pools["train"].resource, pools["train"].per_node, pools["train"].gpu_equivalents_per_node) == (
        "nvidia.com/gpu",
        8,
        8.0,
    )
    # infer: all-1g.10gb = 7 per H100 -> 56 per node; 8 x (1 - 0.015) = 7.88 GPU-equivalents.
    infer = pools["infer"]
    assert (infer.resource, infer.per_gpu, infer.per_node) == ("nvidia.com/mig-1g.10gb", 7, 56)
    assert infer.mig_devices == {"1g.10gb": 7}
    assert infer.gpu_equivalents_per_node == pytest.approx(7.88)
    # dev: time-slicing x4 on 4 x L40S -> 16; 4 x (1 - 0.175) = 3.3.
    assert (pools["dev"].per_node, pools["dev"].gpu_equivalents_per_node) == (16, pytest.approx(3.3))
    # notebooks: MPS x8 on 4 x L4 -> 32; 4 x (1 - 0.065) = 3.74.
    assert (pools["notebooks"].per_node, pools["notebooks"].gpu_equivalents_per_node) == (32, pytest.approx(3.74))


def test_mixed_mig_layout_lists_every_resource() -> None:
    # {3g.40gb: 1, 2g.20gb: 1, 1g.10gb: 2} per A100-80GB, 8 GPUs: 1g x16, 3g x8, 2g x8 = 32 units;
    # the major resource is 1g (most units); 3g before 2g on the tie (bigger profile).
    infer = sharing_units(model(base=K8S).pools_by_name["infer"])
    assert list(infer.resources.items()) == [
        ("nvidia.com/mig-1g.10gb", 16),
        ("nvidia.com/mig-3g.40gb", 8),
        ("nvidia.com/mig-2g.20gb", 8),
    ]
    assert (infer.resource, infer.per_gpu, infer.per_node) == ("nvidia.com/mig-1g.10gb", 4, 32)


def test_mig_gpu_equivalents_count_only_the_compute_slices_in_use() -> None:
    def profile(name: str) -> Callable[[Doc], None]:
        def edit(d: Doc) -> None:
            d["gpuNodePools"][1]["sharing"] = {"mode": "mig", "profile": name}

        return edit

    # H100 x8, overhead 1.5 %: all-4g.40gb holds 4 of 7 slices -> 8 x 4/7 x 0.985 = 4.50;
    # all-3g.40gb two 3g = 6/7 -> 6.75; all-1g.10gb.me a single 1g -> 8 x 1/7 x 0.985 = 1.13.
    for name, expected in (("all-4g.40gb", 4.503), ("all-3g.40gb", 6.754), ("all-1g.10gb.me", 1.126)):
        infer = sharing_units(model(profile(name)).pools_by_name["infer"])
        assert infer.gpu_equivalents_per_node == pytest.approx(expected, abs=1e-3), name


def test_fractional_and_overhead_override() -> None:
    lab = sharing_units(model(base=K8S).pools_by_name["lab"])
    # HAMi: 10 tasks per L40S x 4 = 40 vGPUs, advertised as nvidia.com/gpu.fractional; 4 x (1 - 0.10) = 3.6.
    expected = ("nvidia.com/gpu.fractional", 40, pytest.approx(3.6))
    assert (lab.resource, lab.per_node, lab.gpu_equivalents_per_node) == expected

    def override(d: Doc) -> None:
        d["gpuNodePools"][3]["sharing"]["overhead"] = 0.2

    notebooks = sharing_units(model(override).pools_by_name["notebooks"])
    assert notebooks.gpu_equivalents_per_node == pytest.approx(3.2)  # 4 x (1 - 0.2)


# ---- storage ---------------------------------------------------------------------------------


def test_fsx_sizes() -> None:
    assert fsx_capacity_gib(1) == 1200
    assert fsx_capacity_gib(1200) == 1200
    assert fsx_capacity_gib(1201) == 2400
    assert fsx_capacity_gib(2400) == 2400
    assert fsx_capacity_gib(4800) == 4800  # dev's 4.8 TiB, as FSx counts TiB: 2 steps of 2400
    assert fsx_capacity_gib(48000) == 48000  # 48 TiB: 20 steps
    assert fsx_capacity_gib(4801) == 7200


def test_hot_tier_of_the_example_with_a_workload() -> None:
    def workload(d: Doc) -> None:
        d["storage"]["workload"] = {"checkpointGiB": 1200, "modelGiB": 140}

    hot = plan_storage(model(workload)).hot
    assert hot is not None
    # 48 TiB (FSx's, 1000 GiB each) = 48000 GiB, a size FSx takes; 48 x 1000 MB/s/TiB = 48000 MB/s.
    assert (hot.capacity_gib, hot.rounded, hot.throughput_mbps) == (48000, False, 48000.0)
    # 1200 GiB x 1073.741824 MB/GiB / 48000 MB/s = 26.84 s; 140 GiB -> 3.13 s.
    assert hot.checkpoint_write_seconds == pytest.approx(26.8435, abs=1e-3)
    assert hot.model_load_seconds == pytest.approx(3.1317, abs=1e-3)

    def rounded(d: Doc) -> None:
        d["storage"]["hot"] = {"capacityTiB": 4.9, "throughputPerTiB": 250}

    small = plan_storage(model(rounded)).hot
    assert small is not None
    # 4900 GiB -> 7200 GiB (3 steps of 2400); 7.2 TiB x 250 = 1800 MB/s, AWS's own formula.
    assert (small.capacity_gib, small.rounded, small.throughput_mbps) == (7200, True, 1800.0)


def test_standard_file_system_keeps_the_critical_share() -> None:
    # dev: 4.8 TiB x 250 = 1200 MB/s critical; 80 % leaves 300 MB/s: 1.2 TiB x 250 is exactly that.
    assert standard_file_system(1200, 0.8) == (1200, 250)
    # The example: 48000 MB/s; 12000 MB/s fits 12000 GiB (5 steps of 2400) at 1000/TiB.
    assert standard_file_system(48000, 0.8) == (12000, 1000)
    # 6000 MB/s -> 1500 MB/s: 12000 GiB x 125 beats every higher rate's largest fitting size.
    assert standard_file_system(6000, 0.8) == (12000, 125)
    # Equal throughput, smaller (cheaper) file system: 600 MB/s as 1200 x 500, not 4800 x 125.
    assert standard_file_system(2400, 0.8) == (1200, 500)
    # Share 0.5 or less: never more than the critical file system has.
    assert standard_file_system(1200, 0.3) == (1200, 1000)
    # 150 MB/s x 0.25 = 37.5 MB/s, below the smallest file system; share 1 leaves nothing.
    assert standard_file_system(150, 0.8) is None and standard_file_system(48000, 1.0) is None
    assert largest_size_within(1199.9999999) == 1200 and largest_size_within(7199) == 4800


def test_hot_tier_splits_by_tenant_priority() -> None:
    hot = plan_storage(model()).hot
    assert hot is not None and hot.standard is not None
    # research is high (critical file system), product normal (standard file system).
    assert hot.standard_tenants == ("product",)
    assert (hot.standard.capacity_gib, hot.standard.throughput_per_tib, hot.standard.throughput_mbps) == (
        12000,
        1000,
        12000.0,
    )
    assert hot.critical_throughput_share == pytest.approx(0.8)
    assert hot.capacity_gib == 48000  # the spec's file system is the critical one, unchanged

    def all_critical(d: Doc) -> None:
        for t in d["tenants"]:
            t["priority"] = "critical"

    hot = plan_storage(model(all_critical)).hot
    assert hot is not None and (hot.standard, hot.standard_tenants, hot.critical_throughput_share) == (None, (), None)
    hot = plan_storage(model(base=K8S)).hot
    assert hot is not None and hot.standard is None and hot.standard_tenants == ()


def test_cold_lifecycle_and_warm_zone() -> None:
    storage = plan_storage(model())
    assert [(s.after_days, s.storage_class) for s in storage.cold_lifecycle] == [
        (0, "STANDARD"),
        (30, "GLACIER_IR"),
        (180, "DEEP_ARCHIVE"),
        (1095, "EXPIRE"),
    ]
    assert storage.warm is not None and storage.warm.capacity_tib == 200


def test_kubernetes_storage_is_not_rounded() -> None:
    storage = plan_storage(model(base=K8S))
    assert storage.hot is not None
    # 100 TiB = 100000 GiB as asked; the StorageClass decides throughput, so no times.
    assert (storage.hot.capacity_gib, storage.hot.throughput_mbps, storage.hot.checkpoint_write_seconds) == (
        100000,
        None,
        None,
    )
    assert [(s.after_days, s.storage_class) for s in storage.cold_lifecycle] == [
        (0, "ceph-rgw-hdd"),
        (730, "EXPIRE"),
    ]


# ---- cost ------------------------------------------------------------------------------------


def _single_pool(d: Doc) -> None:
    d["gpuNodePools"] = [d["gpuNodePools"][0] | {"nodes": {"min": 4, "max": 10}}]


def test_cost_three_three_four() -> None:
    m = model(_single_pool)
    shares = [{R: MarketShare(3, 24), S: MarketShare(3, 24), OD: MarketShare(4, 32)}]
    cost = plan_cost(m, shares)
    assert cost is not None
    # p5.48xlarge 55.04 $/h x 730 h = 40179.2 $ per node-month.
    # reserved 3 x 40179.2 x 0.65 = 78349.44; spot 3 x 40179.2 x 0.40 = 48215.04;
    # on-demand 4 x 40179.2 = 160716.80; total 287281.28 against 10 x 40179.2 = 401792.
    pool = cost.pools[0]
    assert pool.monthly_usd[R] == pytest.approx(78349.44)
    assert pool.monthly_usd[S] == pytest.approx(48215.04)
    assert pool.monthly_usd[OD] == pytest.approx(160716.80)
    assert cost.monthly_usd == pytest.approx(287281.28)
    assert cost.all_on_demand_monthly_usd == pytest.approx(401792)
    # savings = 0.3 x 35 % + 0.3 x 60 % = 28.5 %.
    assert cost.savings_percent == pytest.approx(28.5)
    # min 4 nodes: 3 reserved paid anyway + 1 on-demand (the floor never sits on spot)
    # = 78349.44 + 40179.2.
    assert cost.min_size_monthly_usd == pytest.approx(118528.64)
    assert cost.prices_as_of == "2026-07-20"


def test_spec_prices_win() -> None:
    def prices(d: Doc) -> None:
        _single_pool(d)
        d["procurement"]["prices"] = {"onDemandHourly": {"p5.48xlarge": 40}, "spotDiscount": 0.5, "asOf": "2026-01-01"}

    cost = plan_cost(model(prices), [{S: MarketShare(10, 80)}])
    assert cost is not None
    # 10 x 40 $/h x 730 h x (1 - 0.5) = 146000.
    assert cost.monthly_usd == pytest.approx(146000)
    assert (cost.prices_as_of, cost.spot_discount, cost.reserved_discount) == ("2026-01-01", 0.5, 0.35)


def test_missing_price_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gpuplat.catalog.prices._US_EAST_1", {"p5.48xlarge": 55.04})
    outcome = build_plan(model())
    assert outcome.plan is None
    found = {(f.code, f.path) for f in outcome.findings}
    assert found == {("GP232", ("gpuNodePools", 2, "instanceType")), ("GP232", ("gpuNodePools", 3, "instanceType"))}


# ---- reservations, fabric, build_plan --------------------------------------------------------


def test_even_spread() -> None:
    assert even_spread(3, ["a", "b"]) == [("a", 2), ("b", 1)]
    assert even_spread(1, ["a", "b", "c"]) == [("a", 1)]
    assert even_spread(4, ["a", "b", "c"]) == [("a", 2), ("b", 1), ("c", 1)]


def test_build_plan_of_the_example() -> None:
    outcome = build_plan(model())
    plan = outcome.plan
    # The example's training pool autoscales, so its flavors are not topology-aware (GP352).
    assert plan is not None and [f.code for f in outcome.findings] == ["GP352"]
    assert not any(f.topology_aware for f in plan.flavors)
    assert plan.fleet_gpus == 360
    assert sum(plan.fleet_markets.values()) == 360
    for p in plan.pools:
        assert sum(s.nodes for s in p.markets.values()) == p.nodes.max
    train = plan.pool("train")
    assert (train.ports_per_node, train.efa_interfaces) == (8, 32)  # ceil(3200/400); 32 network cards
    assert plan.pool("infer").ports_per_node == 0
    assert plan.fabric is not None and (plan.fabric.hosts, plan.fabric.switches) == (256, 12)
    reserved = {(r.pool, r.zone): (r.count, r.placement_group) for r in plan.reservations}
    assert reserved[("train", "us-east-1a")] == (train.share(R).nodes, True)  # fabric pool: one zone
    infer_r = plan.pool("infer").share(R).nodes
    assert sum(n for (p, _), (n, _) in reserved.items() if p == "infer") == infer_r
    assert plan.cost is not None and 25 <= plan.cost.savings_percent <= 34


def test_fabric_too_small() -> None:
    def small(d: Doc) -> None:
        d["network"]["fabric"]["switchRadix"] = 16

    outcome = build_plan(model(small))
    assert outcome.plan is None
    [finding] = outcome.findings
    assert (finding.code, finding.level, finding.path) == ("GP240", Level.ERROR, ("network", "fabric", "switchRadix"))
    # 256 hosts > 16 x 8 = 128; radix 24 holds 24 x 12 = 288; 3 tiers of 16 hold 16 x 8 x 8 = 1024.
    assert "256 host ports" in finding.message and "at most 128" in finding.message
    assert "radix 24 at 2 tiers" in finding.message and "1024 host ports" in finding.message


def test_kubernetes_plan_has_no_markets() -> None:
    plan = build_plan(model(base=K8S)).plan
    assert plan is not None
    assert plan.fleet_gpus == 16 * 8 + 4 * 8 + 3 * 4
    assert all(not p.markets for p in plan.pools)
    assert (plan.cost, plan.reservations, dict(plan.fleet_markets)) == (None, (), {})
    # nicsPerNode 8 x 16 nodes = 128 host ports; no EFA off aws.
    assert plan.fabric is not None and (plan.fabric.hosts, plan.fabric_zone) == (128, None)
    assert plan.pool("train").efa_interfaces == 0


def test_a_fixed_size_fabric_pool_is_placed_topology_aware() -> None:
    def fixed(doc: Doc) -> None:
        doc["gpuNodePools"][0]["nodes"] = {"min": 32, "max": 32}

    outcome = build_plan(model(fixed))
    # All 32 must exist, but only the 20 reserved / on-demand ones can be held (spot may vanish).
    assert outcome.plan is not None and [f.code for f in outcome.findings] == ["GP353"]
    train = [f for f in outcome.plan.flavors if f.pool == "train"]
    assert train and all(f.topology_aware for f in train)
    assert not any(f.topology_aware for f in outcome.plan.flavors if f.pool != "train")


def test_a_fabric_pool_of_a_type_without_instance_topology_is_never_topology_aware() -> None:
    """EKS labels network-node layers only on the types EC2's instance topology describes; a fixed
    g5 fabric pool's topology-aware flavors would hold jobs forever (Kueue saw no node to place on)."""

    def g5(doc: Doc) -> None:
        doc["gpuNodePools"][0]["nodes"] = {"min": 32, "max": 32}
        doc["gpuNodePools"][0]["instanceType"] = "g5.48xlarge"

    outcome = build_plan(model(g5))
    assert outcome.plan is not None
    assert not any(f.topology_aware for f in outcome.plan.flavors)
    [finding] = [f for f in outcome.findings if f.code == "GP355"]
    assert finding.path == ("gpuNodePools", 0, "instanceType")
    assert "g5.48xlarge" in finding.message and "g6e, p4d, p4de, p5.48xlarge" in finding.message
    assert "GP352" not in [f.code for f in outcome.findings]  # nodes.min = max would not help


def test_node_overlays_tell_karpenter_what_shared_nodes_advertise() -> None:
    def fractional(doc: Doc) -> None:
        doc["gpuNodePools"][2]["sharing"] = {"mode": "fractional", "replicas": 4}

    plan = build_plan(model(fractional)).plan
    assert plan is not None
    overlays = {o.pool: o for o in plan.node_overlays}
    assert "train" not in overlays  # whole GPUs: EC2 already says how many
    assert overlays["infer"].capacity == {"nvidia.com/mig-1g.10gb": 56}
    assert overlays["notebooks"].capacity == {"nvidia.com/gpu.shared": 32}  # L4 x4, MPS x8
    # Only the vGPU count, what HAMi's device plugin registers: Karpenter would launch nodes for
    # pods asking for nvidia.com/gpumem / gpucores and wait forever for them to appear in the
    # node's allocatable (RequestedResourcesRegistered), so a node never initializes.
    assert overlays["dev"].capacity == {"nvidia.com/gpu.fractional": 16}
    assert set(overlays["dev"].node_pools) == {n.name for n in plan.node_pools if n.pool == "dev"}
