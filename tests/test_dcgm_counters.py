"""The DCGM counter list the platform gives the exporter (gpuplat/catalog/dcgm.py).

Every field is one dcgm-exporter knows, with its type (the exporter's catalogue in its chart's
values.yaml, upstream data); every DCGM series a rule, an alert or a dashboard of the platform
reads is enabled in it; the file the ConfigMap carries parses back to the same list.
"""

from __future__ import annotations

import re

import pytest

from components.kubernetes.gpu_health import prometheus_rule_spec
from e2e import dcgm
from gpuplat import scaling
from gpuplat.catalog.dcgm import COUNTERS, metrics_csv, parse_metrics_csv
from gpuplat.dashboards import dashboards
from tests.support_k8s import STACKS, recorded

ENABLED = {c.field for c in COUNTERS if c.kind != "label"}


def test_every_series_is_a_dcgm_exporter_field_of_the_same_type() -> None:
    catalogue = {c.name: c.kind for c in dcgm.default_counters()}
    for counter in COUNTERS:
        if counter.kind == "label":
            assert counter.field == "DCGM_FI_DRIVER_VERSION"  # the one label field the default list keeps
            continue
        assert catalogue.get(counter.field) == counter.kind, counter.field


def test_the_file_parses_back_to_the_list_and_names_each_field_once() -> None:
    parsed = parse_metrics_csv(metrics_csv())
    assert [(c.field, c.kind, c.help) for c in parsed] == [(c.field, c.kind, c.help) for c in COUNTERS]
    assert len({c.field for c in COUNTERS}) == len(COUNTERS)


def test_the_health_counters_are_enabled() -> None:
    health = {c.field for c in COUNTERS if c.health}
    assert {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
            "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"} <= health <= ENABLED


def test_the_autoscaling_rules_and_the_alerts_read_enabled_series_only() -> None:
    assert {m.series for m in scaling.DCGM_METRICS} <= ENABLED
    exprs = " ".join(r["expr"] for r in prometheus_rule_spec()["groups"][0]["rules"])
    assert set(re.findall(r"DCGM_FI_\w+", exprs)) <= ENABLED


@pytest.mark.parametrize("which", STACKS)
def test_the_dashboards_read_enabled_series_only(which: str) -> None:
    model, plan, _ = recorded(which)
    exprs = " ".join(str(d.model) for d in dashboards(model, plan))
    read = set(re.findall(r"DCGM_FI_\w+", exprs))
    assert read and read <= ENABLED
