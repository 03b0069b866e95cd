"""The real Kueue, configured exactly as the platform's Helm release configures it.

Only what places the manager on this machine is overridden: its webhook server (loopback, a
certificate we make), probes and metrics on loopback, no leader election, and no internal
certificate management (that patches a Service-backed webhook, which cannot exist here). Its
webhooks are the chart's, rendered with the release's values (the chart derives their namespace
selector from the manager configuration), and its CRDs' conversion webhooks too, pointed at that
server, as Kueue's integration tests do; where no module serves the chart, Kueue's own manifests.
"""

from __future__ import annotations

import base64
import io
import shutil
import urllib.request
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from e2e import charts, upstream
from e2e.certs import serving_cert
from e2e.cluster import Cluster, E2EError, wait_for
from e2e.gomod import module_dir
from e2e.objects import load_yaml_documents
from e2e.ports import free_port
from e2e.stack import Stack

NAMESPACE = "kueue-system"
# Without internal certificate management the manager serves metrics with the certificate it
# finds here (cmd/kueue/main.go), a path no flag moves: the suite's private /etc overlay has it.
METRICS_CERTS = Path("/etc/kueue/metrics/certs")


def emitted_configuration(stack: Stack) -> dict[str, Any]:
    release = stack.release("kueue")
    if release is None:
        raise E2EError("the stack emits no kueue Helm release")
    return release_configuration(release)


def release_configuration(release: dict[str, Any]) -> dict[str, Any]:
    """The manager configuration a kueue Helm release's values carry."""
    return dict(YAML(typ="safe").load(release["values"]["managerConfig"]["controllerManagerConfigYaml"]))


def restart(cluster: Cluster, stack: Stack, emitted: dict[str, Any]) -> None:
    """Kueue reads its configuration once, at start: an edit of it needs a new manager."""
    cluster.processes.stop("kueue")
    start(cluster, stack, emitted)


def local_configuration(emitted: dict[str, Any], webhook_port: int, probe_port: int, cert_dir: Path,
                        metrics_port: int) -> dict[str, Any]:
    config = dict(emitted)
    config["namespace"] = NAMESPACE
    config["webhook"] = {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)}
    config["health"] = {"healthProbeBindAddress": f"127.0.0.1:{probe_port}"}
    config["metrics"] = {**emitted.get("metrics", {}), "bindAddress": f"127.0.0.1:{metrics_port}"}
    config["leaderElection"] = {"leaderElect": False}
    config["internalCertManagement"] = {"enable": False}
    return config


def webhook_configurations(port: int, ca_pem: bytes) -> list[dict[str, Any]]:
    manifests = module_dir("kueue", "sigs.k8s.io/kueue") / "config" / "components" / "webhook" / "manifests.yaml"
    ca_bundle = base64.b64encode(ca_pem).decode()
    configurations = []
    for doc in load_yaml_documents(manifests):
        doc["metadata"]["name"] = f"kueue-{doc['metadata']['name']}"
        for hook in doc.get("webhooks", []):
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca_bundle}
        configurations.append(doc)
    return configurations


def chart_wiring(stack: Stack, url: str, ca_pem: bytes) -> list[dict[str, Any]] | None:
    """The Kueue chart's objects that route the API server to the manager (its webhook
    configurations, the CRDs with a conversion webhook), rendered with the release's values and
    pointed at `url`; None when no module serves the chart."""
    release = stack.release("kueue")
    try:
        directory = charts.chart_directory("kueue")
    except upstream.UpstreamMissing:
        return None
    if release is None:
        return None
    objects = charts.point_at(charts.in_namespace(charts.render(directory, release), NAMESPACE), url, ca_pem)
    return [o for o in objects if o["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
            or o.get("spec", {}).get("conversion", {}).get("strategy") == "Webhook"]


def wiring(config: dict[str, Any]) -> tuple[str, bytes]:
    """(URL, CA) of the webhook server of a Kueue `start` returned the configuration of."""
    webhook = config["webhook"]
    return f"https://127.0.0.1:{webhook['port']}", (Path(webhook["certDir"]) / "ca.crt").read_bytes()


def _ready(probe_port: int) -> bool | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{probe_port}/readyz", timeout=2) as response:
            return True if response.status == 200 else None
    except OSError:
        return None


def start(cluster: Cluster, stack: Stack, emitted: dict[str, Any] | None = None) -> dict[str, Any]:
    """Start Kueue with the stack's configuration (or `emitted`, an edit of it); returns the
    configuration it runs with."""
    cert = serving_cert(cluster.workdir / "kueue-certs")
    METRICS_CERTS.mkdir(parents=True, exist_ok=True)
    for name in ("tls.crt", "tls.key"):
        shutil.copyfile(cert.dir / name, METRICS_CERTS / name)
    webhook_port, probe_port, metrics_port = free_port(), free_port(), free_port()
    config = local_configuration(emitted or emitted_configuration(stack), webhook_port, probe_port, cert.dir,
                                 metrics_port)
    path = cluster.workdir / "kueue-config.yaml"
    buffer = io.StringIO()
    YAML().dump(config, buffer)
    path.write_text(buffer.getvalue())
    if cluster.get("namespace", NAMESPACE) is None:  # a deploy may have made it already
        cluster.kubectl("create", "namespace", NAMESPACE)
    # The on-demand visibility API is an aggregated API server reading its certificate from
    # /visibility: it serves pending-workload listings, nothing admission or scheduling reads.
    argv = [str(cluster.tools["kueue"]), f"--config={path}", "--zap-log-level=2",
            "--feature-gates=VisibilityOnDemand=false"]
    cluster.processes.start("kueue", argv, env=cluster.env)
    wait_for(lambda: _ready(probe_port), 90, "Kueue's readiness probe")
    wired = chart_wiring(stack, f"https://127.0.0.1:{webhook_port}", cert.ca_pem)
    refused = cluster.apply(wired if wired is not None else webhook_configurations(webhook_port, cert.ca_pem))
    if refused:
        raise E2EError(f"Kueue's webhook configurations refused: {refused[0][1]}")
    return config
