"""The real KEDA: its operator and its metrics API server, at the platform's version.

KEDA's chart cannot be rendered here (kedacore/charts is not a Go module), so what it installs
around the two binaries is a stand-in: KEDA's CRDs from the module, the metrics server's
Service and the `v1beta1.external.metrics.k8s.io` APIService the chart makes (names and ports as
its values.yaml gives them), and one certificate for the operator's gRPC metrics service and
the metrics server, which the chart's certificate rotation would otherwise generate. The
admission webhooks are not run: they validate ScaledObjects, which the API server's CRD schema
already does for the suite's server-side apply.

How the traffic flows, as on a cluster:
- the HPA controller asks the API server for the external metric; the API server's aggregator
  dials the metrics server's Service at its cluster IP (no kube-proxy here: that address is
  added to the loopback interface of the suite's network namespace, and the metrics server
  listens on it, port 443);
- the metrics server asks the operator over gRPC at `keda-operator.keda.svc.cluster.local:9666`
  (its default), and the operator queries Prometheus at the ScaledObject's `serverAddress`,
  exactly as emitted. Both names resolve through an /etc/hosts of the cluster's own
  (e2e/sandbox.py), which maps each Service name to the loopback address its process listens on.
"""

from __future__ import annotations

import base64
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from e2e import hpamodel, sandbox
from e2e.certs import serving_cert
from e2e.cluster import Cluster, E2EError, wait_for
from e2e.gomod import module_dir
from e2e.objects import load_yaml_documents
from e2e.ports import free_port, loopback_address
from gpuplat.catalog import CHARTS

MODULE = "github.com/kedacore/keda/v2"
NAMESPACE = CHARTS["keda"].namespace
OPERATOR = "keda-operator"
METRICS = "keda-operator-metrics-apiserver"
APISERVICE = "v1beta1.external.metrics.k8s.io"
GRPC_PORT = 9666
HTTPS_PORT = 443  # the chart's service.portHttps


def crds() -> list[dict[str, Any]]:
    bases = module_dir("keda", MODULE) / "config" / "crd" / "bases"
    return [doc for path in sorted(bases.glob("*.yaml")) for doc in load_yaml_documents(path)]


def metrics_service() -> dict[str, Any]:
    # No selector: its endpoint is the process on the machine (endpoint_slice), not a pod.
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": METRICS, "namespace": NAMESPACE},
            "spec": {"ports": [{"name": "https", "port": HTTPS_PORT, "targetPort": HTTPS_PORT}]}}


def endpoint_slice(address: str) -> dict[str, Any]:
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": f"{METRICS}-e2e", "namespace": NAMESPACE,
                         "labels": {"kubernetes.io/service-name": METRICS}},
            "addressType": "IPv4", "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
            "ports": [{"name": "https", "port": HTTPS_PORT, "protocol": "TCP"}]}


def api_service(ca_pem: bytes) -> dict[str, Any]:
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": APISERVICE},
            "spec": {"service": {"name": METRICS, "namespace": NAMESPACE, "port": HTTPS_PORT},
                     "group": "external.metrics.k8s.io", "version": "v1beta1",
                     "caBundle": base64.b64encode(ca_pem).decode(),
                     "groupPriorityMinimum": 100, "versionPriority": 100}}


@dataclass
class Keda:
    cluster: Cluster
    operator_address: str
    metrics_address: str  # the metrics server Service's cluster IP, on loopback


def _available(cluster: Cluster) -> str | None:
    found = cluster.get("apiservice", APISERVICE) or {}
    for condition in found.get("status", {}).get("conditions", []):
        if condition["type"] == "Available":
            return "yes" if condition["status"] == "True" else None
    return None


def available_message(cluster: Cluster) -> str:
    found = cluster.get("apiservice", APISERVICE) or {}
    said = [c.get("message", "") for c in found.get("status", {}).get("conditions", []) if c["type"] == "Available"]
    return said[0] if said else "no Available condition"


def start(cluster: Cluster, hosts: dict[str, str], timeout: float) -> Keda:
    """Start KEDA on the cluster; `hosts` names other Services' addresses (Prometheus')."""
    refused = cluster.apply(list[Mapping[str, Any]](crds()))
    cluster.wait_established()
    if cluster.get("namespace", NAMESPACE) is None:  # the stack emits it, with its Pod Security
        cluster.kubectl("create", "namespace", NAMESPACE)
    refused += cluster.apply([metrics_service()])
    if refused:
        raise E2EError(f"KEDA's CRDs or Service were refused: {refused[0][1][-400:]}")
    service = cluster.get("service", METRICS, NAMESPACE) or {}
    cluster_ip = service.get("spec", {}).get("clusterIP", "")
    if not cluster_ip:
        raise E2EError(f"the Service {METRICS} got no cluster IP")
    operator = loopback_address()
    operator_name = f"{OPERATOR}.{NAMESPACE}.svc.cluster.local"
    cert = serving_cert(cluster.workdir / "keda-certs", (operator_name, f"{METRICS}.{NAMESPACE}.svc"), (cluster_ip,))
    subprocess.run(["ip", "addr", "add", f"{cluster_ip}/32", "dev", "lo"], capture_output=True)
    names = {**hosts, operator_name: operator}
    hosts_file = sandbox.hosts_file(cluster.workdir / "keda-hosts", names)
    env = {**cluster.env, "WATCH_NAMESPACE": "", "POD_NAMESPACE": NAMESPACE,
           "KEDA_CLUSTER_OBJECT_NAMESPACE": NAMESPACE, "KEDA_HTTP_DEFAULT_TIMEOUT": "3000"}
    certs = str(cert.dir)
    operator_argv = [str(cluster.tools["keda-operator"]), "--leader-elect=false", f"--cert-dir={certs}",
                     "--enable-cert-rotation=false",
                     f"--metrics-bind-address=127.0.0.1:{free_port()}",
                     f"--health-probe-bind-address=127.0.0.1:{free_port()}",
                     f"--metrics-service-bind-address={operator}:{GRPC_PORT}", "--zap-log-level=info"]
    cluster.processes.start("keda-operator", sandbox.with_mounts(operator_argv, {"/etc/hosts": hosts_file}), env=env)
    kubeconfig = str(cluster.kubeconfig)
    metrics_argv = [str(cluster.tools["keda-adapter"]), f"--secure-port={HTTPS_PORT}", f"--bind-address={cluster_ip}",
                    f"--tls-cert-file={certs}/tls.crt", f"--tls-private-key-file={certs}/tls.key",
                    f"--cert-dir={certs}", f"--lister-kubeconfig={kubeconfig}",
                    f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
                    f"--port={free_port()}", "--zap-log-level=info"]
    cluster.processes.start("keda-metrics-apiserver", sandbox.with_mounts(metrics_argv, {"/etc/hosts": hosts_file}),
                            env=env)
    refused = cluster.apply([endpoint_slice(cluster_ip), api_service(cert.ca_pem)])
    if refused:
        raise E2EError(f"KEDA's APIService was refused: {refused[0][1][-400:]}")
    try:
        wait_for(lambda: _available(cluster), timeout, f"the APIService {APISERVICE} to be available")
    except E2EError as err:
        raise E2EError(f"{err}: {available_message(cluster)}") from None
    return Keda(cluster, operator, cluster_ip)


def logs(cluster: Cluster) -> Path:
    return cluster.workdir / "keda-operator.log"


def hpa_check(cluster: Cluster, namespace: str, scaled: dict[str, Any]) -> str:
    """"" or how the HPA KEDA made differs from what the ScaledObject implies (e2e/hpamodel.py)."""
    config = scaled["spec"].get("advanced", {}).get("horizontalPodAutoscalerConfig", {})
    name = config.get("name") or f"keda-hpa-{scaled['metadata']['name']}"
    live = cluster.get("horizontalpodautoscalers.autoscaling", name, namespace)
    if live is None:
        return f"KEDA made no HPA {name}"
    wrong = hpamodel.hpa_differences(hpamodel.hpa_spec(scaled), live)
    return f"the HPA {name} KEDA made has {'; '.join(wrong)}" if wrong else ""
