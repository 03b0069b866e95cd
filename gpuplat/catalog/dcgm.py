# pyright: strict
"""The DCGM exporter's counter list the platform gives the GPU Operator.

Without a list of its own, the GPU Operator (v26.7.0, its dcgm-exporter DaemonSet asset)
runs the exporter with the image's `/etc/dcgm-exporter/dcp-metrics-included.csv`. That list
leaves the ECC and NVLink error counters commented out, so a GPU with double-bit ECC errors
or a retraining NVLink is invisible to Prometheus. The platform's list is that default's
enabled counters, every one kept (the autoscaling rules, the dashboards and the GpuHealth
alerts read several of them), plus the health counters below marked `health`.

The field names, types and help texts are dcgm-exporter's (etc/dcp-metrics-included.csv and
etc/default-counters.csv of NVIDIA/dcgm-exporter; the chart's values.yaml lists the same
catalogue). The operator mounts the ConfigMap's `dcgm-metrics.csv` key at
/etc/dcgm-exporter/dcgm-metrics.csv and points the exporter at it (its MetricsConfigFileName).
"""

from __future__ import annotations

from dataclasses import dataclass

METRICS_CONFIG_KEY = "dcgm-metrics.csv"


@dataclass(frozen=True)
class DcgmCounter:
    field: str  # the DCGM field, also the Prometheus metric name
    kind: str  # gauge | counter | label (a label on every other metric)
    help: str
    health: bool = False  # added to the image's default list for fault detection


COUNTERS: tuple[DcgmCounter, ...] = (
    DcgmCounter("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    DcgmCounter("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    DcgmCounter("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    DcgmCounter("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    DcgmCounter("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    DcgmCounter("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    DcgmCounter("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    DcgmCounter("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    DcgmCounter("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    DcgmCounter("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."),
    DcgmCounter("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),
    DcgmCounter("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    DcgmCounter("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    DcgmCounter("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    DcgmCounter("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors.", True),
    DcgmCounter("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors.", True),
    DcgmCounter("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter", "Total number of single-bit persistent ECC errors.", True),
    DcgmCounter("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter", "Total number of double-bit persistent ECC errors.", True),
    DcgmCounter("DCGM_FI_DEV_RETIRED_SBE", "counter", "Total number of retired pages due to single-bit errors."),
    DcgmCounter("DCGM_FI_DEV_RETIRED_DBE", "counter", "Total number of retired pages due to double-bit errors."),
    DcgmCounter("DCGM_FI_DEV_RETIRED_PENDING", "counter", "Total number of pages pending retirement.", True),
    DcgmCounter(
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
        "counter",
        "Total number of NVLink flow-control CRC errors.",
        True,
    ),
    DcgmCounter(
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink data CRC errors.", True
    ),
    DcgmCounter("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink retries.", True),
    DcgmCounter(
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink recovery errors.", True
    ),
    DcgmCounter(
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "Total number of NVLink bandwidth counters for all lanes."
    ),
    DcgmCounter("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU License status"),
    DcgmCounter(
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors"
    ),
    DcgmCounter("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors"),
    DcgmCounter("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"),
    DcgmCounter("DCGM_FI_DRIVER_VERSION", "label", "Driver Version"),
    DcgmCounter("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    DcgmCounter("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    DcgmCounter(
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "gauge",
        "Ratio of cycles the device memory interface is active sending or receiving data.",
    ),
    DcgmCounter(
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "gauge",
        "The rate of data transmitted over the PCIe bus - including "
        "both protocol headers and data payloads - in bytes per second.",
    ),
    DcgmCounter(
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        "gauge",
        "The rate of data received over the PCIe bus - including "
        "both protocol headers and data payloads - in bytes per second.",
    ),
)


def metrics_csv() -> str:
    """The list in dcgm-exporter's collectors format: `FIELD, type, help`, `#` for comments."""
    lines = [
        "# gpuplat: the GPU Operator's default (dcp-metrics-included.csv) plus ECC, NVLink and",
        "# page-retirement error counters for the GpuHealth alerts.",
        "# DCGM FIELD, Prometheus metric type, help message",
    ]
    lines += [f"{c.field}, {c.kind}, {c.help}" for c in COUNTERS]
    return "\n".join(lines) + "\n"


def parse_metrics_csv(text: str) -> tuple[DcgmCounter, ...]:
    """The counters a collectors file enables (its uncommented `FIELD, type, help` lines)."""
    found: list[DcgmCounter] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        field, kind, help_text = (part.strip() for part in line.split(",", 2))
        found.append(DcgmCounter(field, kind, help_text))
    return tuple(found)
