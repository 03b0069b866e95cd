"""Facts from the catalog that users and the rest of gpuplat rely on.

Expected values are derived by hand from the upstream sources each catalog module names (the
GPU Operator's mig-parted config, NVML's placement table, Karpenter's instance-type tables, the
charts' release tags), not read back from the catalog.
"""

from __future__ import annotations

import re

import pytest

from gpuplat.catalog import (
    CHARTS,
    GPUS,
    HOURS_PER_MONTH,
    INSTANCE_TYPES,
    ON_DEMAND_HOURLY_USD,
    PRICES_AS_OF,
    REPLICAS_MAX,
    REPLICAS_MIN,
    RESERVED_DISCOUNT,
    SHARING_MODES,
    SHARING_OVERHEAD,
    SHARING_RESOURCE,
    SPOT_DISCOUNT,
    GpuModel,
    MigProfile,
    gpu_model,
    instance_type,
    mig_layout_problems,
    mig_placement,
    mig_resource_name,
)

H100 = GPUS["H100-SXM-80GB"]
A100_40 = GPUS["A100-SXM-40GB"]


# --- instance types -------------------------------------------------------------------


def test_p5_48xlarge() -> None:
    p5 = instance_type("p5.48xlarge")
    assert p5 is not None
    assert (p5.gpu_model, p5.gpu_count) == ("H100-SXM-80GB", 8)
    assert (p5.network_cards, p5.efa_interfaces, p5.network_gbps) == (32, 32, 3200)
    assert (p5.vcpus, p5.memory_gib, p5.nvme_gb) == (192, 2048, 30400)
    assert p5.efa_capable


@pytest.mark.parametrize(
    ("name", "gpu", "count"),
    [
        ("p4d.24xlarge", "A100-SXM-40GB", 8),
        ("p4de.24xlarge", "A100-SXM-80GB", 8),
        ("p5.4xlarge", "H100-SXM-80GB", 1),
        ("p5e.48xlarge", "H200-SXM-141GB", 8),
        ("p5en.48xlarge", "H200-SXM-141GB", 8),
        ("p6-b200.48xlarge", "B200-SXM-180GB", 8),
        ("g5.12xlarge", "A10G-24GB", 4),
        ("g6.12xlarge", "L4-24GB", 4),
        ("g6e.12xlarge", "L40S-48GB", 4),
        ("g6e.48xlarge", "L40S-48GB", 8),
    ],
)
def test_instance_gpus(name: str, gpu: str, count: int) -> None:
    it = INSTANCE_TYPES[name]
    assert (it.gpu_model, it.gpu_count) == (gpu, count)


def test_every_size_of_the_g_families_is_its_own_entry() -> None:
    sizes = ["xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"]
    for family in ("g5", "g6", "g6e"):
        for size in sizes:
            assert f"{family}.{size}" in INSTANCE_TYPES
    assert len(INSTANCE_TYPES) == 7 + 3 * len(sizes)


def test_efa_capability() -> None:
    assert not INSTANCE_TYPES["g5.xlarge"].efa_capable
    assert not INSTANCE_TYPES["g6e.4xlarge"].efa_capable
    assert INSTANCE_TYPES["g6.8xlarge"].efa_capable
    assert INSTANCE_TYPES["p5en.48xlarge"].network_cards == 16
    assert INSTANCE_TYPES["p6-b200.48xlarge"].efa_interfaces == 8


def test_every_instance_gpu_exists() -> None:
    for it in INSTANCE_TYPES.values():
        assert it.gpu_model in GPUS, it.name
        assert it.gpu.name == it.gpu_model


def test_unknown_instance_type() -> None:
    assert instance_type("p9.nonexistent") is None


# --- prices ---------------------------------------------------------------------------


def test_prices_cover_exactly_the_instance_types() -> None:
    assert set(ON_DEMAND_HOURLY_USD) == set(INSTANCE_TYPES)
    assert all(price > 0 for price in ON_DEMAND_HOURLY_USD.values())


def test_known_list_prices() -> None:
    assert ON_DEMAND_HOURLY_USD["p5.48xlarge"] == 55.04
    assert ON_DEMAND_HOURLY_USD["p4d.24xlarge"] == pytest.approx(21.96, abs=0.01)
    assert ON_DEMAND_HOURLY_USD["g5.xlarge"] == 1.006
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", PRICES_AS_OF)
    assert HOURS_PER_MONTH == 730.0


def test_bigger_sizes_cost_more_per_node() -> None:
    for family in ("g5", "g6", "g6e"):
        one = ON_DEMAND_HOURLY_USD[f"{family}.xlarge"]
        eight = ON_DEMAND_HOURLY_USD[f"{family}.48xlarge"]
        assert eight > one * 8


def test_3_3_4_mix_saves_a_quarter_to_a_third() -> None:
    cost = 0.3 * (1 - SPOT_DISCOUNT) + 0.3 * (1 - RESERVED_DISCOUNT) + 0.4
    assert 0.25 <= 1 - cost <= 1 / 3


# --- GPUs and MIG profiles ------------------------------------------------------------


def test_gpu_names() -> None:
    assert set(GPUS) == {
        "A100-SXM-40GB", "A100-SXM-80GB", "H100-SXM-80GB", "H100-PCIe-80GB", "H100-NVL-94GB",
        "H100-96GB", "H200-SXM-141GB", "GH200-144GB", "B200-SXM-180GB", "GB200-186GB",
        "A10G-24GB", "L4-24GB", "L40S-48GB",
    }  # fmt: skip
    assert gpu_model("H100-SXM-80GB") is H100
    assert gpu_model("H100") is None


def test_pci_ids_in_mig_parted_form() -> None:
    assert H100.pci_device_ids == ("0x233010DE",)
    assert "0x20B010DE" in A100_40.pci_device_ids
    for gpu in GPUS.values():
        assert gpu.pci_device_ids
        for pci in gpu.pci_device_ids:
            assert re.fullmatch(r"0x[0-9A-F]{4}10DE", pci), pci


@pytest.mark.parametrize("name", ["A10G-24GB", "L4-24GB", "L40S-48GB"])
def test_non_mig_gpus(name: str) -> None:
    gpu = GPUS[name]
    assert not gpu.mig_capable
    assert gpu.mps
    assert gpu.named_mig_configs() == {}
    assert mig_layout_problems(gpu, {"1g.10gb": 1}) == [f"{name} does not support MIG"]


def test_h100_profiles() -> None:
    # (compute, memory slices, max, placements, profile id) from FORMATS c.
    expected = {
        "1g.10gb": (1, 1, 7, (0, 1, 2, 3, 4, 5, 6), 19),
        "1g.10gb+me": (1, 1, 1, (0, 1, 2, 3, 4, 5, 6), 20),
        "1g.20gb": (1, 2, 4, (0, 2, 4, 6), 15),
        "2g.20gb": (2, 2, 3, (0, 2, 4), 14),
        "3g.40gb": (3, 4, 2, (0, 4), 9),
        "4g.40gb": (4, 4, 1, (0,), 5),
        "7g.80gb": (7, 8, 1, (0,), 0),
    }
    got = {
        p.name: (p.compute_slices, p.memory_slices, p.max_count, p.placements, p.profile_id)
        for p in H100.mig_profiles
    }
    assert got == expected
    profile = H100.mig_profile("3g.40gb")
    assert profile is not None and profile.memory_gib == 40
    assert H100.mig_profile("1g.5gb") is None


def test_a100_40gb_1g_10gb_is_the_two_slice_variant() -> None:
    profile = A100_40.mig_profile("1g.10gb")
    assert profile is not None
    assert (profile.memory_slices, profile.max_count, profile.profile_id) == (2, 4, 15)
    assert A100_40.named_mig_configs()["all-1g.10gb"] == {"1g.10gb": 4}
    assert A100_40.named_mig_configs()["all-1g.5gb"] == {"1g.5gb": 7}


def test_h100_named_configs() -> None:
    configs = H100.named_mig_configs()
    assert configs["all-1g.10gb"] == {"1g.10gb": 7}
    assert configs["all-1g.10gb.me"] == {"1g.10gb+me": 1}
    assert configs["all-1g.20gb"] == {"1g.20gb": 4}
    assert configs["all-7g.80gb"] == {"7g.80gb": 1}
    assert configs["all-balanced"] == {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
    assert configs["all-disabled"] == {}
    assert configs["all-enabled"] == {}
    assert len(configs) == 7 + 3


@pytest.mark.parametrize(
    ("gpu", "balanced"),
    [
        ("A100-SXM-40GB", {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}),
        ("H200-SXM-141GB", {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}),
        ("GH200-144GB", {"1g.18gb": 2, "2g.36gb": 1, "3g.72gb": 1}),
        ("B200-SXM-180GB", {"1g.23gb": 2, "2g.45gb": 1, "3g.90gb": 1}),
        ("GB200-186GB", {"1g.23gb": 2, "2g.47gb": 1, "3g.93gb": 1}),
        ("H100-NVL-94GB", {"1g.12gb": 2, "2g.24gb": 1, "3g.47gb": 1}),
        ("H100-96GB", {"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1}),
    ],
)
def test_all_balanced_per_gpu(gpu: str, balanced: dict[str, int]) -> None:
    assert GPUS[gpu].named_mig_configs()["all-balanced"] == balanced


def test_every_named_config_is_a_valid_layout() -> None:
    for gpu in GPUS.values():
        for name, layout in gpu.named_mig_configs().items():
            assert mig_layout_problems(gpu, layout) == [], (gpu.name, name)


# --- MIG layouts ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "layout",
    [
        {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2},  # compute 3+2+2=7, memory 4+2+2=8
        {"4g.40gb": 1, "3g.40gb": 1},  # 4g at 0-3, 3g at 4-7
        {"4g.40gb": 1, "2g.20gb": 1, "1g.10gb": 1},  # 4g at 0, 2g at 4, 1g at 6
        {"1g.10gb+me": 1, "1g.10gb": 6},  # 7 one-slice instances at 0..6
        {"1g.20gb": 4},  # two-slice 1g at 0, 2, 4, 6
        {"7g.80gb": 1},
        {},  # MIG on, no instances (all-enabled)
    ],
)
def test_valid_h100_layouts(layout: dict[str, int]) -> None:
    assert mig_layout_problems(H100, layout) == []
    assert mig_placement(H100, layout) is not None


def test_placement_is_overlap_free() -> None:
    placement = mig_placement(H100, {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2})
    assert placement is not None
    assert sorted(name for name, _ in placement) == ["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"]
    used: set[int] = set()
    for name, start in placement:
        profile = H100.mig_profile(name)
        assert profile is not None and start in profile.placements
        cells = set(range(start, start + profile.memory_slices))
        assert not cells & used
        used |= cells


def test_two_3g_and_a_1g_need_9_memory_slices() -> None:
    # compute 3+3+1 = 7 fits, memory 4+4+1 = 9 of 8 does not.
    problems = mig_layout_problems(H100, {"3g.40gb": 2, "1g.10gb": 1})
    assert len(problems) == 1
    assert "9 memory slices" in problems[0] and "has 8" in problems[0]
    assert mig_placement(H100, {"3g.40gb": 2, "1g.10gb": 1}) is None


def test_count_over_maximum() -> None:
    assert mig_layout_problems(H100, {"3g.40gb": 3}) == ["3g.40gb x3 exceeds its maximum of 2 per GPU"]
    assert mig_layout_problems(H100, {"1g.10gb+me": 2}) == ["1g.10gb+me x2 exceeds its maximum of 1 per GPU"]
    assert mig_layout_problems(A100_40, {"1g.10gb": 5}) == ["1g.10gb x5 exceeds its maximum of 4 per GPU"]


def test_too_many_compute_slices() -> None:
    # 4 + 2 + 2 = 8 compute slices; memory 4 + 2 + 2 = 8 would fit.
    problems = mig_layout_problems(H100, {"4g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2})
    assert len(problems) == 1
    assert "8 compute slices" in problems[0] and "has 7" in problems[0]


def test_count_below_one() -> None:
    assert mig_layout_problems(H100, {"1g.10gb": 0}) == ["1g.10gb x0 must be at least 1"]


def test_unknown_profile_is_named() -> None:
    problems = mig_layout_problems(H100, {"1g.5gb": 7})
    assert len(problems) == 1
    assert problems[0].startswith("1g.5gb is not a MIG profile of H100-SXM-80GB")
    assert "1g.10gb" in problems[0]
    assert mig_placement(H100, {"1g.5gb": 7}) is None


def test_placement_search_can_fail_where_totals_fit() -> None:
    # The real geometries always place when the totals fit; a profile pinned to one start
    # slice shows the search itself rejects overlap.
    pinned = MigProfile("2g.pinned", 2, 2, 3, (0,), 14, 20)
    gpu = GpuModel("TEST", 80, ("0x000010DE",), (pinned,), True)
    assert mig_placement(gpu, {"2g.pinned": 1}) == (("2g.pinned", 0),)
    problems = mig_layout_problems(gpu, {"2g.pinned": 2})
    assert len(problems) == 1 and problems[0].startswith("no placement of 2g.pinned x2")


# --- sharing --------------------------------------------------------------------------


def test_sharing_modes() -> None:
    assert set(SHARING_OVERHEAD) == set(SHARING_MODES)
    assert set(SHARING_RESOURCE) == set(SHARING_MODES) - {"mig"}
    assert SHARING_OVERHEAD["exclusive"] == 0.0
    assert SHARING_OVERHEAD["mig"] < 0.02
    assert 0.05 <= SHARING_OVERHEAD["mps"] <= 0.08
    assert 0.15 <= SHARING_OVERHEAD["time-slicing"] <= 0.20
    assert (REPLICAS_MIN, REPLICAS_MAX) == (2, 48)


def test_mig_resource_names() -> None:
    assert mig_resource_name("1g.10gb") == "nvidia.com/mig-1g.10gb"
    assert mig_resource_name("1g.10gb+me") == "nvidia.com/mig-1g.10gb.me"


# --- charts ---------------------------------------------------------------------------


def test_chart_keys() -> None:
    assert set(CHARTS) == {
        "gpu-operator", "hami", "kueue", "karpenter", "karpenter-crd", "kube-prometheus-stack",
        "keda", "aws-efa-k8s-device-plugin", "aws-fsx-csi-driver", "aws-mountpoint-s3-csi-driver",
        "sriov-network-operator", "network-operator", "dcgm-exporter",
    }  # fmt: skip
    for key, chart in CHARTS.items():
        assert chart.key == key
        assert chart.namespace and chart.version


def test_pinned_versions() -> None:
    versions = {key: chart.version for key, chart in CHARTS.items()}
    assert versions["gpu-operator"] == "v26.7.0"
    assert versions["karpenter"] == versions["karpenter-crd"] == "1.15.2"
    assert versions["kueue"] == "0.19.2"
    assert versions["aws-efa-k8s-device-plugin"] == "v0.5.30"
    assert versions["sriov-network-operator"] == "1.6.0"


def test_oci_and_http_charts_map_to_release_arguments() -> None:
    kueue = CHARTS["kueue"]
    assert kueue.release_chart == "oci://registry.k8s.io/kueue/charts/kueue"
    assert kueue.release_repo is None
    assert CHARTS["karpenter"].release_chart == "oci://public.ecr.aws/karpenter/karpenter"
    assert (
        CHARTS["sriov-network-operator"].release_chart
        == "oci://ghcr.io/k8snetworkplumbingwg/sriov-network-operator-chart"
    )
    gpu_operator = CHARTS["gpu-operator"]
    assert gpu_operator.release_chart == "gpu-operator"
    assert gpu_operator.release_repo == "https://helm.ngc.nvidia.com/nvidia"
    assert CHARTS["kueue"].crd_api_versions == ("kueue.x-k8s.io/v1beta2",)
