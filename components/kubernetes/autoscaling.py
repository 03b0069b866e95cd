"""Autoscaling: per pool, GPU metrics -> window averages -> pressure -> policy -> the pool's node count.

Scraping: one ServiceMonitor for the GPU Operator's DCGM exporter (the operator's own is off,
see GpuSharing). `honorLabels` keeps the exporter's `namespace` / `pod` / `container` labels,
which name the workload using the GPU, instead of overwriting them with the exporter pod's.
`attachMetadata.node` gives the scrape the node's labels, and a relabeling copies the pool
label onto every series as `pool`, so a pool's GPUs are one label matcher away: no join with
kube-state-metrics (whose node labels are off by default) and no hostname lists to maintain.
Karpenter's capacity type is copied likewise as `capacity_type`: it prices a GPU (usage.py).

Recording rules (one group, in evaluation order; the metrics, their PromQL and the combination
are gpuplat/scaling.py's, which the simulator reads too): per pool the window average of every
collected DCGM metric, the pending GPU requests, utilisation
(`pool:gpu_utilization:ratio_avg_<window>`: DCGM_FI_DEV_GPU_UTIL / 100, or
DCGM_FI_PROF_GR_ENGINE_ACTIVE on MIG pools, where GPU_UTIL is not reported per MIG device),
framebuffer used as a ratio, the pressure (their max) and the scaling signal
(`pool:gpu_floor_signal:ratio_avg_<window>`: the policy with hysteresis).
Policy -> nodes: KEDA and the capacity floor (capacity_floor.py) keep between `nodes.min` and
`nodes.max` nodes per pool; the floor's docstring has the arithmetic.
Alerts: waste when the average stays below `scaleDownBelow` for an hour, saturation when it
stays above `scaleUpAbove` for the window (the floor may already be at `nodes.max`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.conventions import CAPACITY_TYPE_LABEL, POOL_LABEL
from gpuplat import scaling, usage
from gpuplat.catalog import CHARTS
from gpuplat.model import GpuNodePool, Platform
from gpuplat.plan import Plan

from .._common import child_opts
from ._common import PSA_ENFORCE, helm_release, meta, prefix, system_namespace
from .capacity_floor import (
    PRIORITY,
    deployment_spec,
    floor_bounds,
    floor_name,
    priority_class_name,
    scaled_object_spec,
    signal_expr,
)
from .observability import monitoring_object

WASTE_FOR = "1h"
# The operator's exporter Service (gpu-operator assets/state-dcgm-exporter/0400_service.yaml).
_EXPORTER_SELECTOR = {"app": "nvidia-dcgm-exporter"}
_EXPORTER_PORT = "gpu-metrics"


@dataclass(frozen=True)
class AutoscalingArgs:
    model: Platform
    plan: Plan
    provider: pulumi.ProviderResource
    # The release that installs the monitoring.coreos.com CRDs (Observability.release).
    monitoring: pulumi.Resource | None = None
    depends_on: Sequence[pulumi.Resource] = field(default_factory=lambda: ())
    # Earlier names of the system namespace resource (see side.py).
    namespace_aliases: Sequence[pulumi.Alias] = field(default_factory=lambda: ())


def _meta_label(label: str) -> str:
    """Prometheus' name for a node label in service-discovery metadata."""
    return "__meta_kubernetes_node_label_" + "".join(c if c.isalnum() else "_" for c in label)


def service_monitor_spec() -> dict[str, Any]:
    return {
        "attachMetadata": {"node": True},
        "selector": {"matchLabels": dict(_EXPORTER_SELECTOR)},
        "namespaceSelector": {"matchNames": [CHARTS["gpu-operator"].namespace]},
        "endpoints": [
            {
                "port": _EXPORTER_PORT,
                "path": "/metrics",
                "interval": "15s",
                "honorLabels": True,
                "relabelings": [
                    {"sourceLabels": [_meta_label(POOL_LABEL)], "targetLabel": "pool", "action": "replace"},
                    {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node", "action": "replace"},
                    # The market a GPU is bought in, which prices it (gpuplat/usage.py).
                    {
                        "sourceLabels": [_meta_label(CAPACITY_TYPE_LABEL)],
                        "targetLabel": usage.CAPACITY_TYPE,
                        "action": "replace",
                    },
                ],
            }
        ],
    }


def utilization_record(model: Platform) -> str:
    return scaling.utilization_record(model.autoscaling.window)


def signal_record(model: Platform) -> str:
    return scaling.signal_record(model.autoscaling.window)


def recording_rules(model: Platform) -> list[dict[str, Any]]:
    """Per pool, in evaluation order: every collected metric, utilisation, memory, pressure, signal.

    A group evaluates its rules in order, so each rule reads this round's value of the ones
    before it. By pool name within each kind: reordering the spec's pools must not rewrite the object.
    """
    auto, window = model.autoscaling, model.autoscaling.window
    pools = sorted(model.pools, key=lambda p: p.name)

    def each(record: str, expr: Callable[[GpuNodePool], str]) -> list[dict[str, Any]]:
        return [{"record": record, "expr": expr(p), "labels": {"pool": p.name}} for p in pools]

    rules: list[dict[str, Any]] = []
    for metric in scaling.DCGM_METRICS:
        rules += each(scaling.metric_record(metric, window), lambda p, m=metric: scaling.metric_expr(m, p.name, window))
    rules.append({"record": scaling.PENDING_RECORD, "expr": scaling.PENDING_EXPR})
    rules += each(utilization_record(model), lambda p: scaling.utilization_expr(p, window))
    rules += each(scaling.memory_record(window), lambda p: scaling.memory_expr(p.name, window))
    rules += each(scaling.pressure_record(window), lambda p: scaling.pressure_expr(p.name, window))
    pressure = scaling.pressure_record(window)
    rules += each(
        signal_record(model),
        lambda p: signal_expr(f'{pressure}{{pool="{p.name}"}}', auto.scale_up_above, auto.scale_down_below),
    )
    return rules


def prometheus_rule_spec(model: Platform) -> dict[str, Any]:
    auto = model.autoscaling
    record = utilization_record(model)
    pools = sorted(model.pools, key=lambda p: p.name)
    records = recording_rules(model)
    alerts: list[dict[str, Any]] = []
    for pool in pools:
        series = f'{record}{{pool="{pool.name}"}}'
        alerts.append(
            {
                "alert": "GpuPoolUnderutilized",
                "expr": f"{series} < {auto.scale_down_below}",
                "for": WASTE_FOR,
                "labels": {"severity": "warning", "pool": pool.name},
                "annotations": {
                    "summary": f"GPU pool {pool.name} is mostly idle",
                    "description": f"Average GPU utilization of pool {pool.name} has stayed below "
                    f"{auto.scale_down_below:.0%} for {WASTE_FOR}: capacity is paid for and not used.",
                },
            }
        )
        alerts.append(
            {
                "alert": "GpuPoolSaturated",
                "expr": f"{series} > {auto.scale_up_above}",
                "for": auto.window,
                "labels": {"severity": "warning", "pool": pool.name},
                "annotations": {
                    "summary": f"GPU pool {pool.name} is saturated",
                    "description": f"Average GPU utilization of pool {pool.name} has stayed above "
                    f"{auto.scale_up_above:.0%} for {auto.window}: work is likely queueing.",
                },
            }
        )
    return {
        "groups": [
            {"name": "gpuplat-gpu-utilization", "rules": records},
            {"name": "gpuplat-gpu-capacity", "rules": alerts},
        ]
    }


class Autoscaling(pulumi.ComponentResource):
    recording_rule: str
    signal_rule: str
    keda: k8s.helm.v3.Release
    namespace: k8s.core.v1.Namespace  # the platform's system namespace (Pod Security restricted)
    floors: dict[str, k8s.apps.v1.Deployment]  # by pool; pools without a floor are absent

    def __init__(self, name: str, args: AutoscalingArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:Autoscaling", name, None, opts)
        model, provider = args.model, args.provider
        monitor = f"{prefix(model)}-dcgm-exporter"
        monitoring_object(
            self, f"{name}-dcgm-servicemonitor", "ServiceMonitor", monitor, service_monitor_spec(), provider,
            args.monitoring, args.depends_on,
        )  # fmt: skip
        rules = f"{prefix(model)}-gpu-utilization"
        monitoring_object(
            self, f"{name}-gpu-rules", "PrometheusRule", rules, prometheus_rule_spec(model), provider,
            args.monitoring, args.depends_on,
        )  # fmt: skip
        self.recording_rule = utilization_record(model)
        self.signal_rule = signal_record(model)
        # KEDA's webhooks, operator and metrics server need no host access.
        self.keda = helm_release(
            self, name, "keda", {}, provider=provider, pod_security="baseline", depends_on=args.depends_on
        )
        self.namespace = k8s.core.v1.Namespace(
            f"{name}-system-ns",
            metadata=meta(system_namespace(model), labels={PSA_ENFORCE: "restricted"}),
            opts=pulumi.ResourceOptions.merge(
                child_opts(self, provider), pulumi.ResourceOptions(aliases=list(args.namespace_aliases))
            ),
        )
        self.floors = self._capacity_floors(name, args)
        self.register_outputs({"recordingRule": self.recording_rule, "signalRule": self.signal_rule})

    def _capacity_floors(self, name: str, args: AutoscalingArgs) -> dict[str, k8s.apps.v1.Deployment]:
        model, plan, provider = args.model, args.plan, args.provider
        namespace = system_namespace(model)
        inside = [*args.depends_on, self.namespace]
        priority = k8s.scheduling.v1.PriorityClass(
            f"{name}-floor-priority",
            metadata=meta(priority_class_name(model)),
            value=PRIORITY,
            preemption_policy="Never",
            global_default=False,
            description="GPU capacity floor placeholders: evicted by any real work, never preempt",
            opts=child_opts(self, provider, args.depends_on),
        )
        floors: dict[str, k8s.apps.v1.Deployment] = {}
        for pool in model.pools:
            bounds = floor_bounds(model, pool, plan.pool(pool.name))
            if bounds is None:
                continue
            # Pulumi sets the replicas once; the HPA KEDA creates owns them afterwards.
            deployment_opts = pulumi.ResourceOptions.merge(
                child_opts(self, provider, [*inside, priority]),
                pulumi.ResourceOptions(ignore_changes=["spec.replicas"]),
            )
            floors[pool.name] = deployment = k8s.apps.v1.Deployment(
                f"{name}-floor-{pool.name}",
                metadata=meta(
                    floor_name(pool),
                    namespace,
                    {POOL_LABEL: pool.name},
                    # A placeholder may wait long for a GPU node: do not hold `pulumi up` for it.
                    annotations={"pulumi.com/skipAwait": "true"},
                ),
                spec=deployment_spec(model, pool, bounds[0]),
                opts=deployment_opts,
            )
            k8s.apiextensions.CustomResource(
                f"{name}-floor-{pool.name}-scaler",
                api_version="keda.sh/v1alpha1",
                kind="ScaledObject",
                metadata=meta(floor_name(pool), namespace, {POOL_LABEL: pool.name}),
                spec=scaled_object_spec(model, pool, bounds, signal_record(model)),
                opts=child_opts(self, provider, [self.keda, deployment]),
            )
        return floors
