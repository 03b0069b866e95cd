"""The GPU health alerts (components/kubernetes/gpu_health.py) under `promtool test rules`.

A GPU that fell off the bus, one with a failed row remap, one that remapped rows after an
uncorrectable error, one with double-bit ECC errors, one whose NVLink had to recover and one
whose NVLink keeps retransmitting each raise their alert, named after the node; an
application's XID, corrected single-bit ECC errors and old error counts that stopped growing
raise nothing. promtool comes from the e2e tool cache, as in test_rule_tests.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from components.kubernetes.gpu_health import prometheus_rule_spec
from tests.test_rule_tests import promtool

DESCRIPTIONS = {a["alert"]: a["annotations"]["description"] for a in prometheus_rule_spec()["groups"][0]["rules"]}


def _series(name: str, node: str, values: str) -> dict[str, str]:
    return {"series": f'{name}{{node="{node}",pool="train",gpu="0",Hostname="{node}"}}', "values": values}


def _expected(alert: str, node: str, severity: str, summary: str) -> dict[str, Any]:
    return {
        "exp_labels": {"node": node, "pool": "train", "gpu": "0", "severity": severity},
        "exp_annotations": {
            "summary": f"GPU 0 of node {node} (pool train) {summary}",
            "description": DESCRIPTIONS[alert],
        },
    }


def _run(tmp_path: Path, groups: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    tests = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": [
                _series("DCGM_FI_DEV_XID_ERRORS", "fell-off-bus", "0 0 79x20"),
                _series("DCGM_FI_DEV_XID_ERRORS", "app-fault", "13x20"),  # a job's own fault: no alert
                _series("DCGM_FI_DEV_ROW_REMAP_FAILURE", "no-spare-rows", "0 1x20"),
                _series("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "remapped", "0 0 1x20"),
                _series("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "app-fault", "2x20"),  # old, unchanged
                _series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "bad-memory", "0 0 0 2x20"),
                _series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "app-fault", "3x20"),  # before the window
                _series("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "app-fault", "0+5x20"),  # corrected: no alert
                _series("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "link-down", "0 0 1x20"),
                _series("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "link-flaky", "0 0 0 0 4x20"),
                _series("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "link-flaky", "0 0 0 9x20"),
                _series("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "app-fault", "7x20"),  # unchanged
            ],
            "alert_rule_test": [
                {"eval_time": "10m", "alertname": "GpuFatalXid",
                 "exp_alerts": [_expected("GpuFatalXid", "fell-off-bus", "critical", "reported fatal XID 79")]},
                {"eval_time": "10m", "alertname": "GpuRowRemapFailure",
                 "exp_alerts": [_expected("GpuRowRemapFailure", "no-spare-rows", "critical",
                                          "failed to remap a memory row")]},
                {"eval_time": "10m", "alertname": "GpuUncorrectableRowsRemapped",
                 "exp_alerts": [_expected("GpuUncorrectableRowsRemapped", "remapped", "warning",
                                          "remapped rows after uncorrectable memory errors")]},
                {"eval_time": "10m", "alertname": "GpuDoubleBitEccErrors",
                 "exp_alerts": [_expected("GpuDoubleBitEccErrors", "bad-memory", "critical",
                                          "had uncorrectable (double-bit) ECC errors")]},
                {"eval_time": "20m", "alertname": "GpuDoubleBitEccErrors", "exp_alerts": []},  # 10 min on
                {"eval_time": "10m", "alertname": "GpuNvlinkRecoveryErrors",
                 "exp_alerts": [_expected("GpuNvlinkRecoveryErrors", "link-down", "critical",
                                          "had to recover an NVLink")]},
                {"eval_time": "10m", "alertname": "GpuNvlinkCorrectedErrors",
                 "exp_alerts": [_expected("GpuNvlinkCorrectedErrors", "link-flaky", "warning",
                                          "had NVLink CRC errors or retries")]},
            ],
        }],
    }
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests))
    return subprocess.run([str(promtool()), "test", "rules", "tests.yaml"], cwd=tmp_path, capture_output=True,
                          text=True, check=False)


def test_each_gpu_fault_raises_its_alert_and_an_application_fault_none(tmp_path: Path) -> None:
    result = _run(tmp_path, prometheus_rule_spec()["groups"])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-1000:]


def test_the_cases_catch_an_alert_that_ignores_which_xid(tmp_path: Path) -> None:
    groups = prometheus_rule_spec()["groups"]
    fatal = groups[0]["rules"][0]
    fatal["expr"] = "max by (node, pool, gpu) (DCGM_FI_DEV_XID_ERRORS) > 0"  # any XID, the job's own too
    assert _run(tmp_path, groups).returncode != 0


def test_the_cases_catch_an_ecc_alert_on_corrected_errors(tmp_path: Path) -> None:
    groups = prometheus_rule_spec()["groups"]
    ecc = next(r for r in groups[0]["rules"] if r["alert"] == "GpuDoubleBitEccErrors")
    ecc["expr"] = ecc["expr"].replace("DBE", "SBE")
    assert _run(tmp_path, groups).returncode != 0

