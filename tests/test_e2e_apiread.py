"""The suite's reads answer as `kubectl get -o json` does (e2e/apiread.py)."""

from __future__ import annotations

import email.message
import http.client
import http.server
import json
import threading
import urllib.error
from pathlib import Path
from typing import Any

import pytest

from e2e.apiread import ApiReader, as_list, index
from e2e.errors import E2EError

CORE = {"groupVersion": "v1", "resources": [
    {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod", "shortNames": ["po"]},
    {"name": "pods/log", "singularName": "", "namespaced": True, "kind": "Pod"},
    {"name": "nodes", "singularName": "node", "namespaced": False, "kind": "Node", "shortNames": ["no"]},
    {"name": "events", "singularName": "event", "namespaced": True, "kind": "Event", "shortNames": ["ev"]},
]}
EVENTS = {"groupVersion": "events.k8s.io/v1", "resources": [
    {"name": "events", "singularName": "event", "namespaced": True, "kind": "Event", "shortNames": ["ev"]},
]}
KARPENTER = {"groupVersion": "karpenter.sh/v1", "resources": [
    {"name": "nodeclaims", "singularName": "nodeclaim", "namespaced": False, "kind": "NodeClaim"},
    {"name": "nodeclaims/status", "singularName": "", "namespaced": False, "kind": "NodeClaim"},
]}
DOCUMENTS = [("", CORE), ("events.k8s.io", EVENTS), ("karpenter.sh", KARPENTER)]


def test_names_resolve_as_kubectl_resolves_them() -> None:
    names = index(DOCUMENTS)
    assert names["pods"] == names["pod"] == names["po"] == names["Pod".lower()]
    assert names["pods"].prefix == "/api/v1" and names["pods"].namespaced
    # The core group claims a name first: `kubectl get events` reads v1 Events.
    assert names["events"].prefix == "/api/v1"
    assert names["events.events.k8s.io"].prefix == "/apis/events.k8s.io/v1"
    claim = names["nodeclaims.karpenter.sh"]
    assert claim == names["nodeclaim"] and claim.prefix == "/apis/karpenter.sh/v1" and not claim.namespaced
    assert "pods/log" not in names and "nodeclaims/status" not in names


def test_a_typed_list_becomes_kubectl_s_list_of_typed_items() -> None:
    listed = as_list({"apiVersion": "karpenter.sh/v1", "kind": "NodeClaimList", "metadata": {},
                      "items": [{"metadata": {"name": "a"}}]})
    assert listed["kind"] == "List"
    assert listed["items"] == [{"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "a"}}]
    assert as_list({"kind": "PodList", "items": None})["items"] == []


class Recorded(ApiReader):
    """The reader with the API server's answers given by path."""

    def __init__(self, answers: dict[str, dict[str, Any] | None]) -> None:
        super().__init__(Path("/nonexistent"))
        self.answers = answers
        self.asked: list[str] = []

    def _request(self, path: str, what: str) -> dict[str, Any] | None:
        self.asked.append(path)
        if path == "/api/v1":
            return CORE
        if path == "/apis":
            return {"groups": [{"name": "karpenter.sh", "preferredVersion": {"groupVersion": "karpenter.sh/v1"}},
                               {"name": "broken.io", "preferredVersion": {"groupVersion": "broken.io/v1"}}]}
        if path == "/apis/karpenter.sh/v1":
            return KARPENTER
        if path == "/apis/broken.io/v1":
            raise E2EError("get discovery: 503 service unavailable")
        return self.answers.get(path)


def test_paths_namespaces_and_pages_are_kubectl_s() -> None:
    reader = Recorded({
        "/api/v1/pods": {"kind": "PodList", "apiVersion": "v1", "metadata": {"continue": "x y"},
                         "items": [{"metadata": {"name": "a"}}]},
        "/api/v1/pods?continue=x%20y": {"kind": "PodList", "apiVersion": "v1", "metadata": {},
                                        "items": [{"metadata": {"name": "b"}}]},
        "/api/v1/namespaces/default/pods/p": {"kind": "Pod", "metadata": {"name": "p"}},
        "/apis/karpenter.sh/v1/nodeclaims": {"kind": "NodeClaimList", "apiVersion": "karpenter.sh/v1",
                                             "items": []},
    })
    known, pods = reader.get("pods")  # no namespace: all of them, every page
    assert known and pods is not None and [p["metadata"]["name"] for p in pods["items"]] == ["a", "b"]
    assert reader.get("pod", "p") == (True, {"kind": "Pod", "metadata": {"name": "p"}})  # in default
    assert reader.get("pod", "gone", "train") == (True, None)  # not found
    # A cluster-scoped resource ignores the namespace; a group's discovery failing hides only it.
    assert reader.get("nodeclaims.karpenter.sh", namespace="train")[1] == {
        "apiVersion": "v1", "kind": "List", "items": [], "metadata": {"resourceVersion": ""}}
    # A name discovery does not know is asked again, then left to kubectl.
    before = reader.asked.count("/api/v1")
    assert reader.get("widgets") == (False, None)
    assert reader.asked.count("/api/v1") == before + 1


def test_the_kubeconfig_s_inline_certificates_are_written_beside_it(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    reader = ApiReader(kubeconfig)
    path = reader._file({"client-key-data": "c2VjcmV0"}, "client-key")  # pyright: ignore[reportPrivateUsage]
    assert Path(path).read_bytes() == b"secret" and Path(path).stat().st_mode & 0o077 == 0
    assert reader._file({"client-key": "/k"}, "client-key") == "/k"  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(E2EError, match="kubeconfig"):  # none yet: the suite's error, not a traceback
        ApiReader(tmp_path / "none").get("pods")


class Busy(ApiReader):
    """A server whose watch cache re-initialises for `busy` answers, then answers."""

    def __init__(self, busy: int, code: int = 429, retry_after: str | None = "0") -> None:
        super().__init__(Path("/nonexistent"))
        self.busy, self.code, self.retry_after, self.calls = busy, code, retry_after, 0

    def _once(self, path: str) -> dict[str, Any]:
        self.calls += 1
        if self.calls <= self.busy:
            headers = email.message.Message()
            if self.retry_after is not None:
                headers["Retry-After"] = self.retry_after
            raise urllib.error.HTTPError(path, self.code, "busy", headers, None)
        return {"kind": "Pod"}


def test_a_server_asking_to_come_back_is_asked_again_as_client_go_does() -> None:
    busy = Busy(3)
    found = busy._request("/api/v1/pods/p", "pod p")  # pyright: ignore[reportPrivateUsage]
    assert found == {"kind": "Pod"} and busy.calls == 4
    with pytest.raises(E2EError, match="429"):  # not for ever
        Busy(100)._request("/x", "x")  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(E2EError, match="500"):  # a plain server error is final
        Busy(1, 500, None)._request("/x", "x")  # pyright: ignore[reportPrivateUsage]


class _Server(http.server.ThreadingHTTPServer):
    """A keep-alive HTTP server that answers JSON, remembers each request's client port, and
    (with `drop`) closes a connection after its first answer without saying so."""

    def __init__(self, drop: bool) -> None:
        self.ports: list[int] = []
        self.drop = drop
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:
        self.server.ports.append(self.client_address[1])
        found = self.path != "/missing"
        body = json.dumps({"kind": "Pod", "path": self.path} if found else {"message": "nope"}).encode()
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = self.server.drop

    def log_message(self, *args: Any) -> None:
        pass


class _Plain(ApiReader):
    """The reader, over plain HTTP to the test's server instead of the kubeconfig's TLS."""

    def __init__(self, port: int) -> None:
        super().__init__(Path("/nonexistent"))
        self._server = f"http://127.0.0.1:{port}"
        self.port = port

    def _open(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)


@pytest.mark.parametrize("drop", [False, True])
def test_reads_keep_their_connection_and_open_another_when_the_server_closed_it(drop: bool) -> None:
    server = _Server(drop)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        reader = _Plain(server.server_address[1])
        answers = [reader._request(f"/api/v1/pods/p{i}", "pod") for i in range(3)]  # pyright: ignore[reportPrivateUsage]
        assert [a and a["path"] for a in answers] == ["/api/v1/pods/p0", "/api/v1/pods/p1", "/api/v1/pods/p2"]
        assert reader._request("/missing", "x") is None  # pyright: ignore[reportPrivateUsage]
        # Kept alive: one connection for all four; dropped after each answer: a new one each time.
        assert len(set(server.ports)) == (4 if drop else 1), server.ports
    finally:
        server.shutdown()
        server.server_close()
