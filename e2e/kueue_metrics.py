"""Kueue's metrics where the chart's ServiceMonitor sends Prometheus: its manager pod's address.

The chart's metrics Service and ServiceMonitor route Prometheus to the manager pod's (kwok)
address, port `https` (8443); the real Kueue serves its metrics on loopback (e2e/kueue.py), and
e2e/podmetrics.py forwards the one to the other: TLS, the bearer token and Kueue's authorization
of it are Kueue's. The port is read from the configuration Kueue was last started with, so a
restart is followed.
"""

from __future__ import annotations

from typing import Any

from ruamel.yaml import YAML

from e2e.cluster import Cluster, E2EError
from e2e.kueue import NAMESPACE
from e2e.podmetrics import Forwarder, service_target

CONFIG = "kueue-config.yaml"  # where e2e/kueue.py writes the configuration it starts Kueue with
COMPONENT = ("app.kubernetes.io/component", "metrics-service")  # the chart's metricsService labels


def _metrics_service(cluster: Cluster) -> dict[str, Any]:
    for service in cluster.items("services", NAMESPACE):
        if service["metadata"].get("labels", {}).get(COMPONENT[0]) == COMPONENT[1]:
            return service
    raise E2EError(f"no Service labelled {COMPONENT[0]}={COMPONENT[1]} in {NAMESPACE}: the chart's was not applied")


def manager_address(cluster: Cluster) -> tuple[str, int]:
    """(pod address, target port) the chart's metrics Service routes to."""
    return service_target(cluster, _metrics_service(cluster))


def forwarder(cluster: Cluster) -> Forwarder:
    def kueue_port() -> int:
        config = YAML(typ="safe").load((cluster.workdir / CONFIG).read_text())
        return int(str(config["metrics"]["bindAddress"]).rsplit(":", 1)[1])

    return Forwarder("Kueue", *manager_address(cluster), kueue_port)
