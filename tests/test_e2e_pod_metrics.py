"""Controllers the suite runs as processes, scraped at their chart pods' addresses (e2e/podmetrics.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast

from e2e import karpenter_metrics, podmetrics
from e2e.cluster import E2EError
from e2e.ports import free_port, loopback_address
from e2e.stack import Stack, Target

ROOT = Path(__file__).resolve().parent.parent
KARPENTER_LABELS = {"app.kubernetes.io/name": "karpenter", "app.kubernetes.io/instance": "karpenter"}


class FakeCluster:
    """What podmetrics asks a cluster: its objects by kind and namespace."""

    def __init__(self, objects: dict[tuple[str, str], list[dict[str, Any]]]) -> None:
        self.objects = objects

    def items(self, resource: str, namespace: str = "") -> list[dict[str, Any]]:
        return self.objects.get((resource, namespace), [])


def chart_objects(phase: str = "Running") -> FakeCluster:
    """Karpenter's chart Service and pod as templates/service.yaml and deployment.yaml make them:
    the Service's targetPort names the container's port."""
    service = {"metadata": {"name": "karpenter", "namespace": "karpenter", "labels": KARPENTER_LABELS},
               "spec": {"selector": KARPENTER_LABELS,
                        "ports": [{"name": "http-metrics", "port": 8080, "targetPort": "http-metrics"},
                                  {"name": "webhook-metrics", "port": 8001, "targetPort": "webhook-metrics"}]}}
    pending = {"metadata": {"name": "karpenter-b", "labels": KARPENTER_LABELS}, "status": {"phase": "Pending"}}
    pod = {"metadata": {"name": "karpenter-a", "labels": {**KARPENTER_LABELS, "pod-template-hash": "x"}},
           "spec": {"containers": [{"name": "controller", "ports": [
               {"name": "http", "containerPort": 8081}, {"name": "http-metrics", "containerPort": 8080}]}]},
           "status": {"phase": phase, "podIP": "10.200.0.7"}}
    return FakeCluster({("services", "karpenter"): [service], ("pods", "karpenter"): [pending, pod]})


def dev_stack() -> Stack:
    resources = json.loads((ROOT / "tests" / "snapshots" / "dev.json").read_text())["resources"]
    return Stack(Target("dev"), resources, {}, [])


def test_the_emitted_servicemonitor_leads_to_the_running_pod_at_the_named_container_port() -> None:
    monitor = karpenter_metrics.emitted_monitor(dev_stack())
    assert monitor is not None and monitor["metadata"]["name"] == "atlas-karpenter"
    cluster = chart_objects()
    service, port = podmetrics.monitored_service(cluster, monitor)  # type: ignore[arg-type]
    assert (service["metadata"]["name"], port) == ("karpenter", "http-metrics")
    assert podmetrics.service_target(cluster, service, port) == ("10.200.0.7", 8080)  # type: ignore[arg-type]


def test_no_running_pod_or_no_selected_service_is_said() -> None:
    monitor = karpenter_metrics.emitted_monitor(dev_stack())
    assert monitor is not None
    cluster = chart_objects(phase="Pending")
    service, port = podmetrics.monitored_service(cluster, monitor)  # type: ignore[arg-type]
    try:
        podmetrics.service_target(cluster, service, port)  # type: ignore[arg-type]
    except E2EError as err:
        assert "no running pod in karpenter" in str(err)
    else:
        raise AssertionError("a Service with no running pod has no target")
    other = {**monitor, "spec": {**monitor["spec"], "selector": {"matchLabels": {"app.kubernetes.io/name": "x"}}}}
    try:
        podmetrics.monitored_service(cluster, other)  # type: ignore[arg-type]
    except E2EError as err:
        assert "selects no Service" in str(err)
    else:
        raise AssertionError("a selector matching no Service selects nothing")


def test_a_started_process_metrics_port_is_read_from_its_environment() -> None:
    script = "import sys; print('up', flush=True); sys.stdin.read()"
    child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             env={"METRICS_PORT": "4321", "OTHER": "a=b"})
    try:
        # Until the child has exec'd, /proc shows the environment it was forked with (ours).
        assert child.stdout is not None and child.stdout.readline() == b"up\n"
        found = karpenter_metrics.environment(child.pid)
        assert found["METRICS_PORT"] == "4321" and found["OTHER"] == "a=b"
    finally:
        child.communicate(b"")


def test_the_forwarder_serves_the_pod_address_from_whatever_port_the_controller_has_now() -> None:
    class Metrics(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            port = cast("ThreadingHTTPServer", self.server).server_port
            body = f'karpenter_nodeclaims_created_total{{server="{port}"}} 1\n'.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    servers = [ThreadingHTTPServer(("127.0.0.1", 0), Metrics) for _ in range(2)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    current = [servers[0].server_port]
    address, port = loopback_address(), free_port()
    try:
        with podmetrics.Forwarder("Karpenter", address, port, lambda: current[0]) as forwarder:
            for server in servers:  # a restart on another port is followed
                current[0] = server.server_port
                with urllib.request.urlopen(f"http://{address}:{port}/metrics", timeout=5) as response:
                    assert f'server="{server.server_port}"' in response.read().decode()
            assert forwarder.connections == 2 and not forwarder.errors
            assert forwarder.served() == f"Karpenter's metrics served at its pod's address {address}:{port}"
    finally:
        for server in servers:
            server.shutdown()
