"""GpuHealth: alerts on the GPU faults the DCGM exporter reports, per node and GPU.

A PrometheusRule `<platform>-gpu-health` in the monitoring namespace, on the series of the
platform's DCGM counter list (gpuplat/catalog/dcgm.py, which GpuSharing gives the exporter:
XID, remapped rows, and the ECC and NVLink error counters the exporter's default leaves out).
The series carry `node` and `pool` (Autoscaling's ServiceMonitor relabels them), so an alert
names the node to fence. What acts on a failed node (node repair, requeueing) is in
docs/health.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi

from gpuplat.model import Platform

from ._common import prefix
from .observability import monitoring_object

# XIDs after which the GPU's results or its collectives cannot be trusted until it is reset or
# replaced (NVIDIA's XID catalog): 48 double-bit ECC, 63/64 row remapping event / failure,
# 74 NVLink, 79 fallen off the bus, 92 high single-bit ECC rate, 94/95 contained / uncontained
# ECC, 119/120 GSP timeout / error.
FATAL_XIDS = (48, 63, 64, 74, 79, 92, 94, 95, 119, 120)
BY_DEVICE = "node, pool, gpu"
# Link errors NVLink corrects by retransmitting; a link that keeps needing it is degrading.
NVLINK_CORRECTED = (
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
)


def _alert(name: str, expr: str, severity: str, summary: str, description: str) -> dict[str, Any]:
    return {
        "alert": name,
        "expr": expr,
        "labels": {"severity": severity},
        "annotations": {"summary": summary, "description": description},
    }


def prometheus_rule_spec() -> dict[str, Any]:
    """Six alerts, each per node and GPU; the value of an XID alert is the XID's code."""
    last_xid = "DCGM_FI_DEV_XID_ERRORS"  # a gauge: the code of the GPU's last XID, 0 for none
    fatal = " or ".join(f"{last_xid} == {code}" for code in FATAL_XIDS)
    where = "GPU {{ $labels.gpu }} of node {{ $labels.node }} (pool {{ $labels.pool }})"
    rules = [
        _alert(
            "GpuFatalXid",
            f"max by ({BY_DEVICE}) ({fatal})",
            "critical",
            f"{where} reported fatal XID {{{{ $value }}}}",
            "Its results and collectives cannot be trusted until the GPU is reset or the node "
            "replaced; jobs on the node should be moved (docs/health.md).",
        ),
        _alert(
            "GpuRowRemapFailure",
            f"max by ({BY_DEVICE}) (DCGM_FI_DEV_ROW_REMAP_FAILURE) > 0",
            "critical",
            f"{where} failed to remap a memory row",
            "The GPU has run out of spare memory rows: the node needs its GPU replaced.",
        ),
        _alert(
            "GpuUncorrectableRowsRemapped",
            f"max by ({BY_DEVICE}) (increase(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS[1h])) > 0",
            "warning",
            f"{where} remapped rows after uncorrectable memory errors",
            "The remapping takes effect at the next GPU reset; until then the GPU may fail again.",
        ),
        _alert(
            "GpuDoubleBitEccErrors",
            f"max by ({BY_DEVICE}) (increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m])) > 0",
            "critical",
            f"{where} had uncorrectable (double-bit) ECC errors",
            "Memory the running job read may be wrong; its results since its last checkpoint "
            "cannot be trusted until the GPU is reset (docs/health.md).",
        ),
        _alert(
            "GpuNvlinkRecoveryErrors",
            f"max by ({BY_DEVICE}) (increase(DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL[10m])) > 0",
            "critical",
            f"{where} had to recover an NVLink",
            "A link went down and retrained: collectives over it stall or fail; move the "
            "node's multi-GPU jobs and have the node checked.",
        ),
        _alert(
            "GpuNvlinkCorrectedErrors",
            " or ".join(f"max by ({BY_DEVICE}) (increase({series}[1h])) > 0" for series in NVLINK_CORRECTED),
            "warning",
            f"{where} had NVLink CRC errors or retries",
            "NVLink corrected them by retransmitting, which slows collectives; a link that "
            "keeps needing it is degrading.",
        ),
    ]
    return {"groups": [{"name": "gpu-health", "rules": rules}]}


# The critical alerts, on which the GPU fencer taints the node they name (gpu_fence.py): a GPU
# whose results cannot be trusted. The warnings (remapped rows, corrected NVLink errors) only notify.
FENCING_ALERTS = tuple(
    rule["alert"]
    for group in prometheus_rule_spec()["groups"]
    for rule in group["rules"]
    if rule["labels"]["severity"] == "critical"
)


@dataclass(frozen=True)
class GpuHealthArgs:
    model: Platform
    provider: pulumi.ProviderResource
    # The release that installs the monitoring.coreos.com CRDs (Observability.release).
    monitoring: pulumi.Resource | None = None
    depends_on: Sequence[pulumi.Resource] = field(default_factory=lambda: ())


class GpuHealth(pulumi.ComponentResource):
    rule_name: str

    def __init__(self, name: str, args: GpuHealthArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:GpuHealth", name, None, opts)
        self.rule_name = f"{prefix(args.model)}-gpu-health"
        monitoring_object(
            self, f"{name}-rules", "PrometheusRule", self.rule_name, prometheus_rule_spec(), args.provider,
            args.monitoring, args.depends_on,
        )  # fmt: skip
        self.register_outputs({"ruleName": self.rule_name})
