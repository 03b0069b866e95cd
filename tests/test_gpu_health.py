"""The GPU health alerts (components/kubernetes/gpu_health.py) under `promtool test rules`.

A GPU that fell off the bus, one with a failed row remap and one that remapped rows after an
uncorrectable error each raise their alert, named after the node; an application's XID on a
healthy GPU raises nothing. promtool comes from the e2e tool cache, as in test_rule_tests.py.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from components.kubernetes.gpu_health import prometheus_rule_spec
from e2e import dcgm
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


def test_the_alerts_read_series_the_exporter_emits_by_default() -> None:
    exprs = " ".join(a["expr"] for a in prometheus_rule_spec()["groups"][0]["rules"])
    assert set(re.findall(r"DCGM_FI_\w+", exprs)) <= {c.name for c in dcgm.default_counters()}
