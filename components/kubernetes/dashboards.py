"""Dashboards: what the platform's Grafana shows, and the usage and cost rules they read.

- A PrometheusRule `<platform>-gpu-usage`: GPUs provisioned, allocated and busy per tenant
  and pool, their price per GPU-hour by market and the cost rates (gpuplat/usage.py). A rule
  object of its own, beside Autoscaling's: those rules drive scaling, these only report.
- One ConfigMap per dashboard (gpuplat/dashboards/: the fleet, each pool, each tenant) in the
  monitoring namespace, labelled as kube-prometheus-stack's Grafana sidecar looks for them
  (`grafana.sidecar.dashboards.label` / `labelValue`: `grafana_dashboard: "1"`, the chart's
  defaults, searched in every namespace): Grafana loads them without a restart and, with the
  chart's `allowUiUpdates: false`, nobody edits them away from the code.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from gpuplat import usage
from gpuplat.dashboards import dashboards
from gpuplat.model import Platform
from gpuplat.plan import Plan

from .._common import child_opts
from ._common import meta, prefix
from .observability import MONITORING_NAMESPACE

# kube-prometheus-stack values.yaml: grafana.sidecar.dashboards.label / labelValue.
SIDECAR_LABEL = {"grafana_dashboard": "1"}


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
        k8s.apiextensions.CustomResource(
            f"{name}-usage-rules",
            api_version="monitoring.coreos.com/v1",
            kind="PrometheusRule",
            metadata=meta(f"{prefix(model)}-gpu-usage", MONITORING_NAMESPACE),
            spec=usage.prometheus_rule_spec(model, args.plan),
            opts=child_opts(self, provider, deps),
        )
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
