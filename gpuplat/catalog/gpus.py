# pyright: strict
"""GPU models, their MIG profiles and the MIG layout rules.

Sources (read 2026-08):

- Profile names, per-GPU counts, the ``all-*`` config names and the PCI device IDs:
  NVIDIA/gpu-operator ``assets/state-mig-manager/0400_configmap.yaml`` at tag v26.7.0
  (10ee5b36, 2026-08-20; unchanged at a22dbf67, 2026-08-21).
- ``all-balanced`` = {1g x2, 2g x1, 3g x1}: the same file, and NVIDIA/mig-parted
  ``pkg/mig/builder/balanced.go`` at bd7160f4 (v0.15.0+2, 2026-08-21).
- Geometry (7 compute / 8 memory slices), placements and profile IDs: NVIDIA/go-nvml
  ``pkg/nvml/mock/gpus/a100.go`` (``a100_GpuInstancePlacements``) at 2f9e261f, which matches
  NVML ``nvmlGpuInstancePlacement_t``; NVIDIA MIG User Guide, supported-mig-profiles.
- A10G / L4 / L40S PCI IDs (10de:2237, 10de:27b8, 10de:26b9): the PCI ID repository.
- GPU memory of the GPUs AWS sells: EC2 DescribeInstanceTypes as captured by
  aws/karpenter-provider-aws ``website/content/en/docs/reference/instance-types.md`` at
  1d927085 (2026-08-21). GPUs AWS does not sell carry the nominal size of their name.

H100-96GB also gets the ``1g.12gb+me`` profile, which H100 profile tables written for the
80 GB part omit: the gpu-operator config lists ``all-1g.12gb.me`` under "H100 NVL, H800 NVL,
GH200", and GH200 there is the 96 GB part (0x2342), which this entry covers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

MIG_COMPUTE_SLICES = 7
MIG_MEMORY_SLICES = 8

# nvidia-smi profile IDs; NVML names them 1_SLICE, 1_SLICE_REV1 (+me), 1_SLICE_REV2, ...
_ID_1G = 19
_ID_1G_ME = 20
_ID_1G_LARGE = 15
_ID_2G = 14
_ID_3G = 9
_ID_4G = 5
_ID_7G = 0

_EVERY_SLICE_BUT_LAST = tuple(range(MIG_MEMORY_SLICES - 1))


@dataclass(frozen=True)
class MigProfile:
    name: str
    compute_slices: int
    memory_slices: int
    max_count: int
    placements: tuple[int, ...]
    profile_id: int
    memory_gib: float

    @property
    def media_extensions(self) -> bool:
        return self.name.endswith("+me")

    @property
    def config_name(self) -> str:
        """The gpu-operator default config that fills a GPU with this profile."""
        # Config names are node-label values, which may not contain '+'.
        return "all-" + self.name.replace("+", ".")


@dataclass(frozen=True)
class GpuModel:
    name: str
    memory_gib: float
    pci_device_ids: tuple[str, ...]
    mig_profiles: tuple[MigProfile, ...]
    mps: bool

    @property
    def mig_capable(self) -> bool:
        return bool(self.mig_profiles)

    def mig_profile(self, name: str) -> MigProfile | None:
        for profile in self.mig_profiles:
            if profile.name == name:
                return profile
        return None

    def named_mig_configs(self) -> dict[str, dict[str, int]]:
        """Names of the gpu-operator default mig-parted configs valid here -> per-GPU layout.

        ``all-disabled`` and ``all-enabled`` both map to {} (no MIG devices); they differ
        only in whether MIG mode is switched on.
        """
        if not self.mig_capable:
            return {}
        configs = {p.config_name: {p.name: p.max_count} for p in self.mig_profiles}
        balanced = _balanced_layout(self.mig_profiles)
        if balanced:
            configs["all-balanced"] = balanced
        configs["all-disabled"] = {}
        configs["all-enabled"] = {}
        return configs


# mig-parted's balanced builder: instances per G value, keyed by the GPU's largest G.
_BALANCED_FORMULA: Mapping[int, Mapping[int, int]] = MappingProxyType({7: {1: 2, 2: 1, 3: 1}, 4: {1: 2, 2: 1}})


def _balanced_layout(profiles: Sequence[MigProfile]) -> dict[str, int]:
    # Mirrors mig-parted balanced.go: base profiles only (no +me), and per G value the one
    # with the highest max count, i.e. the smallest memory (1g.10gb over 1g.20gb).
    base = [p for p in profiles if not p.media_extensions]
    formula = _BALANCED_FORMULA.get(max((p.compute_slices for p in base), default=0))
    if formula is None:
        return {}
    layout: dict[str, int] = {}
    for compute, count in formula.items():
        candidates = [p for p in base if p.compute_slices == compute]
        if not candidates:
            return {}
        layout[max(candidates, key=lambda p: p.max_count).name] = count
    return layout


def _mig_family(
    gb_1g: int,
    gb_1g_large: int,
    gb_2g: int,
    gb_3g: int,
    gb_4g: int,
    gb_7g: int,
    *,
    media_extensions: bool = True,
) -> tuple[MigProfile, ...]:
    """The seven-slice profile set every MIG GPU here shares; only the GB numbers differ."""
    one = MigProfile(f"1g.{gb_1g}gb", 1, 1, 7, _EVERY_SLICE_BUT_LAST, _ID_1G, gb_1g)
    me = MigProfile(f"1g.{gb_1g}gb+me", 1, 1, 1, _EVERY_SLICE_BUT_LAST, _ID_1G_ME, gb_1g)
    rest = (
        MigProfile(f"1g.{gb_1g_large}gb", 1, 2, 4, (0, 2, 4, 6), _ID_1G_LARGE, gb_1g_large),
        MigProfile(f"2g.{gb_2g}gb", 2, 2, 3, (0, 2, 4), _ID_2G, gb_2g),
        MigProfile(f"3g.{gb_3g}gb", 3, 4, 2, (0, 4), _ID_3G, gb_3g),
        MigProfile(f"4g.{gb_4g}gb", 4, 4, 1, (0,), _ID_4G, gb_4g),
        MigProfile(f"7g.{gb_7g}gb", 7, 8, 1, (0,), _ID_7G, gb_7g),
    )
    return (one, me, *rest) if media_extensions else (one, *rest)


def _pci(*device_ids: str) -> tuple[str, ...]:
    # mig-parted's device-filter form: device ID then the NVIDIA vendor ID 10DE.
    return tuple(f"0x{device_id.upper()}10DE" for device_id in device_ids)


_A100_40 = _mig_family(5, 10, 10, 20, 20, 40)
_80GB = _mig_family(10, 20, 20, 40, 40, 80)

# Where one catalog entry stands for several boards with the same MIG geometry, it lists
# every PCI ID the gpu-operator config groups under that geometry, so that a device-filter
# built from it matches whichever board a node has (e.g. A100 SXM4 and PCIe).
_MODELS = (
    GpuModel("A100-SXM-40GB", 40.0, _pci("20B0", "20B1", "20F1", "20F6"), _A100_40, True),
    GpuModel("A100-SXM-80GB", 80.0, _pci("20B2", "20B5"), _80GB, True),
    GpuModel("H100-SXM-80GB", 80.0, _pci("2330"), _80GB, True),
    GpuModel("H100-PCIe-80GB", 80.0, _pci("2331"), _80GB, True),
    GpuModel("H100-NVL-94GB", 94.0, _pci("2321"), _mig_family(12, 24, 24, 47, 47, 94), True),
    GpuModel("H100-96GB", 96.0, _pci("2342", "233D"), _mig_family(12, 24, 24, 48, 48, 96), True),
    GpuModel("H200-SXM-141GB", 141.0, _pci("2335", "233B"), _mig_family(18, 35, 35, 71, 71, 141), True),
    GpuModel("GH200-144GB", 144.0, _pci("2348"), _mig_family(18, 36, 36, 72, 72, 144), True),
    # EC2 reports 183359 MiB for the B200 on p6-b200; the MIG profile names say 180.
    GpuModel("B200-SXM-180GB", 179.06, _pci("2901"), _mig_family(23, 45, 45, 90, 90, 180), True),
    GpuModel("GB200-186GB", 186.0, _pci("2941"), _mig_family(23, 47, 47, 93, 93, 186), True),
    # EC2 reports 22888 MiB (A10G, L4) and 45776 MiB (L40S): what the driver leaves usable.
    GpuModel("A10G-24GB", 22.35, _pci("2237"), (), True),
    GpuModel("L4-24GB", 22.35, _pci("27B8"), (), True),
    GpuModel("L40S-48GB", 44.70, _pci("26B9"), (), True),
)

GPUS: Mapping[str, GpuModel] = MappingProxyType({m.name: m for m in _MODELS})


def gpu_model(name: str) -> GpuModel | None:
    return GPUS.get(name)


def _instances(gpu: GpuModel, layout: Mapping[str, int]) -> list[MigProfile] | None:
    expanded: list[MigProfile] = []
    for name, count in layout.items():
        profile = gpu.mig_profile(name)
        if profile is None:
            return None
        expanded.extend([profile] * count)
    return expanded


def _place(instances: Sequence[MigProfile], used: int) -> list[int] | None:
    if not instances:
        return []
    first, rest = instances[0], instances[1:]
    for start in first.placements:
        mask = ((1 << first.memory_slices) - 1) << start
        if start + first.memory_slices > MIG_MEMORY_SLICES or used & mask:
            continue
        tail = _place(rest, used | mask)
        if tail is not None:
            return [start, *tail]
    return None


def mig_placement(gpu: GpuModel, layout: Mapping[str, int]) -> tuple[tuple[str, int], ...] | None:
    """One overlap-free placement as (profile, start memory slice) pairs, or None if none exists.

    Unknown profiles or negative counts also give None; mig_layout_problems says why.
    """
    if any(count < 0 for count in layout.values()):
        return None
    instances = _instances(gpu, layout)
    if instances is None:
        return None
    # Big and constrained instances first keeps the backtracking shallow; the name makes
    # the result deterministic.
    instances.sort(key=lambda p: (-p.memory_slices, len(p.placements), p.name))
    starts = _place(instances, 0)
    if starts is None:
        return None
    return tuple((p.name, start) for p, start in zip(instances, starts, strict=True))


def _breakdown(parts: Iterable[tuple[MigProfile, int]], slices: str) -> str:
    def one(profile: MigProfile, count: int) -> str:
        per = profile.compute_slices if slices == "compute" else profile.memory_slices
        return f"{profile.name} x{count} = {per * count}"

    return ", ".join(one(p, c) for p, c in parts)


def mig_layout_problems(gpu: GpuModel, layout: Mapping[str, int]) -> list[str]:
    """Why a per-GPU MIG layout cannot be applied to ``gpu``; empty when it can.

    An empty layout is valid: it is MIG mode with no instances (``all-enabled``).
    Totals and placement are only checked once every entry is individually valid, so one
    mistake yields one sentence rather than a cascade.
    """
    if not gpu.mig_capable:
        return [f"{gpu.name} does not support MIG"]
    problems: list[str] = []
    parts: list[tuple[MigProfile, int]] = []
    for name, count in layout.items():
        profile = gpu.mig_profile(name)
        if profile is None:
            valid = ", ".join(p.name for p in gpu.mig_profiles)
            problems.append(f"{name} is not a MIG profile of {gpu.name} (valid: {valid})")
        elif count < 1:
            problems.append(f"{name} x{count} must be at least 1")
        elif count > profile.max_count:
            problems.append(f"{name} x{count} exceeds its maximum of {profile.max_count} per GPU")
        else:
            parts.append((profile, count))
    if problems:
        return problems

    compute = sum(p.compute_slices * c for p, c in parts)
    if compute > MIG_COMPUTE_SLICES:
        problems.append(
            f"the layout needs {compute} compute slices ({_breakdown(parts, 'compute')}) "
            f"but {gpu.name} has {MIG_COMPUTE_SLICES}"
        )
    with_me = [(p, c) for p, c in parts if p.media_extensions]
    if sum(c for _, c in with_me) > 1:
        names = ", ".join(f"{p.name} x{c}" for p, c in with_me)
        problems.append(f"the layout has more than one +me instance ({names}); a GPU allows 1")
    memory = sum(p.memory_slices * c for p, c in parts)
    if memory > MIG_MEMORY_SLICES:
        problems.append(
            f"the layout needs {memory} memory slices ({_breakdown(parts, 'memory')}) "
            f"but {gpu.name} has {MIG_MEMORY_SLICES}"
        )
    if not problems and mig_placement(gpu, layout) is None:
        starts = "; ".join(f"{p.name} at {', '.join(str(s) for s in p.placements)}" for p, _ in parts)
        problems.append(
            f"no placement of {', '.join(f'{p.name} x{c}' for p, c in parts)} fits the "
            f"{MIG_MEMORY_SLICES} memory slices of {gpu.name} without overlap "
            f"(legal start slices: {starts})"
        )
    return problems
