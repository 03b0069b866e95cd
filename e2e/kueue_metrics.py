"""Kueue's metrics where the chart's ServiceMonitor sends Prometheus: its manager pod's address.

The chart's objects are applied as Helm would install them (e2e/releases.py): its Deployment's
pod is kwok's, with a kwok address, and its metrics Service and ServiceMonitor route Prometheus
there (port `https`, 8443). The real Kueue serves its metrics on loopback (e2e/kueue.py); this
forwards the pod's address, added to the loopback interface as the DCGM exporter's stand-in does,
to that port, byte for byte: TLS, the bearer token and Kueue's authorization of it are Kueue's.
The port is read from the configuration Kueue was last started with, so a restart is followed.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
from typing import Any

from ruamel.yaml import YAML

from e2e.cluster import Cluster, E2EError
from e2e.kueue import NAMESPACE

CONFIG = "kueue-config.yaml"  # where e2e/kueue.py writes the configuration it starts Kueue with
COMPONENT = ("app.kubernetes.io/component", "metrics-service")  # the chart's metricsService labels


def _metrics_service(cluster: Cluster) -> dict[str, Any]:
    for service in cluster.items("services", NAMESPACE):
        if service["metadata"].get("labels", {}).get(COMPONENT[0]) == COMPONENT[1]:
            return service
    raise E2EError(f"no Service labelled {COMPONENT[0]}={COMPONENT[1]} in {NAMESPACE}: the chart's was not applied")


def manager_address(cluster: Cluster) -> tuple[str, int]:
    """(pod address, target port) the chart's metrics Service routes to."""
    service = _metrics_service(cluster)
    selector = service["spec"].get("selector") or {}
    port = int(service["spec"]["ports"][0]["targetPort"])
    for pod in cluster.items("pods", NAMESPACE):
        labels, status = pod["metadata"].get("labels", {}), pod.get("status", {})
        if selector.items() <= labels.items() and status.get("phase") == "Running" and status.get("podIP"):
            return str(status["podIP"]), port
    raise E2EError(f"no running pod in {NAMESPACE} matches the metrics Service's selector {selector}")


class Forwarder:
    """While open: connections to the manager pod's address go to the running Kueue's metrics port."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.address, self.port = manager_address(cluster)
        self.connections = 0
        self.errors: list[str] = []
        self.listener: socket.socket | None = None

    def _kueue_port(self) -> int:
        config = YAML(typ="safe").load((self.cluster.workdir / CONFIG).read_text())
        return int(str(config["metrics"]["bindAddress"]).rsplit(":", 1)[1])

    def __enter__(self) -> Forwarder:
        subprocess.run(["ip", "addr", "add", f"{self.address}/32", "dev", "lo"], capture_output=True)
        listener = socket.create_server((self.address, self.port))
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.listener is not None:
            self.listener.close()
        subprocess.run(["ip", "addr", "del", f"{self.address}/32", "dev", "lo"], capture_output=True)

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed
            try:
                upstream = socket.create_connection(("127.0.0.1", self._kueue_port()), timeout=5)
            except (OSError, ValueError, KeyError) as err:
                self.errors.append(f"Kueue's metrics port: {err}")
                client.close()
                continue
            self.connections += 1
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(source, sink), daemon=True).start()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            end.close()
