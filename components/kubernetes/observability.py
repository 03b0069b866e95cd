"""Observability: kube-prometheus-stack (Prometheus Operator, Prometheus, Alertmanager, Grafana).

Prometheus keeps `observability.retention` and selects every ServiceMonitor, PodMonitor and
PrometheusRule in the cluster rather than only those labelled with this release: the GPU
exporter's ServiceMonitor and the GPU recording rules (Autoscaling) and other charts' monitors
are not this release's. The release also installs the monitoring.coreos.com CRDs, so the
custom resources of other components depend on `release`.

TSDB storage stays the chart's emptyDir: a persistent volume needs a StorageClass the spec
does not name for Prometheus (EKS has no default class without the EBS CSI driver).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpuplat.catalog import CHARTS
from gpuplat.model import Platform
from gpuplat.plan import Plan

from ._common import chart_release

MONITORING_NAMESPACE = CHARTS["kube-prometheus-stack"].namespace


@dataclass(frozen=True)
class ObservabilityArgs:
    model: Platform
    plan: Plan
    provider: pulumi.ProviderResource
    depends_on: Sequence[pulumi.Resource] = field(default_factory=lambda: ())


def prometheus_stack_values(model: Platform) -> dict[str, Any]:
    return {
        "prometheus": {
            "prometheusSpec": {
                "retention": model.observability.retention,
                "serviceMonitorSelectorNilUsesHelmValues": False,
                "podMonitorSelectorNilUsesHelmValues": False,
                "ruleSelectorNilUsesHelmValues": False,
            }
        }
    }


class Observability(pulumi.ComponentResource):
    namespace: str
    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: ObservabilityArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:Observability", name, None, opts)
        self.namespace = MONITORING_NAMESPACE
        self.release = chart_release(
            self,
            name,
            "kube-prometheus-stack",
            prometheus_stack_values(args.model),
            args.provider,
            # node-exporter mounts the host's file systems and uses its network and PID namespace.
            pod_security="privileged",
            depends_on=args.depends_on,
        )
        self.register_outputs({"namespace": self.namespace, "retention": args.model.observability.retention})
