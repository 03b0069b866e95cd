"""Rules on `gpuNodePools[].sharing`: MIG profiles and layouts, replicas, fields per mode."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplat.catalog import GPUS, REPLICAS_MAX, REPLICAS_MIN, SHARING_MODES, mig_layout_problems
from gpuplat.diagnostics import Level
from gpuplat.validate.registry import Finding, rule
from gpuplat.validate.rules._common import (
    REPLICA_MODES,
    SHARED_MODES,
    Data,
    PoolGpu,
    as_map,
    as_str,
    is_int,
    listing,
    pool_gpu,
    pool_name,
    pools,
    sharing_mode,
)

_MODES = frozenset(SHARING_MODES)
_MIG_CAPABLE = tuple(name for name, gpu in GPUS.items() if gpu.mig_capable)


def _mig_pools(data: Data) -> Iterator[tuple[int, Data, Data, PoolGpu | None]]:
    """MIG pools with their sharing block and (when resolvable) GPU."""
    for i, pool in pools(data):
        sharing = as_map(pool.get("sharing"))
        if sharing is not None and sharing.get("mode") == "mig":
            yield i, pool, sharing, pool_gpu(data, pool)


def _gpu_text(gpu: PoolGpu) -> str:
    return gpu.model.name if gpu.source == "gpu.model" else f"{gpu.model.name} ({gpu.source})"


@rule(
    "GP201",
    "mig-profile-valid",
    Level.ERROR,
    "mig-manager applies only the named configs of the GPU's MIG table (gpu-operator default-mig-parted-config).",
    source="https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-operator-mig.html",
    fix=(
        "Name a profile of the pool's GPU (`gpuplat docs catalog` lists each GPU's MIG profiles) or give a custom "
        "`layout` instead."
    ),
)
def mig_profile_valid(data: Data) -> Iterator[Finding]:
    for i, pool, sharing, gpu in _mig_pools(data):
        profile = as_str(sharing.get("profile"))
        if profile is None or gpu is None or not gpu.model.mig_capable:
            continue
        configs = gpu.model.named_mig_configs()
        usable = [name for name, layout in configs.items() if layout]
        if profile in usable:
            continue
        path = ("gpuNodePools", i, "sharing", "profile")
        if profile in configs:
            yield Finding(
                path,
                f"{profile} creates no MIG instances on {gpu.model.name}, so pool {pool_name(pool, i)} would "
                f"offer nothing to schedule (valid: {listing(usable)}; or use mode exclusive)",
            )
        else:
            yield Finding(path, f"{profile} is not a MIG profile of {gpu.model.name} (valid: {listing(usable)})")


@rule(
    "GP202",
    "mig-layout-valid",
    Level.ERROR,
    "A MIG layout must fit 7 compute and 8 memory slices with legal placements (NVML placement table).",
    source="https://docs.nvidia.com/datacenter/tesla/mig-user-guide/",
    fix=(
        "Change `sharing.layout` so its instances fit one GPU's 7 compute and 8 memory slices (`gpuplat docs "
        "catalog` lists each profile's slices), or use a named `profile`."
    ),
)
def mig_layout_valid(data: Data) -> Iterator[Finding]:
    for i, _pool, sharing, gpu in _mig_pools(data):
        layout = as_map(sharing.get("layout"))
        if layout is None or gpu is None or not gpu.model.mig_capable:
            continue
        if not layout or not all(is_int(count) and count >= 1 for count in layout.values()):
            continue  # the schema pass reports empty layouts and counts that are not whole and positive
        counts: dict[str, int] = {name: int(count) for name, count in layout.items()}
        path = ("gpuNodePools", i, "sharing", "layout")
        for problem in mig_layout_problems(gpu.model, counts):
            # A problem about one entry points at that entry's line.
            entry = next((name for name in counts if problem.startswith(f"{name} ")), None)
            yield Finding((*path, entry) if entry else path, problem, at_key=entry is not None)


@rule(
    "GP203",
    "mig-profile-or-layout",
    Level.ERROR,
    "mig-manager applies exactly one config per node: a named profile or one custom layout.",
    source="https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-operator-mig.html",
    fix="Keep either `sharing.profile` or `sharing.layout` on the pool, not both.",
)
def mig_profile_or_layout(data: Data) -> Iterator[Finding]:
    for i, pool, sharing, _gpu in _mig_pools(data):
        has_profile, has_layout = "profile" in sharing, "layout" in sharing
        if has_profile and has_layout:
            yield Finding(
                ("gpuNodePools", i, "sharing", "layout"),
                f"pool {pool_name(pool, i)} sets both sharing.profile and sharing.layout; keep one of them",
                at_key=True,
            )
        elif not has_profile and not has_layout:
            yield Finding(
                ("gpuNodePools", i, "sharing", "mode"),
                f"MIG pool {pool_name(pool, i)} needs sharing.profile (e.g. all-1g.10gb) or sharing.layout "
                f'(e.g. {{"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}})',
            )


@rule(
    "GP204",
    "mig-capable-gpu",
    Level.ERROR,
    "MIG exists only on the GPUs of NVIDIA's MIG table (A100, H100, H200, B200 ...), not on A10G, L4 or L40S.",
    source="https://docs.nvidia.com/datacenter/tesla/mig-user-guide/",
    fix=(
        "Use another sharing mode on this pool (time-slicing, mps, fractional) or move MIG to a pool of a "
        "MIG-capable GPU (A100, H100, H200, B200 ...)."
    ),
)
def mig_capable_gpu(data: Data) -> Iterator[Finding]:
    for i, pool, _sharing, gpu in _mig_pools(data):
        if gpu is not None and not gpu.model.mig_capable:
            yield Finding(
                ("gpuNodePools", i, "sharing", "mode"),
                f"{_gpu_text(gpu)} of pool {pool_name(pool, i)} does not support MIG (MIG-capable: "
                f"{listing(_MIG_CAPABLE)}); use mps, time-slicing or fractional instead",
            )


@rule(
    "GP205",
    "sharing-fields-match-mode",
    Level.ERROR,
    "profile/layout configure mig-manager and replicas the device plugin or HAMi; other modes ignore them.",
    fix=(
        "Remove the field the mode does not use: `profile`/`layout` belong to mode mig, `replicas` to time-slicing,"
        " mps and fractional."
    ),
)
def sharing_fields_match_mode(data: Data) -> Iterator[Finding]:
    for i, pool in pools(data):
        sharing = as_map(pool.get("sharing"))
        mode = sharing_mode(pool)
        if sharing is None or mode not in _MODES:
            continue  # an unknown mode is the schema pass's to report
        misplaced: list[tuple[str, str]] = []
        if mode != "mig":
            misplaced += [(key, "mig") for key in ("profile", "layout") if key in sharing]
        if mode not in REPLICA_MODES and "replicas" in sharing:
            misplaced.append(("replicas", "mps, time-slicing and fractional"))
        for key, modes in misplaced:
            yield Finding(
                ("gpuNodePools", i, "sharing", key),
                f"sharing.{key} of pool {pool_name(pool, i)} applies to {modes}, not to mode {mode}; remove it",
                at_key=True,
            )


@rule(
    "GP206",
    "sharing-replicas-range",
    Level.ERROR,
    "The device plugin rejects replicas < 2; NVIDIA MPS allows 48 client contexts per GPU (Volta and later).",
    source="https://github.com/NVIDIA/k8s-device-plugin#shared-access-to-gpus",
    fix="Set `sharing.replicas` between 2 and 48.",
)
def sharing_replicas_range(data: Data) -> Iterator[Finding]:
    for i, pool in pools(data):
        sharing = as_map(pool.get("sharing"))
        mode = sharing_mode(pool)
        replicas = sharing.get("replicas") if sharing is not None else None
        if mode in REPLICA_MODES and is_int(replicas) and not REPLICAS_MIN <= replicas <= REPLICAS_MAX:
            yield Finding(
                ("gpuNodePools", i, "sharing", "replicas"),
                f"replicas {replicas} of {mode} pool {pool_name(pool, i)} is outside {REPLICAS_MIN}..{REPLICAS_MAX}",
            )


@rule(
    "GP207",
    "sharing-replicas-required",
    Level.ERROR,
    "The device plugin's time-slicing/MPS config and HAMi's split count have no default number of replicas.",
    source="https://github.com/NVIDIA/k8s-device-plugin#shared-access-to-gpus",
    fix="Add `sharing.replicas` (2 to 48): how many pods share one GPU.",
)
def sharing_replicas_required(data: Data) -> Iterator[Finding]:
    for i, pool in pools(data):
        sharing = as_map(pool.get("sharing"))
        mode = sharing_mode(pool)
        if sharing is not None and mode in REPLICA_MODES and "replicas" not in sharing:
            yield Finding(
                ("gpuNodePools", i, "sharing", "mode"),
                f"{mode} pool {pool_name(pool, i)} needs sharing.replicas, the number of clients per GPU "
                f"({REPLICAS_MIN}..{REPLICAS_MAX})",
            )


@rule(
    "GP228",
    "device-plugin-config-name-free",
    Level.ERROR,
    "The device-plugin ConfigMap keys its per-pool configs by pool name beside the `default` config of "
    "whole-GPU and MIG nodes.",
    source="https://github.com/NVIDIA/k8s-device-plugin#shared-access-to-gpus",
    fix="Rename the pool: `default` is the device-plugin config of whole-GPU and MIG nodes.",
)
def device_plugin_config_name_free(data: Data) -> Iterator[Finding]:
    for i, pool in pools(data):
        if sharing_mode(pool) in SHARED_MODES and as_str(pool.get("name")) == "default":
            yield Finding(
                ("gpuNodePools", i, "name"),
                f"a {sharing_mode(pool)} pool cannot be named default: its device-plugin config would replace "
                "the default config of every exclusive and MIG node; choose another name",
            )


@rule(
    "GP229",
    "fractional-replicas-equal",
    Level.ERROR,
    "HAMi's split count (devicePlugin.deviceSplitCount) is one value for the whole cluster.",
    source="https://github.com/Project-HAMi/HAMi",
    fix="Give every fractional pool the same `sharing.replicas`.",
)
def fractional_replicas_equal(data: Data) -> Iterator[Finding]:
    fractional = [
        (i, pool, sharing.get("replicas"))
        for i, pool in pools(data)
        if sharing_mode(pool) == "fractional" and (sharing := as_map(pool.get("sharing"))) is not None
    ]
    counts = [(i, pool, r) for i, pool, r in fractional if is_int(r)]
    if not counts:
        return
    first_index, first_pool, first = counts[0]
    for i, pool, replicas in counts[1:]:
        if replicas != first:
            yield Finding(
                ("gpuNodePools", i, "sharing", "replicas"),
                f"fractional pool {pool_name(pool, i)} splits GPUs {replicas} ways but "
                f"{pool_name(first_pool, first_index)} splits them {first} ways; HAMi has one split count "
                "per cluster, so every fractional pool needs the same replicas",
            )


@rule(
    "GP302",
    "sharing-metrics-attribution",
    Level.WARNING,
    "DCGM reports per-GPU utilisation and cannot split a time-sliced or MPS-shared GPU between its pods.",
    source="https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-sharing.html",
    fix=(
        "Acknowledge it (`acknowledge:`) if per-node chargeback is what you want; use MIG or exclusive pools for "
        "per-pod attribution."
    ),
)
def sharing_metrics_attribution(data: Data) -> Iterator[Finding]:
    for i, pool in pools(data):
        mode = sharing_mode(pool)
        if mode in SHARED_MODES and as_map(pool.get("sharing")) is not None:
            yield Finding(
                ("gpuNodePools", i, "sharing", "mode"),
                f"GPU metrics of {mode} pool {pool_name(pool, i)} cannot be attributed to pods (DCGM reports "
                f"the whole GPU), so per-pod utilisation, chargeback and waste alerts see the shared GPU only",
            )
