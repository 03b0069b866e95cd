"""What the DCGM exporter reports for a GPU: its metric names, types and labels, and the values a
device at a given load reports.

The names and types are dcgm-exporter's default counter list, as its chart's values.yaml
documents it (the `customMetrics` example, read in place from the shared upstream data), so a
rule reading a metric the exporter does not emit finds nothing here either. Utilisation-type
gauges follow the load (percent gauges in %, DCP ratios in 0..1), framebuffer used follows the
memory share, the rest take plausible constant or load-following values; counters only grow.
A MIG device reports no DCGM_FI_DEV_GPU_UTIL (NVML does not measure it per MIG instance: the
DCP engine-activity ratio stands in, which is why the platform reads it on MIG pools).
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from e2e import upstream

VALUES = Path("charts") / "dcgm-exporter" / "values.yaml"
_LINE = re.compile(r"^\s*#\s*(DCGM_FI_[A-Z0-9_]+)\s*,\s*(gauge|counter)\s*,\s*(.+?)\s*$")
# Not measured on a MIG device.
NOT_ON_MIG = frozenset({"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_ENC_UTIL",
                        "DCGM_FI_DEV_DEC_UTIL"})
DRIVER = "580.95.05"


@dataclass(frozen=True)
class Counter:
    name: str
    kind: str  # gauge | counter
    help: str

    @property
    def percent(self) -> bool:
        return "(in %)" in self.help


@cache
def default_counters(path: Path | None = None) -> tuple[Counter, ...]:
    """dcgm-exporter's default counters, from its chart's values.yaml (upstream data, or `path`)."""
    path = path or upstream.resolve(VALUES.as_posix())
    found = tuple(Counter(*m.groups()) for m in map(_LINE.match, path.read_text().splitlines()) if m)
    if not found:
        raise ValueError(f"{path}: no DCGM counter list in the customMetrics example")
    return found


@dataclass(frozen=True)
class Device:
    """One device the exporter reports: a GPU, or a MIG instance of one."""

    gpu: int
    model: str
    fb_mib: int
    hostname: str
    mig_profile: str = ""
    mig_instance: int = 0

    def labels(self) -> dict[str, str]:
        uuid = f"GPU-{zlib.crc32(f'{self.hostname}/{self.gpu}'.encode()):08x}-0000-4000-8000-00000000e2e0"
        found = {"gpu": str(self.gpu), "UUID": uuid, "pci_bus_id": f"00000000:{0x18 + self.gpu * 16:02X}:00.0",
                 "device": f"nvidia{self.gpu}", "modelName": self.model, "Hostname": self.hostname,
                 "DCGM_FI_DRIVER_VERSION": DRIVER}
        if self.mig_profile:
            found["GPU_I_PROFILE"] = self.mig_profile
            found["GPU_I_ID"] = str(self.mig_instance)
        return found


def value(counter: Counter, device: Device, load: float, memory: float, seconds: float) -> float | None:
    """What `device` reports for `counter` at `load` (busy share, 0..1) with `memory` (share of its
    framebuffer used), `seconds` after it started; None for a counter the device does not report.
    At most 6 decimals, as an exporter prints them."""
    found = _value(counter, device, load, memory, seconds)
    return None if found is None else round(found, 6)


def _value(counter: Counter, device: Device, load: float, memory: float, seconds: float) -> float | None:
    name = counter.name
    if device.mig_profile and name in NOT_ON_MIG:
        return None
    if name == "DCGM_FI_DEV_FB_USED":
        return round(device.fb_mib * memory)
    if name == "DCGM_FI_DEV_FB_FREE":
        return device.fb_mib - round(device.fb_mib * memory)
    if name in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE"):
        share = load
    elif name in ("DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL") or counter.kind == "counter":
        share = 0.0
    elif "TEMP" in name:
        return 30.0 + 45.0 * load
    elif name == "DCGM_FI_DEV_POWER_USAGE":
        return 70.0 + 600.0 * load
    elif name.endswith("_CLOCK"):
        return 345.0 + 1635.0 * load
    elif name.startswith("DCGM_FI_PROF_PCIE"):
        return 2.0e9 * load
    elif name in ("DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_VGPU_LICENSE_STATUS", "DCGM_FI_DEV_ROW_REMAP_FAILURE"):
        return 0.0
    else:  # the other activity ratios and percentages: a share of the busy time
        share = 0.6 * load
    if counter.kind == "counter":
        return float(int(seconds)) if name == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" else 0.0
    return round(100.0 * share, 3) if counter.percent else round(share, 6)
