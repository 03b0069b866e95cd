"""A controller's metrics where its chart's pod would serve them, for the controllers the suite
runs as processes of its own (Kueue, Karpenter's kwok provider, kube-state-metrics).

The chart's objects are applied as Helm would install them (e2e/releases.py): its Deployment's
pod is kwok's, with a kwok address, and a ServiceMonitor and Service route Prometheus to that
address at the container port the Service's target port names. The real controller listens
elsewhere (loopback, or a free port); `Forwarder` adds the pod's address to the loopback
interface, as the DCGM exporter's stand-in does, and forwards connections there to the port the
running controller was last started with, byte for byte: TLS and any authorization are the
controller's own.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
from collections.abc import Callable, Mapping
from typing import Any

from e2e.cluster import Cluster, E2EError


def _container_port(pod: Mapping[str, Any], target: int | str) -> int | None:
    """The port a Service's `targetPort` means on this pod: a number as given, a name looked up
    in the containers' ports (as the endpoints controller resolves it)."""
    if isinstance(target, int) or str(target).isdigit():
        return int(target)
    for container in pod.get("spec", {}).get("containers", []):
        for port in container.get("ports", []):
            if port.get("name") == target:
                return int(port["containerPort"])
    return None


def service_target(cluster: Cluster, service: Mapping[str, Any], port_name: str | None = None) -> tuple[str, int]:
    """(pod address, container port) of the first running pod `service` selects, at its port
    `port_name` (the first port without one)."""
    namespace, spec = service["metadata"]["namespace"], service["spec"]
    ports = [p for p in spec.get("ports", []) if port_name is None or p.get("name") == port_name]
    if not ports:
        raise E2EError(f"Service {namespace}/{service['metadata']['name']} has no port {port_name}")
    target = ports[0].get("targetPort", ports[0]["port"])
    selector = spec.get("selector") or {}
    for pod in cluster.items("pods", namespace):
        labels, status = pod["metadata"].get("labels", {}), pod.get("status", {})
        if selector.items() <= labels.items() and status.get("phase") == "Running" and status.get("podIP"):
            port = _container_port(pod, target)
            if port is not None:
                return str(status["podIP"]), port
    raise E2EError(f"no running pod in {namespace} matches Service {service['metadata']['name']}'s selector "
                   f"{selector} with a port {target}")


def monitored_service(cluster: Cluster, monitor: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The Service a ServiceMonitor selects (its namespaces, its label selector) and the port name
    of its first endpoint: what the operator's scrape job keeps from the endpoints it discovers."""
    spec = monitor["spec"]
    namespaces = spec.get("namespaceSelector", {}).get("matchNames") or [monitor["metadata"].get("namespace", "")]
    wanted = spec.get("selector", {}).get("matchLabels", {})
    for namespace in namespaces:
        for service in cluster.items("services", namespace):
            if wanted.items() <= service["metadata"].get("labels", {}).items():
                return service, spec["endpoints"][0].get("port")
    raise E2EError(f"ServiceMonitor {monitor['metadata']['name']} selects no Service ({wanted} in {namespaces})")


class Forwarder:
    """While open: connections to `address`:`port` go to 127.0.0.1 at `upstream()`, asked at each
    connection so that a restarted controller is followed."""

    def __init__(self, who: str, address: str, port: int, upstream: Callable[[], int]) -> None:
        self.who, self.address, self.port, self.upstream = who, address, port, upstream
        self.connections = 0
        self.errors: list[str] = []
        self.listener: socket.socket | None = None

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

    def served(self) -> str:
        return f"{self.who}'s metrics served at its pod's address {self.address}:{self.port}"

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream()), timeout=5)
            except (OSError, ValueError, KeyError) as err:
                self.errors.append(f"{self.who}'s metrics port: {err}")
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
