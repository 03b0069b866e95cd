"""Dashboards: what the platform's Grafana shows, and the usage and cost rules they read.

- A PrometheusRule `<platform>-gpu-usage`: GPUs provisioned, allocated and busy per tenant
  and pool, their price per GPU-hour by market and the cost rates (gpuplat/usage.py). A rule
  object of its own, beside Autoscaling's: those rules drive scaling, these only report.
- One ConfigMap per dashboard (gpuplat/dashboards/: the fleet, each pool, each tenant) in the
  monitoring namespace, labelled as kube-prometheus-stack's Grafana sidecar looks for them
  (`grafana.sidecar.dashboards.label` / `labelValue`: `grafana_dashboard: "1"`, the chart's
  defaults, searched in every namespace): Grafana loads them without a restart and, with the
  chart's `allowUiUpdates: false`, nobody edits them away from the code.
- On aws, a ServiceMonitor `<platform>-karpenter` for Karpenter's metrics Service (the chart's
  `http-metrics` port): the interruption and repair panels read its series. Not the chart's own
  `serviceMonitor.enabled`: its template renders the monitor only when the monitoring CRDs exist
  at install time (`.Capabilities.APIVersions.Has "monitoring.coreos.com/v1"`), and Karpenter is
  installed before kube-prometheus-stack, so a new cluster would silently get none. Kueue's
  chart has no such condition: Scheduling turns its `enablePrometheus` on and waits for the CRDs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpuplat import usage
from gpuplat.catalog import CHARTS
from gpuplat.dashboards import dashboards
from gpuplat.dashboards.series import runs_karpenter
from gpuplat.model import Platform
from gpuplat.plan import Plan

from .._common import child_opts
from ._common import meta, prefix
from .observability import MONITORING_NAMESPACE, monitoring_object

# kube-prometheus-stack values.yaml: grafana.sidecar.dashboards.label / labelValue.
SIDECAR_LABEL = {"grafana_dashboard": "1"}
# Karpenter's chart: templates/service.yaml's port and _helpers.tpl's selectorLabels (name: the
# chart's, instance: the release's; components/aws/karpenter.py installs release "karpenter").
KARPENTER_METRICS_PORT = "http-metrics"


def karpenter_service_monitor_spec() -> dict[str, Any]:
    chart = CHARTS["karpenter"]
    return {
        "selector": {"matchLabels": {"app.kubernetes.io/name": chart.chart, "app.kubernetes.io/instance": chart.key}},
        "namespaceSelector": {"matchNames": [chart.namespace]},
        "endpoints": [{"port": KARPENTER_METRICS_PORT, "path": "/metrics"}],
    }


@dataclass(frozen=True)
class DashboardsArgs:
    model: Platform
    plan: Plan
    provider: pulumi.ProviderResource
    # The release that installs the monitoring.coreos.com CRDs and Grafana (Observability.release).
    monitoring: pulumi.Resource | None = None
    depends_on: Sequence[pulumi.Resource] = field(default_factory=lambda: ())


def config_map_data(model: Platform, plan: Plan) -> dict[str, dict[str, str]]:
    """Dashboard key -> the ConfigMap's data: one JSON file, keys sorted so the object is stable."""
    return {
        d.key: {f"{prefix(model)}-{d.key}.json": json.dumps(d.model, sort_keys=True, indent=1)}
        for d in dashboards(model, plan)
    }


class Dashboards(pulumi.ComponentResource):
    dashboards: list[str]

    def __init__(self, name: str, args: DashboardsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:Dashboards", name, None, opts)
        model, provider = args.model, args.provider
        deps = [*args.depends_on, *([args.monitoring] if args.monitoring is not None else [])]
        rules = usage.prometheus_rule_spec(model, args.plan)
        monitoring_object(
            self, f"{name}-usage-rules", "PrometheusRule", f"{prefix(model)}-gpu-usage", rules, provider,
            args.monitoring, args.depends_on,
        )  # fmt: skip
        if runs_karpenter(model):
            monitoring_object(
                self, f"{name}-karpenter-monitor", "ServiceMonitor", f"{prefix(model)}-karpenter",
                karpenter_service_monitor_spec(), provider, args.monitoring, args.depends_on,
            )  # fmt: skip
        self.dashboards = []
        for key, data in config_map_data(model, args.plan).items():
            k8s.core.v1.ConfigMap(
                f"{name}-{key}",
                metadata=meta(f"{prefix(model)}-dashboard-{key}", MONITORING_NAMESPACE, SIDECAR_LABEL),
                data=data,
                opts=child_opts(self, provider, deps),
            )
            self.dashboards.append(key)
        self.register_outputs({"dashboards": self.dashboards})
