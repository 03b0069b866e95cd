"""mig-parted, as the GPU Operator's MIG manager runs it: a stand-in (its module is not served).

From mig-parted's documented format (`api/spec/v1`, `version: v1`): the config names a set of
entries, each applying to the GPUs its `device-filter` (PCI device IDs) and `devices` ("all" or
indices) select, with MIG on or off and, when on, a count per profile. The MIG manager picks the
config the node's `nvidia.com/mig.config` label names. Without a config of the platform's own it
derives one from the hardware (mig-manager >= 0.15): `all-disabled`, `all-enabled`,
`all-<profile>` (every instance of one profile, '+' written '.') and `all-balanced`. What this
module answers is, per GPU, the layout to create (or None: MIG off); whether the layout fits the
GPU is decided on NVML's own tables by the devices tool, which then sets the node's
`nvidia.com/mig.config.state`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ruamel.yaml.error import YAMLError

from e2e.operands import load_yaml

_ENTRY_KEYS = {"device-filter", "devices", "mig-enabled", "mig-devices"}
# mig-parted's balanced builder (pkg/mig/builder/balanced.go): instances per compute-slice
# count, keyed by the GPU's largest one.
_BALANCED = {7: {1: 2, 2: 1, 3: 1}, 4: {1: 2, 2: 1}}

Layout = dict[str, int] | None  # per GPU: profile -> count, or None for MIG off


class MigPartedError(Exception):
    """mig-parted refused the config or the node's selection; the MIG manager marks it failed."""


@dataclass(frozen=True)
class Profile:
    name: str  # as NVML names it (go-nvlib), e.g. 1g.10gb+me
    instances: int  # at most this many per GPU
    slices: int  # compute slices


def parse(text: str) -> dict[str, list[dict[str, Any]]]:
    """The `mig-configs` of a mig-parted config file, after the checks its parser makes."""
    try:
        document = load_yaml(text)
    except YAMLError as err:
        raise MigPartedError(f"config is not YAML: {err}") from None
    if not isinstance(document, dict):
        raise MigPartedError("config is not a mapping")
    unknown = set(document) - {"version", "mig-configs"}
    if unknown:
        raise MigPartedError(f"unknown field(s) {', '.join(sorted(unknown))}")
    if document.get("version") != "v1":
        raise MigPartedError(f"unknown version {document.get('version')!r}")
    configs = document.get("mig-configs")
    if not isinstance(configs, dict) or not configs:
        raise MigPartedError("mig-configs must hold at least one config")
    for name, entries in configs.items():
        if not isinstance(entries, list) or not entries:
            raise MigPartedError(f"config {name}: at least one entry is required")
        for entry in entries:
            _check_entry(str(name), entry)
    return {str(k): list(v) for k, v in configs.items()}


def _check_entry(name: str, entry: Any) -> None:
    if not isinstance(entry, dict):
        raise MigPartedError(f"config {name}: an entry is not a mapping")
    unknown = set(entry) - _ENTRY_KEYS
    if unknown:
        raise MigPartedError(f"config {name}: unknown field(s) {', '.join(sorted(unknown))}")
    devices = entry.get("devices")
    if devices != "all" and not (isinstance(devices, list) and all(isinstance(d, int) for d in devices)):
        raise MigPartedError(f"config {name}: devices must be 'all' or a list of GPU indices, not {devices!r}")
    if not isinstance(entry.get("mig-enabled"), bool):
        raise MigPartedError(f"config {name}: mig-enabled is required (true or false)")
    layout = entry.get("mig-devices")
    if entry["mig-enabled"]:
        if not isinstance(layout, dict) or not all(isinstance(v, int) and v >= 0 for v in layout.values()):
            raise MigPartedError(f"config {name}: mig-enabled entries need mig-devices (profile: count)")
    elif layout:
        raise MigPartedError(f"config {name}: mig-devices given with mig-enabled false")


def hardware_configs(profiles: Sequence[Profile]) -> dict[str, list[dict[str, Any]]]:
    """The configs the MIG manager derives from a GPU's profiles when given none."""
    configs: dict[str, list[dict[str, Any]]] = {
        "all-disabled": [{"devices": "all", "mig-enabled": False}],
        "all-enabled": [{"devices": "all", "mig-enabled": True, "mig-devices": {}}],
    }
    for profile in profiles:
        configs["all-" + profile.name.replace("+", ".")] = [
            {"devices": "all", "mig-enabled": True, "mig-devices": {profile.name: profile.instances}}]
    base = [p for p in profiles if "+" not in p.name]
    formula = _BALANCED.get(max((p.slices for p in base), default=0))
    if formula:
        balanced = {}
        for slices, count in formula.items():
            candidates = [p for p in base if p.slices == slices]
            if not candidates:
                break
            balanced[max(candidates, key=lambda p: p.instances).name] = count
        else:
            configs["all-balanced"] = [{"devices": "all", "mig-enabled": True, "mig-devices": balanced}]
    return configs


def _filter_matches(entry: Mapping[str, Any], pci_device_id: str) -> bool:
    wanted = entry.get("device-filter")
    if wanted is None:
        return True
    ids = [wanted] if isinstance(wanted, str) else list(wanted)
    return any(str(i).lower() == pci_device_id.lower() for i in ids)


def layouts(configs: Mapping[str, list[dict[str, Any]]], name: str, pci_device_id: str,
            gpus: int) -> tuple[list[Layout], int]:
    """Per GPU index, the layout the selected config gives it (None: MIG off), and how many GPUs
    an entry selected. mig-parted walks each entry over the GPUs its filter and indices select
    (cmd/nvidia-mig-parted/assert WalkSelectedMigConfigForEachGPU); a GPU none selects is left
    as it is, here with MIG off."""
    entries = configs.get(name)
    if entries is None:
        raise MigPartedError(f"selected mig-config not present: {name} (configs: {', '.join(sorted(configs))})")
    result: list[Layout] = [None] * gpus
    selected: set[int] = set()
    for entry in entries:
        if not _filter_matches(entry, pci_device_id):
            continue
        for index in range(gpus) if entry["devices"] == "all" else [i for i in entry["devices"] if 0 <= i < gpus]:
            selected.add(index)
            result[index] = {str(k): int(v) for k, v in (entry.get("mig-devices") or {}).items() if v} \
                if entry["mig-enabled"] else None
    return result, len(selected)
