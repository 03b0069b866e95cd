"""Observability: kube-prometheus-stack (Prometheus Operator, Prometheus, Alertmanager, Grafana).

Prometheus keeps `observability.retention` and selects every ServiceMonitor, PodMonitor and
PrometheusRule in the cluster rather than only those labelled with this release: the GPU
exporter's ServiceMonitor and the GPU recording rules (Autoscaling) and other charts' monitors
are not this release's. The release also installs the monitoring.coreos.com CRDs, so the
custom resources of other components depend on `release`.

TSDB storage: a persistent volume (the Prometheus StatefulSet's volumeClaimTemplate), so the
retention survives a pod restart or a node replacement instead of dying with an emptyDir.
- aws: StorageClass `<platform>-ebs-gp3`, encrypted gp3 through the EBS CSI add-on (Cluster
  installs it), bound where the pod is scheduled (EBS volumes live in one zone), expandable,
  Retain (deleting the claim does not delete the metrics).
- kubernetes: the claim names no class, so the cluster's default StorageClass serves it; a
  cluster without a default class leaves the claim, and Prometheus, Pending.
Size, from the retention (`prometheus_volume_gib`), after the Prometheus docs' formula
retention seconds x samples per second x bytes per sample, assuming: 50k series for the
control plane, kube-state-metrics and the platform's controllers, 5k per node (node
exporter, kubelet/cAdvisor for its pods, DCGM for 8 GPUs) over every pool's maximum plus 4
other nodes, one sample per series per 30 s (the chart's scrape interval), 2 bytes per
sample (the docs give 1-2) and 1.5x for the WAL and compaction; at least 20 GiB. If the
fleet emits more than that, `retentionSize` (85 % of the volume) makes Prometheus drop its
oldest blocks before the disk fills, so the retention shortens instead of Prometheus failing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpuplat.catalog import CHARTS
from gpuplat.model import Platform, Provider, duration_seconds

from .._common import child_opts
from ._common import helm_release, meta, prefix

MONITORING_NAMESPACE = CHARTS["kube-prometheus-stack"].namespace
# kube-prometheus-stack's Prometheus Service: "<fullname>-prometheus" on prometheus.service.port
# (9090). The fullname is the release name when that contains the chart name, and the platform
# installs each chart under its own name.
PROMETHEUS_URL = f"http://kube-prometheus-stack-prometheus.{MONITORING_NAMESPACE}.svc:9090"
MONITORING_API = "monitoring.coreos.com/v1"


@dataclass(frozen=True)
class ObservabilityArgs:
    model: Platform
    provider: pulumi.ProviderResource
    depends_on: Sequence[pulumi.Resource] = field(default_factory=lambda: ())


BASE_SERIES = 50_000
SERIES_PER_NODE = 5_000
OTHER_NODES = 4  # aws: the system node group's maximum; kubernetes: nodes outside the pools
SCRAPE_SECONDS = 30
BYTES_PER_SAMPLE = 2
HEADROOM = 1.5
MIN_VOLUME_GIB = 20
RETENTION_SIZE_SHARE = 0.85


def prometheus_volume_gib(model: Platform) -> int:
    nodes = sum(p.nodes.max for p in model.pools) + OTHER_NODES
    samples_per_second = (BASE_SERIES + SERIES_PER_NODE * nodes) / SCRAPE_SECONDS
    size = duration_seconds(model.observability.retention) * samples_per_second * BYTES_PER_SAMPLE * HEADROOM
    return max(MIN_VOLUME_GIB, math.ceil(size / 2**30))


def prometheus_storage_class(model: Platform) -> str | None:
    """The class of Prometheus's volume: ours on aws, the cluster default (None) on kubernetes."""
    return f"{prefix(model)}-ebs-gp3" if model.target.provider is Provider.AWS else None


def prometheus_stack_values(model: Platform) -> dict[str, Any]:
    gib = prometheus_volume_gib(model)
    claim: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": f"{gib}Gi"}}}
    storage_class = prometheus_storage_class(model)
    if storage_class is not None:
        claim["storageClassName"] = storage_class
    return {
        "prometheus": {
            "prometheusSpec": {
                "retention": model.observability.retention,
                # Prometheus's GB are GiB (base 2), like the claim's Gi.
                "retentionSize": f"{math.floor(gib * RETENTION_SIZE_SHARE)}GB",
                "storageSpec": {"volumeClaimTemplate": {"spec": claim}},
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
        storage_class = prometheus_storage_class(args.model)
        depends_on = list(args.depends_on)
        if storage_class is not None:
            depends_on.append(
                k8s.storage.v1.StorageClass(
                    f"{name}-ebs-gp3",
                    metadata=meta(storage_class),
                    provisioner="ebs.csi.aws.com",
                    parameters={"type": "gp3", "encrypted": "true", "csi.storage.k8s.io/fstype": "ext4"},
                    reclaim_policy="Retain",
                    volume_binding_mode="WaitForFirstConsumer",
                    allow_volume_expansion=True,
                    opts=child_opts(self, args.provider, args.depends_on),
                )
            )
        self.release = helm_release(
            self,
            name,
            "kube-prometheus-stack",
            prometheus_stack_values(args.model),
            provider=args.provider,
            # node-exporter mounts the host's file systems and uses its network and PID namespace.
            pod_security="privileged",
            depends_on=depends_on,
        )
        self.register_outputs({"namespace": self.namespace, "retention": args.model.observability.retention})


def monitoring_object(
    parent: pulumi.Resource,
    resource_name: str,
    kind: str,
    name: str,
    spec: dict[str, Any],
    provider: pulumi.ProviderResource,
    monitoring: pulumi.Resource | None,
    depends_on: Sequence[pulumi.Resource] = (),
) -> k8s.apiextensions.CustomResource:
    """A ServiceMonitor or PrometheusRule `name` in the monitoring namespace, made after
    `depends_on` and `monitoring` (Observability.release, which installs their CRDs)."""
    deps = [*depends_on, *([monitoring] if monitoring is not None else [])]
    return k8s.apiextensions.CustomResource(
        resource_name,
        api_version=MONITORING_API,
        kind=kind,
        metadata=meta(name, MONITORING_NAMESPACE),
        spec=spec,
        opts=child_opts(parent, provider, deps),
    )
