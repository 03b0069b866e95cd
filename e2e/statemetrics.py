"""kube-state-metrics where kube-prometheus-stack runs it, while the autoscaling loop runs.

The emitted kube-prometheus-stack release installs kube-state-metrics as a subchart
(`kubeStateMetrics.enabled`, on by default) whose ServiceMonitor and Service route Prometheus to
its pod. That chart cannot be rendered here (no module serves it, e2e/upstream.py), so, as for
the `Prometheus` object (e2e/prometheus.py), its part is a stand-in made from the release's values
(its values.yaml under the emitted ones) as the subchart's templates (kube-state-metrics 8.4.0:
_helpers.tpl, deployment.yaml, service.yaml, servicemonitor.yaml) make them: the Deployment
(for its pod's address and the container port `http`), the Service and the ServiceMonitor, named
`<release>-kube-state-metrics` and labelled as the chart labels them (the `release` label
included, as `releaseLabel` says), the endpoint's `honorLabels` as the values give it (true: the
series keep the namespace and pod they describe). The operator turns the ServiceMonitor into a
scrape job like the platform's own; the real kube-state-metrics (e2e/tools) reads the cluster
through its kubeconfig and serves on loopback, and e2e/podmetrics.py forwards the pod's address
there.

The loop's own Pending GPU pods (a pool's first work pod, placeholders waiting for Karpenter's
node) are Pending for seconds, less than the 30 s between scrapes: whether a scrape sees one is
chance. So one GPU pod is held Pending by a scheduling gate of the suite's (the scheduler and
Karpenter leave a gated pod alone) in a namespace of its own, no tenant's (no quota, no Kueue),
and the pending-requests record must count it.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import yaml

from e2e import upstream
from e2e.cluster import Cluster, E2EError, wait_for
from e2e.operands import helm_merge
from e2e.podmetrics import Forwarder, monitored_service, service_target
from e2e.ports import free_port
from e2e.prometheus import Prometheus, release_name, scrape_jobs
from e2e.stack import Stack
from e2e.tools.build import TOOL_SETS
from gpuplat.verify.render import SAFE_LOADER

CHART = "kube-state-metrics"
CHART_VERSION = "8.4.0"  # kube-prometheus-stack 88.5.3's dependency
PORT = 8080  # the subchart's service.port default, the container's port `http`
PROCESS = "kube-state-metrics"
HELD_NAMESPACE = "e2e-pending-gpus"
HELD_POD = "held-gpu-request"
HELD_GATE = "e2e.gpuplat.dev/held"
HELD_GPUS = 1


def app_version() -> str:
    """The kube-state-metrics release the suite runs (e2e/tools/kube-state-metrics pins it)."""
    return next(t for t in TOOL_SETS if t.name == PROCESS).version()


def fullname(release: str) -> str:
    """The subchart's fullname: the release name when it contains the chart's name."""
    return release if CHART in release else f"{release}-{CHART}"


def subchart_values(defaults: Mapping[str, Any], emitted: Mapping[str, Any]) -> tuple[bool, dict[str, Any]]:
    """(whether the release runs kube-state-metrics, the values its subchart is rendered with)."""
    merged = helm_merge(dict(defaults), dict(emitted))
    return bool(merged.get("kubeStateMetrics", {}).get("enabled", True)), dict(merged.get(CHART) or {})


def chart_objects(release: str, namespace: str, values: Mapping[str, Any]) -> list[dict[str, Any]] | str:
    """The Deployment, Service and ServiceMonitor the subchart makes from `values`, or why
    Prometheus would not scrape it."""
    monitor_values = values.get("prometheus", {}).get("monitor", {})
    if not monitor_values.get("enabled", False):
        return f"the release turns the kube-state-metrics ServiceMonitor off ({CHART}.prometheus.monitor.enabled)"
    name = fullname(release)
    selector = {"app.kubernetes.io/name": CHART, "app.kubernetes.io/instance": release}
    labels = {"helm.sh/chart": f"{CHART}-{CHART_VERSION}", "app.kubernetes.io/managed-by": "Helm",
              "app.kubernetes.io/component": "metrics", "app.kubernetes.io/part-of": CHART, **selector,
              "app.kubernetes.io/version": app_version().removeprefix("v"),
              **({"release": release} if values.get("releaseLabel") else {})}
    metadata = {"name": name, "namespace": namespace, "labels": labels}
    port = int(values.get("service", {}).get("port") or PORT)
    endpoint: dict[str, Any] = {"port": "http"}
    if monitor_values.get("http", {}).get("honorLabels"):
        endpoint["honorLabels"] = True
    for key in ("interval", "scrapeTimeout"):
        if monitor_values.get(key):
            endpoint[key] = monitor_values[key]
    container = {"name": CHART, "image": f"registry.k8s.io/kube-state-metrics/kube-state-metrics:{app_version()}",
                 "args": [f"--port={port}"], "ports": [{"containerPort": port, "name": "http"}]}
    return [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata,
         "spec": {"replicas": 1, "selector": {"matchLabels": selector},
                  "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": metadata,
         "spec": {"type": "ClusterIP", "selector": selector,
                  "ports": [{"name": "http", "protocol": "TCP", "port": port, "targetPort": "http"}]}},
        {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": metadata,
         "spec": {"jobLabel": monitor_values.get("jobLabel") or "app.kubernetes.io/name",
                  "selector": {"matchLabels": selector}, "endpoints": [endpoint]}},
    ]


def held_pod() -> dict[str, Any]:
    """A pod asking for GPUs that no scheduler binds until its gate is removed."""
    gpus = {"nvidia.com/gpu": str(HELD_GPUS)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": HELD_POD, "namespace": HELD_NAMESPACE},
            "spec": {"schedulingGates": [{"name": HELD_GATE}],
                     "containers": [{"name": "work", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": gpus, "limits": gpus}}]}}


@dataclass
class StateMetrics:
    """What the loop has of kube-state-metrics: `off` when the release does not run it (its series
    are not collected), `failed` when the suite could not run it, else what serves it."""

    served: str = ""
    off: str = ""
    failed: str = ""
    held_gpus: int = 0


def stand_in(stack: Stack) -> tuple[list[dict[str, Any]], str]:
    """The subchart's objects for the stack's release, or why the release runs none."""
    release, namespace, emitted = release_name(stack)
    text = upstream.resolve("charts/kube-prometheus-stack/values.yaml").read_text()
    defaults = yaml.load(text, Loader=SAFE_LOADER) or {}
    enabled, values = subchart_values(defaults, emitted)
    if not enabled:
        return [], "the release turns kube-state-metrics off (kubeStateMetrics.enabled)"
    made = chart_objects(release, namespace, values)
    return ([], made) if isinstance(made, str) else (made, "")


def _serving(port: int) -> bool | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            return True if b"kube_pod_status_phase{" in response.read() else None
    except OSError:
        return None


def _start(cluster: Cluster, objects: list[dict[str, Any]], operator: Prometheus, timeout: float,
           opened: ExitStack) -> str:
    refused = cluster.apply(objects)
    if refused:
        raise E2EError(f"the kube-state-metrics stand-in was refused: {refused[0][1][-400:]}")
    monitor = objects[-1]
    service, port_name = monitored_service(cluster, monitor)
    address, port = wait_for(lambda: _target(cluster, service, port_name), timeout,
                             "the kube-state-metrics pod running with an address")
    own = free_port()
    argv = [str(cluster.tools[PROCESS]), f"--kubeconfig={cluster.kubeconfig}", "--host=127.0.0.1",
            f"--port={own}", "--telemetry-host=127.0.0.1", f"--telemetry-port={free_port()}"]
    cluster.processes.start(PROCESS, argv)
    opened.callback(cluster.processes.stop, PROCESS)
    wait_for(lambda: _serving(own), timeout, "kube-state-metrics serving pod series")
    opened.enter_context(Forwarder(CHART, address, port, lambda: own))
    job = f"serviceMonitor/{monitor['metadata']['namespace']}/{monitor['metadata']['name']}/0"
    wait_for(lambda: job in scrape_jobs(operator) or None, timeout, f"the operator's scrape job {job}")
    return f"kube-state-metrics' metrics served at its pod's address {address}:{port} (scrape job {job})"


def _target(cluster: Cluster, service: Mapping[str, Any], port_name: str | None) -> tuple[str, int] | None:
    try:
        return service_target(cluster, service, port_name)
    except E2EError:
        return None


def _hold(cluster: Cluster, opened: ExitStack) -> None:
    if cluster.get("namespace", HELD_NAMESPACE) is None:
        cluster.kubectl("create", "namespace", HELD_NAMESPACE)
    opened.callback(cluster.kubectl, "delete", "namespace", HELD_NAMESPACE, "--wait=false", check=False)
    cluster.kubectl("create", "-f", "-", stdin=json.dumps(held_pod()))


@contextmanager
def running(cluster: Cluster, stack: Stack, operator: Prometheus, timeout: float) -> Iterator[StateMetrics]:
    """kube-state-metrics behind the stand-in's ServiceMonitor, and the held pod; to be entered
    before Prometheus starts (the suite writes Prometheus' configuration once)."""
    with ExitStack() as opened:
        try:
            objects, off = stand_in(stack)
            state = StateMetrics(off=off)
            if not off:
                opened.callback(cluster.kubectl, "delete", "-f", "-", "--wait=false", check=False,
                                stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
                state = StateMetrics(served=_start(cluster, objects, operator, timeout, opened))
                _hold(cluster, opened)
                state.held_gpus = HELD_GPUS
        except (E2EError, upstream.UpstreamMissing) as err:
            state = StateMetrics(failed=str(err))
        yield state
