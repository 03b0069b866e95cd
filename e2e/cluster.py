"""A local control plane made by kwokctl from the binaries we built, and kubectl against it."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from e2e.apiread import ApiReader
from e2e.errors import E2EError
from e2e.kwokstages import stages
from e2e.ports import pod_cidr, service_cidr

T = TypeVar("T")

# The kwok controller manages (keeps Ready) only nodes carrying this label: e2e/nodes.py says why.
BOOTED = "gpuplat.dev/e2e-booted"


@dataclass
class Processes:
    """Controllers the suite starts itself; each logs to a file beside the cluster."""

    logdir: Path
    running: dict[str, subprocess.Popen[bytes]] = field(default_factory=lambda: {})

    def start(self, name: str, argv: list[str], env: Mapping[str, str] | None = None) -> Path:
        log = self.logdir / f"{name}.log"
        handle = log.open("ab")
        self.running[name] = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT,
                                              env={**os.environ, **(env or {})}, start_new_session=True)
        return log

    def stop(self, *names: str) -> None:
        """Stop these controllers (all, without names), the last started first."""
        chosen = [n for n in reversed(self.running) if not names or n in names]
        for name in chosen:
            self.running[name].terminate()
        for name in chosen:
            process = self.running.pop(name)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:  # a controller that ignored SIGTERM
                process.kill()

    def check(self) -> None:
        for name, process in self.running.items():
            if process.poll() is not None:
                raise E2EError(f"{name} exited with {process.returncode}; see {self.logdir}")


def service_account_identity(namespace: str, account: str) -> dict[str, Any]:
    """`Cluster.kubectl` keyword arguments to act as a pod's service account would (impersonated)."""
    return {"as_user": f"system:serviceaccount:{namespace}:{account}",
            "as_groups": ["system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"]}


def wait_for(probe: Callable[[], T | None], timeout: float, what: str, interval: float = 0.5) -> T:
    """Poll a condition a controller reports until it holds; raise with `what` at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value is not None:
            return value
        if time.monotonic() > deadline:
            raise E2EError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


# Shared by the workers of a run (they share its TMPDIR and its network namespace).
CREATE_LOCK = Path(tempfile.gettempdir()) / "gpuplat-e2e-kwokctl-create.lock"


class Cluster:
    def __init__(self, name: str, workdir: Path, tools: Mapping[str, Path]) -> None:
        self.name = name
        self.workdir = workdir
        self.tools = tools
        self.kubeconfig = workdir / "kubeconfig"
        self.processes = Processes(workdir)
        self.env = {"KWOK_WORKDIR": str(workdir / "kwok"), "KUBECONFIG": str(self.kubeconfig)}
        self.reader = ApiReader(self.kubeconfig)

    def create(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.reader = ApiReader(self.kubeconfig)  # the new cluster's address and certificates
        t = self.tools
        argv = [
            str(t["kwokctl"]), "create", "cluster", "--name", self.name, "--runtime", "binary",
            "--kube-authorization", "--kube-admission", "--quiet-pull", "--wait", "3m",
            "--kubeconfig", str(self.kubeconfig),
            "--etcd-binary", str(t["etcd"]),
            "--kube-apiserver-binary", str(t["kube-apiserver"]),
            "--kube-controller-manager-binary", str(t["kube-controller-manager"]),
            "--kube-scheduler-binary", str(t["kube-scheduler"]),
            "--kwok-controller-binary", str(t["kwok"]),
            # The namespace has no default route, from which the API server would pick the
            # address it advertises to the cluster (the kubernetes Service's endpoint).
            "--extra-args", "kube-apiserver=advertise-address=127.0.0.1",
            "--extra-args", "kube-apiserver=bind-address=127.0.0.1",
            "--extra-args", f"kube-apiserver=service-cluster-ip-range={service_cidr()}",
            "--config", str(self._kwokctl_configuration()),
        ]
        env = {**os.environ, **self.env, "KWOK_KUBECTL_BINARY": str(t["kubectl"])}
        # kwokctl picks its components' ports as the first free ones below 32767: two clusters
        # made at once in the suite's namespace took the same ports (one API server answered for
        # both, one etcd held both). One at a time: each binds its ports before the next looks.
        with open(CREATE_LOCK, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            result = subprocess.run(argv, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            raise E2EError(f"kwokctl create cluster failed: {result.stderr.strip()[-2000:]}")

    def _kwokctl_configuration(self) -> Path:
        """Nodes become Ready only once the node agents booted them (e2e/nodes.py, BOOTED); pods
        take addresses of this worker's own range (e2e/ports.py). `override` replaces an argument
        kwokctl passes already; one it does not pass (cidr) must be given without it, or it is dropped.
        A file, not --extra-args: kwokctl 0.8 indexes a second component's repeated extra args
        wrongly and panics. The kwok controller's Stages are kwokctl's defaults, but that a pod may
        be held running (e2e/kwokstages.py)."""
        patch = {"name": "kwok-controller", "extraArgs": [
            {"key": "manage-all-nodes", "value": "false", "override": True},
            {"key": "manage-nodes-with-label-selector", "value": f"{BOOTED}=true"},
            {"key": "cidr", "value": pod_cidr()}]}
        path = self.workdir / "kwokctl.yaml"
        documents = [{"apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokctlConfiguration",
                      "componentsPatches": [patch]}, *stages()]
        path.write_text("\n---\n".join(json.dumps(d) for d in documents))
        return path

    def server_version(self) -> str:
        """The version the API server reports (`/version`'s gitVersion)."""
        found = json.loads(self.kubectl("get", "--raw", "/version").stdout)
        return str(found["gitVersion"])

    def delete(self) -> None:
        self.processes.stop()
        subprocess.run([str(self.tools["kwokctl"]), "delete", "cluster", "--name", self.name],
                       env={**os.environ, **self.env}, capture_output=True)

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True,
                as_user: str | None = None, as_groups: Iterable[str] = ()) -> subprocess.CompletedProcess[str]:
        identity = [f"--as={as_user}"] if as_user else []
        identity += [f"--as-group={g}" for g in as_groups]
        result = subprocess.run([str(self.tools["kubectl"]), "--kubeconfig", str(self.kubeconfig),
                                 *identity, *args], input=stdin, capture_output=True, text=True)
        if check and result.returncode != 0:
            raise E2EError(f"kubectl {' '.join(args[:3])}: {result.stderr.strip()[-1500:]}")
        return result

    def get(self, resource: str, name: str = "", namespace: str = "") -> dict[str, Any] | None:
        """As `kubectl get -o json` gives it (all namespaces without one), None when not found;
        read over HTTPS (e2e/apiread.py) unless discovery does not know the resource."""
        known, found = self.reader.get(resource, name, namespace)
        if known:
            return found
        args = ["get", resource, *([name] if name else []), "-o", "json"]
        args += ["-n", namespace] if namespace else (["-A"] if not name else [])
        result = self.kubectl(*args, check=False)
        if result.returncode != 0:
            if "NotFound" in result.stderr or "not found" in result.stderr:
                return None
            raise E2EError(f"kubectl get {resource} {name}: {result.stderr.strip()}")
        return json.loads(result.stdout)

    def items(self, resource: str, namespace: str = "") -> list[dict[str, Any]]:
        found = self.get(resource, namespace=namespace)
        return list(found["items"]) if found else []

    def wait_established(self, timeout: float = 120.0, check: bool = True) -> list[str]:
        """Wait until every CRD is Established; returns those still not at the deadline (raises
        with their names when `check`). Not `kubectl wait --for=condition=established crd --all`:
        it fails at once on a CRD created a moment ago, whose status has no conditions yet."""
        def pending() -> list[str]:
            return [c["metadata"]["name"] for c in self.items("customresourcedefinitions") if not any(
                k.get("type") == "Established" and k.get("status") == "True"
                for k in (c.get("status") or {}).get("conditions") or [])]
        try:
            wait_for(lambda: [] if not pending() else None, timeout, "every CRD to be Established")
        except E2EError:
            left = pending()
            if check and left:
                raise E2EError(f"CRDs not Established after {timeout:.0f} s: {', '.join(left[:5])}") from None
            return left
        return []

    def apply(self, manifests: Sequence[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], str]]:
        """Server-side apply; returns the objects the API server refused, with its words."""
        if not manifests:
            return []
        batch = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(manifests)})
        if self._apply(batch).returncode == 0:
            return []
        refused = []
        for manifest in manifests:  # attribute each refusal to its object
            result = self._apply(json.dumps(manifest))
            if result.returncode != 0:
                refused.append((manifest, result.stderr.strip()))
        return refused

    def _apply(self, documents: str) -> subprocess.CompletedProcess[str]:
        return self.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=gpuplat",
                            "-f", "-", stdin=documents, check=False)
