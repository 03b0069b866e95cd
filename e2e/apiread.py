"""Reads from a cluster's API server over HTTPS, without a kubectl process per read.

The suite polls: its node agents list nodes and pods every second, the autoscaling loop lists
deployments, pods and nodes every two, and every `wait_for` reads an object twice a second. As
`kubectl get -o json` each read was a process (its start, its discovery cache, its JSON
printer) and cost about ten times the CPU of the request itself; on 2 cores that CPU is what the
other targets and the controllers wait for (bench/results.md). So `Cluster.get` asks the API
server directly, with the kubeconfig's certificates, and answers as kubectl does:

- a resource is named as kubectl takes it (plural, singular, short name, kind, or `plural.group`),
  resolved through the API server's discovery, core group first, then the groups in the order
  the server lists them (kubectl's order); a name discovery does not know (yet: a CRD installed
  since) makes discovery run again, and one it still does not know is left to kubectl;
- a list comes back as kubectl's `List` with each item's `apiVersion` and `kind` filled in;
- no namespace lists across all of them (`-A`), a named object with none is in `default`, and a
  cluster-scoped resource ignores the namespace;
- not found is `None`; a server asking to come back (429, a 5xx with Retry-After, as during a
  watch cache's re-initialisation) is asked again as client-go does; any other refusal is an
  error with the server's words.
"""

from __future__ import annotations

import base64
import http.client
import io
import json
import ssl
import threading
import time
import urllib.error
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from e2e.errors import E2EError

TIMEOUT = 30.0
RETRIES = 10  # client-go's default for a server that asks to retry


@dataclass(frozen=True)
class Resource:
    prefix: str  # /api/v1 or /apis/<group>/<version>
    plural: str
    namespaced: bool


def index(documents: list[tuple[str, dict[str, Any]]]) -> dict[str, Resource]:
    """Every name kubectl takes for a resource, from discovery's APIResourceLists, given as
    (group, document) in kubectl's order of preference: the first group to claim a name keeps it."""
    names: dict[str, Resource] = {}
    for group, document in documents:
        prefix = f"/apis/{document['groupVersion']}" if group else "/api/v1"
        for entry in document.get("resources", []):
            plural = entry["name"]
            if "/" in plural:  # a subresource (pods/log, deployments/scale)
                continue
            resource = Resource(prefix, plural, bool(entry.get("namespaced")))
            singular = entry.get("singularName") or entry.get("kind", "").lower()
            for name in {plural, singular, entry.get("kind", "").lower(), *entry.get("shortNames", [])}:
                if name:
                    names.setdefault(name, resource)
                    if group:
                        names.setdefault(f"{name}.{group}", resource)
    return names


def as_list(document: dict[str, Any]) -> dict[str, Any]:
    """A typed list (PodList, NodeClaimList) as kubectl prints it: a `List` of typed items."""
    kind = str(document.get("kind", ""))
    kind = kind[:-len("List")] if kind.endswith("List") else kind
    items = [{"apiVersion": document.get("apiVersion", "v1"), "kind": kind, **item}
             for item in document.get("items") or []]
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}


class ApiReader:
    """GETs against the API server of one kubeconfig (its current context), safe across threads."""

    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig
        self._lock = threading.Lock()
        self._local = threading.local()  # each thread's kept-alive connection
        self._server = ""
        self._context: ssl.SSLContext | None = None
        self._names: dict[str, Resource] = {}

    def get(self, resource: str, name: str = "", namespace: str = "") -> tuple[bool, dict[str, Any] | None]:
        """(known, the object or list or None when not found); known is False for a resource
        discovery does not name, which the caller leaves to kubectl."""
        found = self._resolve(resource)
        if found is None:
            return False, None
        path = found.prefix
        if found.namespaced and (namespace or name):
            path += f"/namespaces/{urllib.parse.quote(namespace or 'default')}"
        path += f"/{found.plural}" + (f"/{urllib.parse.quote(name)}" if name else "")
        if name:
            return True, self._request(path, f"{resource} {name}")
        document = self._request(path, resource)
        if document is None:
            return True, None
        items = list(document.get("items") or [])
        while (document.get("metadata") or {}).get("continue"):
            token = urllib.parse.quote(document["metadata"]["continue"])
            document = self._request(f"{path}?continue={token}", resource) or {}
            items += document.get("items") or []
        return True, as_list({**document, "items": items})

    def _resolve(self, resource: str) -> Resource | None:
        with self._lock:
            if resource not in self._names:
                self._names = self._discover()
            return self._names.get(resource)

    def _discover(self) -> dict[str, Resource]:
        documents: list[tuple[str, dict[str, Any]]] = []
        core = self._request("/api/v1", "discovery")
        if core is not None:
            documents.append(("", core))
        for group in (self._request("/apis", "discovery") or {}).get("groups", []):
            version = group.get("preferredVersion", {}).get("groupVersion")
            try:  # an aggregated API whose server is down must not hide the others
                document = self._request(f"/apis/{version}", "discovery") if version else None
            except E2EError:
                document = None
            if document is not None:
                documents.append((group["name"], document))
        return index(documents)

    def _request(self, path: str, what: str) -> dict[str, Any] | None:
        # client-go's rule, which kubectl followed: a 429 (or a 5xx with Retry-After) is the
        # server asking to come back, as during a watch cache's re-initialisation.
        for attempt in range(RETRIES + 1):
            try:
                return self._once(path)
            except urllib.error.HTTPError as err:
                if err.code == 404:
                    return None
                body = err.read().decode(errors="replace")
                wait = _retry_after(err.code, err.headers.get("Retry-After"))
                if wait is not None and attempt < RETRIES:
                    time.sleep(wait)
                    continue
                try:
                    message = json.loads(body).get("message", body)
                except ValueError:
                    message = body
                raise E2EError(f"get {what}: {err.code} {message.strip()[-1500:]}") from None
            except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
                raise E2EError(f"get {what}: {err}") from None
        raise AssertionError("unreachable")

    def _once(self, path: str) -> dict[str, Any]:
        # One kept-alive connection per thread: a TLS handshake per read cost both the suite and the
        # API server more CPU than many of the reads themselves. A connection the server closed
        # while idle is opened again once (a GET is safe to repeat).
        try:
            return self._get(self._kept(False), path)
        except (ConnectionError, http.client.HTTPException):
            return self._get(self._kept(True), path)

    def _get(self, connection: http.client.HTTPConnection, path: str) -> dict[str, Any]:
        try:
            connection.request("GET", path, headers={"Accept": "application/json"})
            response = connection.getresponse()
            body = response.read()
        except (ConnectionError, http.client.HTTPException):
            connection.close()
            raise
        if response.status >= 400:
            raise urllib.error.HTTPError(self._server + path, response.status, response.reason,
                                         response.headers, io.BytesIO(body))
        found: dict[str, Any] = json.loads(body)
        return found

    def _kept(self, reopen: bool) -> http.client.HTTPConnection:
        connection: http.client.HTTPConnection | None = getattr(self._local, "connection", None)
        if connection is None or reopen:
            connection = self._open()
            self._local.connection = connection
        return connection

    def _open(self) -> http.client.HTTPConnection:
        server, context = self._connection()
        address = urllib.parse.urlsplit(server)
        return http.client.HTTPSConnection(address.hostname or "", address.port, timeout=TIMEOUT, context=context)

    def _connection(self) -> tuple[str, ssl.SSLContext]:
        if self._context is None:
            try:
                self._server, self._context = self._load()
            except (OSError, KeyError, StopIteration, ValueError) as err:
                raise E2EError(f"the kubeconfig {self.kubeconfig}: {err!r}") from None
        return self._server, self._context

    def _load(self) -> tuple[str, ssl.SSLContext]:
        config = YAML(typ="safe").load(self.kubeconfig.read_text())
        current = next(c["context"] for c in config["contexts"] if c["name"] == config["current-context"])
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == current["cluster"])
        user = next(u["user"] for u in config["users"] if u["name"] == current["user"])
        context = ssl.create_default_context(cafile=cluster.get("certificate-authority"),
                                             cadata=_decoded(cluster.get("certificate-authority-data")))
        context.load_cert_chain(self._file(user, "client-certificate"), self._file(user, "client-key"))
        return str(cluster["server"]).rstrip("/"), context

    def _file(self, user: dict[str, Any], key: str) -> str:
        """The kubeconfig's file for a certificate or key, or its inline data written beside it."""
        if key in user:
            return str(user[key])
        path = self.kubeconfig.with_name(f"{self.kubeconfig.name}.{key}")
        path.write_bytes(base64.b64decode(user[f"{key}-data"]))
        path.chmod(0o600)
        return str(path)


def _retry_after(code: int, header: str | None) -> float | None:
    """Seconds to wait before asking again, or None when the answer is final."""
    if code != 429 and not (code >= 500 and header):
        return None
    try:
        return min(max(float(header or 1), 0.0), 10.0)
    except ValueError:
        return 1.0


def _decoded(data: str | None) -> str | None:
    return base64.b64decode(data).decode() if data else None
