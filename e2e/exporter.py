"""The DCGM exporter's stand-in: the GPU Operator's exporter DaemonSet and Service as the cluster
sees them, and on the machine one metrics endpoint per exporter pod, at the pod's own address.

The GPU Operator runs dcgm-exporter as a DaemonSet on every GPU node behind the Service
`nvidia-dcgm-exporter` (port `gpu-metrics`, 9400) that the platform's ServiceMonitor selects.
Here the DaemonSet's pods are kwok's, with kwok's pod addresses: each address is added to the
loopback interface of the suite's network namespace and served by an HTTP endpoint of ours, so
Prometheus discovers the targets through the real Kubernetes service discovery the operator
configured, attaches each node's labels, and scrapes the address the EndpointSlice names.

What an endpoint serves: the counters of the list the stack gives the exporter (the ConfigMap
the gpu-operator release's `dcgmExporter.config.name` names, its `dcgm-metrics.csv`), for the
devices of its pod's node, as the node shows them (GPU count and
product from GPU feature discovery's labels; on MIG nodes one device per MIG instance, from the
node's `nvidia.com/mig-<profile>` resources), each with dcgm-exporter's labels, plus
`namespace` / `pod` / `container` of the pod holding the device, as the exporter's pod mapping
adds them (whole GPUs and MIG instances; shared GPUs are not attributed); values from the load
replay (e2e/loadcurve.py), the same load on every device; before the replay starts, nothing. A
scenario may make one node's GPU 0 report an XID (`fail`), as dcgm-exporter reports the last XID
of a faulting GPU, until `heal`.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from e2e import dcgm
from e2e.cluster import Cluster, E2EError
from e2e.loadcurve import Replay
from e2e.stack import Stack
from gpuplat.catalog import CHARTS
from gpuplat.catalog.dcgm import METRICS_CONFIG_KEY, parse_metrics_csv
from gpuplat.catalog.gpus import gpu_model

NAMESPACE = CHARTS["gpu-operator"].namespace
APP = "nvidia-dcgm-exporter"
PORT = 9400
PORT_NAME = "gpu-metrics"
MEMORY_SHARE = 0.5  # framebuffer share used per unit of load: utilisation, not memory, drives the pool
XID_COUNTER = "DCGM_FI_DEV_XID_ERRORS"


def objects() -> list[dict[str, Any]]:
    labels = {"app": APP}
    container = {"name": "nvidia-dcgm-exporter", "image": "nvcr.io/nvidia/k8s/dcgm-exporter:4.4.2-4.8.2-ubuntu22.04",
                 "ports": [{"name": "metrics", "containerPort": PORT}],
                 "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                     "runAsNonRoot": True, "runAsUser": 65534,
                                     "seccompProfile": {"type": "RuntimeDefault"}}}
    return [
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": APP, "namespace": NAMESPACE, "labels": dict(labels)},
         "spec": {"selector": dict(labels), "ports": [{"name": PORT_NAME, "port": PORT, "targetPort": PORT}]}},
        {"apiVersion": "apps/v1", "kind": "DaemonSet",
         "metadata": {"name": APP, "namespace": NAMESPACE, "labels": dict(labels)},
         "spec": {"selector": {"matchLabels": dict(labels)},
                  "template": {"metadata": {"labels": dict(labels)},
                               "spec": {"nodeSelector": {"nvidia.com/gpu.present": "true"},
                                        "tolerations": [{"operator": "Exists"}],
                                        "automountServiceAccountToken": False,
                                        "containers": [container]}}}},
    ]


def _fb_mib(model: str) -> int:
    known = gpu_model(model)
    if known is not None:
        return int(known.memory_gib * 1024)
    found = re.search(r"(\d+)\s*GB", model, re.I)
    return int(found.group(1)) * 1024 if found else 81920


def node_devices(node: Mapping[str, Any]) -> list[dcgm.Device]:
    labels = node["metadata"].get("labels", {})
    name = node["metadata"]["name"]
    gpus = int(labels.get("nvidia.com/gpu.count", "0") or 0)
    model = labels.get("nvidia.com/gpu.product", "")
    allocatable = node.get("status", {}).get("allocatable", {})
    prefix = "nvidia.com/mig-"
    migs = {k.removeprefix(prefix): int(v) for k, v in allocatable.items() if k.startswith(prefix)}
    if not migs:
        return [dcgm.Device(i, model, _fb_mib(model), name) for i in range(gpus)]
    found: list[dcgm.Device] = []
    for profile, count in sorted(migs.items()):
        size = re.search(r"\.(\d+)gb", profile)
        fb = int(size.group(1)) * 1024 if size else _fb_mib(model) // 7
        for i in range(count):
            found.append(dcgm.Device(i * gpus // count if gpus else 0, model, fb, name, profile, len(found) + 1))
    return found


def holders(pods: list[dict[str, Any]], devices: list[dcgm.Device]) -> dict[dcgm.Device, dict[str, str]]:
    """Which pod holds which device: whole GPUs and MIG instances, in the order pods ask."""
    free = list(devices)
    found: dict[dcgm.Device, dict[str, str]] = {}
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        if pod.get("status", {}).get("phase") != "Running":
            continue
        for container in pod["spec"]["containers"]:
            for resource, amount in container.get("resources", {}).get("limits", {}).items():
                profile = resource.removeprefix("nvidia.com/mig-") if resource.startswith("nvidia.com/mig-") else ""
                if resource != "nvidia.com/gpu" and not profile:
                    continue
                for _ in range(int(amount)):
                    device = next((d for d in free if d.mig_profile == profile), None)
                    if device is None:
                        break
                    free.remove(device)
                    found[device] = {"namespace": pod["metadata"]["namespace"], "pod": pod["metadata"]["name"],
                                     "container": container["name"]}
    return found


def emitted_counters(stack: Stack) -> tuple[dcgm.Counter, ...]:
    """The series the stack's counter list enables (label fields are labels, not series)."""
    values = (stack.release("gpu-operator") or {}).get("values") or {}
    name = ((values.get("dcgmExporter") or {}).get("config") or {}).get("name")
    for config in stack.of_type("kubernetes:core/v1:ConfigMap"):
        meta = config.get("metadata") or {}
        if name and meta.get("name") == name and meta.get("namespace") == NAMESPACE:
            listed = parse_metrics_csv((config.get("data") or {}).get(METRICS_CONFIG_KEY, ""))
            return tuple(dcgm.Counter(c.field, c.kind, c.help) for c in listed if c.kind in ("gauge", "counter"))
    raise E2EError(f"the stack gives the DCGM exporter no counter list (dcgmExporter.config.name {name!r}, "
                   f"a ConfigMap of that name in {NAMESPACE})")


def exposition(devices: list[dcgm.Device], held: Mapping[dcgm.Device, Mapping[str, str]], load: float,
               seconds: float, counters: Sequence[dcgm.Counter], xid: int = 0) -> str:
    """The metrics page: the series of `counters` (the list the stack gives the exporter); `xid`:
    the last XID GPU 0 (each of its MIG instances) reports, 0 for none."""
    lines = []
    for counter in counters:
        rows = []
        for device in devices:
            sample = dcgm.value(counter, device, load, load * MEMORY_SHARE, seconds)
            if sample is None:
                continue
            if counter.name == XID_COUNTER and device.gpu == 0 and xid:
                sample = float(xid)
            labels = {**device.labels(), **held.get(device, {})}
            inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
            rows.append(f"{counter.name}{{{inner}}} {sample}")
        if rows:
            lines += [f"# HELP {counter.name} {counter.help}", f"# TYPE {counter.name} {counter.kind}", *rows]
    return "\n".join(lines) + "\n"


class Exporter:
    """Endpoints for the exporter pods, kept in step with the cluster every SYNC seconds."""

    SYNC = 2.0

    def __init__(self, cluster: Cluster, replay: Replay, counters: Sequence[dcgm.Counter]) -> None:
        self.cluster = cluster
        self.replay = replay
        self.counters = tuple(counters)
        self.servers: dict[str, ThreadingHTTPServer] = {}  # pod address -> its endpoint
        self.views: dict[str, tuple[list[dcgm.Device], dict[dcgm.Device, dict[str, str]]]] = {}  # by address
        self.node_at: dict[str, str] = {}  # pod address -> its node
        self.xids: dict[str, int] = {}  # node -> the XID its GPU 0 reports
        self.scrapes: dict[str, int] = {}
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.lock = threading.Lock()
        self.born = time.monotonic()

    def __enter__(self) -> Exporter:
        if self.cluster.get("namespace", NAMESPACE) is None:  # the stack emits it, with its Pod Security
            self.cluster.kubectl("create", "namespace", NAMESPACE)
        refused = self.cluster.apply(list[Mapping[str, Any]](objects()))
        if refused:
            raise E2EError(f"the DCGM exporter's stand-in objects were refused: {refused[0][1][-300:]}")
        self.sync()
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)
        for address in list(self.servers):
            self._close(address)

    def served_nodes(self) -> list[str]:
        """The nodes an endpoint serves now (their exporter pod runs)."""
        with self.lock:
            return sorted({self.node_at[a] for a in self.servers if a in self.node_at})

    def fail(self, node: str, xid: int) -> None:
        with self.lock:
            self.xids[node] = xid

    def heal(self, node: str) -> None:
        with self.lock:
            self.xids.pop(node, None)

    def _run(self) -> None:
        while not self.stop.wait(self.SYNC):
            try:
                self.sync()
            except E2EError as err:
                self.errors.append(str(err))

    def sync(self) -> None:
        nodes = {n["metadata"]["name"]: n for n in self.cluster.items("nodes")}
        pods = self.cluster.items("pods")
        by_node: dict[str, list[dict[str, Any]]] = {}
        for pod in pods:
            by_node.setdefault(pod["spec"].get("nodeName", ""), []).append(pod)
        wanted: dict[str, str] = {}  # address -> node
        for pod in pods:
            meta, status = pod["metadata"], pod.get("status", {})
            if meta["namespace"] == NAMESPACE and meta.get("labels", {}).get("app") == APP \
                    and status.get("phase") == "Running" and status.get("podIP") and not meta.get("deletionTimestamp"):
                wanted[status["podIP"]] = pod["spec"]["nodeName"]
        with self.lock:
            for address, node in wanted.items():
                if node not in nodes:
                    continue
                devices = node_devices(nodes[node])
                self.views[address] = (devices, holders(by_node.get(node, []), devices))
                self.node_at[address] = node
        for address in set(self.servers) - set(wanted):
            self._close(address)
        for address in set(wanted) - set(self.servers):
            self._open(address)

    def _open(self, address: str) -> None:
        subprocess.run(["ip", "addr", "add", f"{address}/32", "dev", "lo"], capture_output=True)
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                local = self.connection.getsockname()[0]
                load = exporter.replay.load()
                with exporter.lock:
                    view = exporter.views.get(local)
                    xid = exporter.xids.get(exporter.node_at.get(local, ""), 0)
                    exporter.scrapes[local] = exporter.scrapes.get(local, 0) + 1
                if self.path.split("?")[0] != "/metrics" or view is None or load is None:
                    self.send_error(404 if self.path.split("?")[0] != "/metrics" else 503)
                    return
                body = exposition(view[0], view[1], load, time.monotonic() - exporter.born,
                                  exporter.counters, xid).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        try:
            server = ThreadingHTTPServer((address, PORT), Handler)
        except OSError as err:
            self.errors.append(f"serving {address}:{PORT}: {err}")
            return
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.servers[address] = server

    def _close(self, address: str) -> None:
        server = self.servers.pop(address, None)
        if server is not None:
            server.shutdown()
            server.server_close()
        subprocess.run(["ip", "addr", "del", f"{address}/32", "dev", "lo"], capture_output=True)
