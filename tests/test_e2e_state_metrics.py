"""kube-state-metrics as kube-prometheus-stack runs it, for the autoscaling loop (e2e/statemetrics.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from e2e import podmetrics, statemetrics, upstream
from e2e.stack import Stack, Target
from tests.test_e2e_pod_metrics import FakeCluster

ROOT = Path(__file__).resolve().parent.parent


def dev_stack() -> Stack:
    resources = json.loads((ROOT / "tests" / "snapshots" / "dev.json").read_text())["resources"]
    return Stack(Target("dev"), resources, {}, [])


def chart_defaults() -> dict[str, Any]:
    return dict(yaml.safe_load(upstream.resolve("charts/kube-prometheus-stack/values.yaml").read_text()))


def running_pod(deployment: dict[str, Any], address: str) -> dict[str, Any]:
    """The pod the Deployment's template makes, as kwok runs it."""
    template = deployment["spec"]["template"]
    return {"metadata": {"name": "ksm-0", "labels": {**template["metadata"]["labels"], "pod-template-hash": "x"}},
            "spec": template["spec"], "status": {"phase": "Running", "podIP": address}}


def test_the_stand_in_s_servicemonitor_leads_prometheus_to_the_pod_s_http_port() -> None:
    """dev's release with kube-prometheus-stack 88.5.3's values: kube-state-metrics on, scraped by
    a ServiceMonitor that keeps the series' own namespace and pod labels (honorLabels)."""
    objects, off = statemetrics.stand_in(dev_stack())
    assert off == "" and [o["kind"] for o in objects] == ["Deployment", "Service", "ServiceMonitor"]
    deployment, service, monitor = objects
    assert monitor["metadata"]["name"] == "kube-prometheus-stack-kube-state-metrics"
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"  # releaseLabel: true
    assert monitor["spec"]["endpoints"] == [{"port": "http", "honorLabels": True}]
    cluster = FakeCluster({("services", "monitoring"): [service],
                           ("pods", "monitoring"): [running_pod(deployment, "10.201.0.9")]})
    found, port = podmetrics.monitored_service(cluster, monitor)  # type: ignore[arg-type]
    assert found is service and port == "http"
    assert podmetrics.service_target(cluster, found, port) == ("10.201.0.9", 8080)  # type: ignore[arg-type]
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"].endswith(f":{statemetrics.app_version()}")


def test_values_that_turn_kube_state_metrics_or_its_servicemonitor_off_are_said() -> None:
    defaults = chart_defaults()
    enabled, _ = statemetrics.subchart_values(defaults, {"kubeStateMetrics": {"enabled": False}})
    assert not enabled
    enabled, values = statemetrics.subchart_values(
        defaults, {"kube-state-metrics": {"prometheus": {"monitor": {"enabled": False}}}})
    assert enabled
    said = statemetrics.chart_objects("obs", "monitoring", values)
    assert said == "the release turns the kube-state-metrics ServiceMonitor off " \
        "(kube-state-metrics.prometheus.monitor.enabled)"


def test_values_the_release_sets_shape_the_objects_as_the_subchart_would() -> None:
    _, values = statemetrics.subchart_values(chart_defaults(), {"kube-state-metrics": {
        "releaseLabel": False, "service": {"port": 9100},
        "prometheus": {"monitor": {"interval": "15s", "http": {"honorLabels": False}}}}})
    made = statemetrics.chart_objects("my-kube-state-metrics", "obs", values)
    assert isinstance(made, list)
    deployment, service, monitor = made
    assert monitor["metadata"]["name"] == "my-kube-state-metrics"  # the release name holds the chart's
    assert "release" not in monitor["metadata"]["labels"]
    assert monitor["spec"]["endpoints"] == [{"port": "http", "interval": "15s"}]
    assert service["spec"]["ports"][0]["port"] == 9100
    assert deployment["spec"]["template"]["spec"]["containers"][0]["ports"] == [{"containerPort": 9100, "name": "http"}]


def test_the_held_pod_asks_for_gpus_and_waits_on_a_gate_of_the_suite_s() -> None:
    pod = statemetrics.held_pod()
    assert pod["spec"]["schedulingGates"] == [{"name": statemetrics.HELD_GATE}]
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"nvidia.com/gpu": str(statemetrics.HELD_GPUS)}
    assert pod["metadata"]["namespace"] == statemetrics.HELD_NAMESPACE
