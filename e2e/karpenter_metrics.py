"""Karpenter's metrics where the platform's ServiceMonitor sends Prometheus: its chart pod's address.

The stack emits a ServiceMonitor of its own for Karpenter's chart Service (port `http-metrics`,
components/kubernetes/dashboards.py); the operator turns it into a scrape job like any other.
The Service found is the one that ServiceMonitor selects, and its pod's address (kwok's) is
forwarded (e2e/podmetrics.py) to the kwok provider the suite runs (e2e/karpenter.py), which
serves plain HTTP on `METRICS_PORT` (sigs.k8s.io/karpenter pkg/operator/options: `--metrics-port`,
bound on every address). The port is read from the running process's environment, so a
restart with other settings is followed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from e2e.cluster import Cluster, E2EError
from e2e.karpenter import NAMESPACE
from e2e.podmetrics import Forwarder, monitored_service, service_target
from e2e.stack import Stack

SERVICE_MONITOR = "kubernetes:monitoring.coreos.com/v1:ServiceMonitor"
PROCESS = "karpenter"  # the name e2e/karpenter.py starts the provider under


def emitted_monitor(stack: Stack) -> dict[str, Any] | None:
    """The emitted ServiceMonitor that looks for Services in Karpenter's namespace."""
    for monitor in stack.of_type(SERVICE_MONITOR):
        if NAMESPACE in monitor["spec"].get("namespaceSelector", {}).get("matchNames", []):
            return monitor
    return None


def environment(pid: int, proc: Path = Path("/proc")) -> dict[str, str]:
    """The environment a process was started with."""
    raw = (proc / str(pid) / "environ").read_bytes()
    return dict(entry.split("=", 1) for entry in raw.decode().split("\0") if "=" in entry)


def forwarder(cluster: Cluster, stack: Stack) -> Forwarder:
    monitor = emitted_monitor(stack)
    if monitor is None:
        raise E2EError(f"the stack emits no ServiceMonitor for Services in {NAMESPACE}")

    def karpenter_port() -> int:
        process = cluster.processes.running.get(PROCESS)
        if process is None or process.poll() is not None:
            raise ValueError("the kwok provider is not running")
        return int(environment(process.pid)["METRICS_PORT"])

    return Forwarder("Karpenter", *service_target(cluster, *monitored_service(cluster, monitor)), karpenter_port)
