"""The real prometheus-operator and Prometheus, configured from what the stack emits.

kube-prometheus-stack's chart cannot be rendered here (its repository is not a Go module), so
its part is a stand-in: the `Prometheus` object and the Service its templates make from the
emitted release's values (`prometheus_object`), and nothing else. The real operator, at the
chart's version, turns that object, the emitted ServiceMonitor and PrometheusRule into the
configuration Secret, the rule-file ConfigMaps and the StatefulSet it always writes. Its
StatefulSet is made with no replica: the suite plays its kubelet and config reloader instead,
writing each Secret and ConfigMap the Prometheus container mounts to the container's mount path
(in a mount namespace of Prometheus' own, e2e/sandbox.py), expanding `$(POD_NAME)` as the
reloader does, and starting the real Prometheus with the container's own arguments. Two
arguments differ: the TSDB path (a directory of the run) and the listening address (the
cluster's loopback address, port 9090 as the chart's Service). One line of the generated
configuration differs: its Kubernetes service discovery, which would use the pod's service
account, reads the cluster's kubeconfig instead; and where a scrape sends the pod's service-account
token (`bearer_token_file`, Kueue's ServiceMonitor), the file is a token of the run, made for the
Prometheus service account, which the stand-in gives the chart's `/metrics` permission.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import re
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from e2e import sandbox
from e2e.cluster import Cluster, E2EError, wait_for
from e2e.gomod import module_dir
from e2e.ports import free_port, loopback_address
from e2e.stack import Stack

MODULE = "github.com/prometheus-operator/prometheus-operator"
PORT = 9090
POD_ENV = {"SHARD": "0"}
POD_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


def release_name(stack: Stack) -> tuple[str, str, dict[str, Any]]:
    release = stack.release("kube-prometheus-stack")
    if release is None:
        raise E2EError("the stack emits no kube-prometheus-stack release")
    return str(release["name"]), str(release.get("namespace", "monitoring")), dict(release.get("values", {}))


def fullname(release: str) -> str:
    """The chart's fullname: the release name when it contains the chart's name."""
    return release if "kube-prometheus-stack" in release else f"{release}-kube-prometheus-stack"


def prometheus_object(stack: Stack) -> dict[str, Any]:
    """The Prometheus object kube-prometheus-stack's template makes from the emitted values: the
    selectors follow `*SelectorNilUsesHelmValues` (false: every object; true, the chart's default:
    only those labelled `release: <release>`), retention and storage as given."""
    release, namespace, values = release_name(stack)
    spec_values = values.get("prometheus", {}).get("prometheusSpec", {})
    spec: dict[str, Any] = {"replicas": 0, "serviceAccountName": f"{fullname(release)}-prometheus"}
    for kind in ("serviceMonitor", "podMonitor", "rule", "probe", "scrapeConfig"):
        own = spec_values.get(f"{kind}Selector") or {}
        if not own and spec_values.get(f"{kind}SelectorNilUsesHelmValues", True):
            own = {"matchLabels": {"release": release}}
        spec[f"{kind}Selector"] = own
        spec[f"{kind}NamespaceSelector"] = spec_values.get(f"{kind}NamespaceSelector") or {}
    for key in ("retention", "retentionSize"):
        if key in spec_values:
            spec[key] = spec_values[key]
    if "storageSpec" in spec_values:
        spec["storage"] = spec_values["storageSpec"]
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "metadata": {"name": f"{fullname(release)}-prometheus", "namespace": namespace,
                         "labels": {"release": release}},
            "spec": spec}


def service(stack: Stack) -> dict[str, Any]:
    release, namespace, _ = release_name(stack)
    name = f"{fullname(release)}-prometheus"
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"app.kubernetes.io/name": "prometheus", "operator.prometheus.io/name": name},
                     "ports": [{"name": "http-web", "port": PORT, "targetPort": PORT}]}}


def service_account_objects(stack: Stack) -> list[dict[str, Any]]:
    """Prometheus' service account, and of the chart's ClusterRole for it the one rule a scrape
    needs: `get` on `/metrics`, which secured metrics endpoints (Kueue's) check the token for."""
    release, namespace, _ = release_name(stack)
    name = f"{fullname(release)}-prometheus"
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
         "rules": [{"nonResourceURLs": ["/metrics", "/metrics/cadvisor"], "verbs": ["get"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]},
    ]


def service_names(stack: Stack) -> list[str]:
    """The DNS names of the chart's Prometheus Service, as a pod resolves them."""
    found = service(stack)["metadata"]
    base = f"{found['name']}.{found['namespace']}.svc"
    return [base, f"{base}.cluster.local"]


def operator_crds() -> list[dict[str, Any]]:
    """The operator's CRDs from its module. Round-trip loading: AlertmanagerConfig's matcher enum
    holds a bare `=`, which YAML 1.1's safe loaders take for the `value` tag and refuse."""
    crds = module_dir("prometheus-operator", MODULE) / "example" / "prometheus-operator-crd"
    documents = [doc for path in sorted(crds.glob("*.yaml")) for doc in YAML(typ="rt").load_all(path.read_text())]
    return [json.loads(json.dumps(doc, default=lambda tagged: str(tagged.value))) for doc in documents if doc]


def credentials(cluster: Cluster) -> dict[str, str]:
    """The API server's address and the admin's certificate files, from kwokctl's kubeconfig."""
    config = YAML(typ="safe").load(cluster.kubeconfig.read_text())
    server = config["clusters"][0]["cluster"]
    user = config["users"][0]["user"]
    return {"server": server["server"], "ca": server["certificate-authority"],
            "cert": user["client-certificate"], "key": user["client-key"]}


@dataclass
class Prometheus:
    """The running pair; `address` is where Prometheus listens (port 9090)."""

    cluster: Cluster
    name: str
    namespace: str
    address: str
    workdir: Path

    def query(self, promql: str) -> list[dict[str, Any]]:
        url = f"http://{self.address}:{PORT}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                body = json.loads(response.read())
        except OSError as err:
            raise E2EError(f"Prometheus query {promql}: {err}") from None
        return list(body["data"]["result"])

    def value(self, promql: str) -> float | None:
        found = self.query(promql)
        return float(found[0]["value"][1]) if found else None

    def rule_files(self) -> dict[str, str]:
        """The rule files the operator generated (file name -> content)."""
        found = {}
        for configmap in self.cluster.items("configmaps", self.namespace):
            if configmap["metadata"].get("labels", {}).get("prometheus-name") == self.name:
                found.update(configmap.get("data", {}))
        return found


def start_operator(cluster: Cluster, stack: Stack) -> Prometheus:
    """Apply the operator's CRDs and the chart's stand-in objects, start the operator."""
    refused = cluster.apply(list[Mapping[str, Any]](operator_crds()))
    cluster.wait_established()
    release, namespace, _ = release_name(stack)
    if cluster.get("namespace", namespace) is None:  # the stack emits it, with its Pod Security
        cluster.kubectl("create", "namespace", namespace)
    refused += cluster.apply([prometheus_object(stack), service(stack), *service_account_objects(stack)])
    if refused:
        raise E2EError(f"the Prometheus stand-in objects were refused: {refused[0][1][-400:]}")
    auth = credentials(cluster)
    argv = [str(cluster.tools["prometheus-operator"]), f"--apiserver={auth['server']}",
            f"--ca-file={auth['ca']}", f"--cert-file={auth['cert']}", f"--key-file={auth['key']}",
            f"--web.listen-address=127.0.0.1:{free_port()}", "--log-level=info"]
    cluster.processes.start("prometheus-operator", argv)
    workdir = cluster.workdir / "prometheus"
    workdir.mkdir(parents=True, exist_ok=True)
    return Prometheus(cluster, f"{fullname(release)}-prometheus", namespace, loopback_address(), workdir)


def wait_for_rules(prometheus: Prometheus, rule_name: str, contains: str, timeout: float) -> str:
    """The operator's rule file of PrometheusRule `rule_name`, once it holds `contains`."""
    def found() -> str | None:
        for key, text in prometheus.rule_files().items():
            if key.startswith(f"{prometheus.namespace}-{rule_name}-") and contains in text:
                return text
        return None
    return wait_for(found, timeout, f"prometheus-operator's rule file for {rule_name} holding {contains}")


def _statefulset(prometheus: Prometheus) -> dict[str, Any] | None:
    return prometheus.cluster.get("statefulset", f"prometheus-{prometheus.name}", prometheus.namespace)


def _secret(prometheus: Prometheus, name: str) -> dict[str, bytes] | None:
    found = prometheus.cluster.get("secret", name, prometheus.namespace)
    if found is None:
        return None
    return {k: base64.b64decode(v) for k, v in (found.get("data") or {}).items()}


def scrape_jobs(prometheus: Prometheus) -> list[str]:
    """The scrape jobs of the configuration the operator generated so far."""
    raw = (_secret(prometheus, f"prometheus-{prometheus.name}") or {}).get("prometheus.yaml.gz")
    config = YAML(typ="safe").load(gzip.decompress(raw).decode()) if raw else None
    return [str(job.get("job_name")) for job in (config or {}).get("scrape_configs") or []]


def _configuration(raw: bytes, kubeconfig: Path, pod: str, token: Path | None = None) -> str:
    """The reloader's output: `$(VAR)` expanded; service discovery through the kubeconfig; the
    pod's service-account token at `token`."""
    text = gzip.decompress(raw).decode()
    env = {**POD_ENV, "POD_NAME": pod}
    text = re.sub(r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), text)
    yaml = YAML(typ="safe")
    config = yaml.load(text)
    for job in config.get("scrape_configs", []):
        for discovery in job.get("kubernetes_sd_configs", []):
            discovery["kubeconfig_file"] = str(kubeconfig)
        if token is not None and job.get("bearer_token_file") == POD_TOKEN:
            job["bearer_token_file"] = str(token)
        if token is not None and job.get("authorization", {}).get("credentials_file") == POD_TOKEN:
            job["authorization"]["credentials_file"] = str(token)
    buffer = io.StringIO()
    yaml.dump(config, buffer)
    return buffer.getvalue()


def _write_volume(prometheus: Prometheus, volume: dict[str, Any], target: Path, sub_path: str) -> None:
    """Play the kubelet: a Secret, ConfigMap or projection of them, written at `target`."""
    sources: list[tuple[str, str]] = []
    if "secret" in volume:
        sources.append(("secret", volume["secret"]["secretName"]))
    if "configMap" in volume:
        sources.append(("configmap", volume["configMap"]["name"]))
    for source in volume.get("projected", {}).get("sources", []):
        if "secret" in source:
            sources.append(("secret", source["secret"]["name"]))
        if "configMap" in source:
            sources.append(("configmap", source["configMap"]["name"]))
    files: dict[str, bytes] = {}
    for kind, name in sources:
        if kind == "secret":
            files.update(_secret(prometheus, name) or {})
        else:
            found = prometheus.cluster.get("configmap", name, prometheus.namespace) or {}
            files.update({k: v.encode() for k, v in (found.get("data") or {}).items()})
    if sub_path:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(files.get(sub_path, b""))
        return
    target.mkdir(parents=True, exist_ok=True)
    for key, data in files.items():
        (target / key).write_bytes(data)


def start_server(prometheus: Prometheus, timeout: float) -> None:
    """Mount what the operator's StatefulSet mounts and run the real Prometheus with its arguments."""
    set_ = wait_for(lambda: _statefulset(prometheus), timeout, "prometheus-operator's StatefulSet")
    config = wait_for(lambda: (_secret(prometheus, f"prometheus-{prometheus.name}") or {}).get("prometheus.yaml.gz"),
                      timeout, "prometheus-operator's configuration Secret")
    pod_spec = set_["spec"]["template"]["spec"]
    container = next(c for c in pod_spec["containers"] if c["name"] == "prometheus")
    volumes = {v["name"]: v for v in pod_spec.get("volumes", [])}
    root = prometheus.workdir / "etc-prometheus"  # mounted at /etc/prometheus
    pod = f"prometheus-{prometheus.name}-0"
    token = prometheus.workdir / "service-account-token"
    made = prometheus.cluster.kubectl("create", "token", prometheus.name, "-n", prometheus.namespace,
                                      "--duration=24h", check=False)
    token.write_text(made.stdout.strip() if made.returncode == 0 else "")
    for mount in container.get("volumeMounts", []):
        path = mount["mountPath"]
        if not path.startswith("/etc/prometheus/"):
            continue  # the TSDB volume: a directory of the run (below)
        target = root / path.removeprefix("/etc/prometheus/")
        volume = volumes[mount["name"]]
        if "emptyDir" in volume:  # config_out: what the reloader writes
            target.mkdir(parents=True, exist_ok=True)
            (target / "prometheus.env.yaml").write_text(
                _configuration(config, prometheus.cluster.kubeconfig, pod, token))
        else:
            _write_volume(prometheus, volume, target, mount.get("subPath", ""))
    tsdb = prometheus.workdir / "tsdb"
    tsdb.mkdir(exist_ok=True)
    args = [a for a in container.get("args", [])
            if not a.startswith(("--storage.tsdb.path=", "--web.listen-address="))]
    args += [f"--storage.tsdb.path={tsdb}", f"--web.listen-address={prometheus.address}:{PORT}"]
    argv = sandbox.with_mounts([str(prometheus.cluster.tools["prometheus"]), *args], {"/etc/prometheus": root})
    prometheus.cluster.processes.start("prometheus", argv)
    wait_for(lambda: _ready(prometheus), timeout, "Prometheus' readiness endpoint")


def _ready(prometheus: Prometheus) -> bool | None:
    try:
        with urllib.request.urlopen(f"http://{prometheus.address}:{PORT}/-/ready", timeout=2) as response:
            return True if response.status == 200 else None
    except OSError:
        return None


def targets_up(prometheus: Prometheus, job_part: str) -> int:
    url = f"http://{prometheus.address}:{PORT}/api/v1/targets?state=active"
    with urllib.request.urlopen(url, timeout=5) as response:
        active = json.loads(response.read())["data"]["activeTargets"]
    return sum(1 for t in active if job_part in t.get("scrapePool", "") and t.get("health") == "up")

