"""Chart repositories of our own on loopback, for `gpuplat charts pull` without the internet.

- `http_repository`: a Helm chart repository (index.yaml and the .tgz archives, served as files),
  built by Helm's own SDK from charts the tests write (`write_chart`) or the project's stand-ins;
- `oci_registry`: the read-only subset of the OCI distribution API Helm pulls a chart through
  (manifest by tag, config and chart layer by digest), plain HTTP.

Both count the requests they answer, so a test can tell a pull from a cache hit.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import yaml


def write_chart(directory: Path, name: str, version: str, note: str = "tiny") -> Path:
    """A tiny chart of ours (one ConfigMap naming `note`) at `directory`/`name`."""
    root = directory / name
    (root / "templates").mkdir(parents=True, exist_ok=True)
    meta = {"apiVersion": "v2", "name": name, "version": version, "description": f"gpuplat test chart ({note})"}
    (root / "Chart.yaml").write_text(yaml.safe_dump(meta), encoding="utf-8")
    (root / "values.yaml").write_text(f"note: {note}\n", encoding="utf-8")
    template = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Release.Name }}-note'}\n"
                "data: {note: '{{ .Values.note }}'}\n")
    (root / "templates" / "note.yaml").write_text(template, encoding="utf-8")
    return root


def package(chart: Path, into: Path) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    return Path(helm.package(chart, destination=into))


class _Counting(http.server.SimpleHTTPRequestHandler):
    requests: list[str]

    def log_message(self, *args: Any) -> None:
        self.requests.append(self.path)


@contextlib.contextmanager
def http_repository(archives: Path) -> Iterator[tuple[str, list[str]]]:
    """Serve `archives` (holding .tgz charts) as a chart repository: (its URL, the paths asked for).
    The index is Helm's (`helm repo index`), written before the server starts."""
    requests: list[str] = []
    handler = type("Handler", (_Counting,), {"requests": requests})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(archives)))
    url = f"http://127.0.0.1:{server.server_address[1]}"
    helm.repo_index_generate(archives, base_url=url)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield url, requests
    finally:
        server.shutdown()
        server.server_close()


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _oci_content(archive: Path) -> tuple[str, str, bytes, dict[str, bytes]]:
    """(repository name, tag, manifest, blobs by digest) of a chart archive, as `helm push` stores it."""
    loaded = helm.Chart.load(archive)
    meta = loaded.metadata
    layer = archive.read_bytes()
    config = json.dumps(meta).encode()
    manifest = json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.cncf.helm.config.v1+json", "digest": _digest(config),
                   "size": len(config)},
        "layers": [{"mediaType": "application/vnd.cncf.helm.chart.content.v1.tar+gzip", "digest": _digest(layer),
                    "size": len(layer)}],
    }).encode()
    tag = str(meta["version"]).replace("+", "_")  # OCI tags cannot hold "+": Helm writes "_"
    return meta["name"], tag, manifest, {_digest(config): config, _digest(layer): layer}


@contextlib.contextmanager
def oci_registry(archives: list[Path], path: str = "charts") -> Iterator[tuple[str, list[str]]]:
    """Serve chart archives at oci://127.0.0.1:PORT/`path`/<chart>:<version>: (that base, paths asked for)."""
    manifests: dict[tuple[str, str], bytes] = {}
    blobs: dict[str, bytes] = {}
    for archive in archives:
        name, tag, manifest, more = _oci_content(archive)
        manifests[(f"{path}/{name}", tag)] = manifests[(f"{path}/{name}", _digest(manifest))] = manifest
        blobs.update(more)
    requests: list[str] = []

    class Registry(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            requests.append(self.path)

        def _send(self, code: int, body: bytes, kind: str = "application/json", digest: str | None = None) -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            if digest:
                self.send_header("Docker-Content-Digest", digest)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_GET(self) -> None:
            repository, _, rest = self.path.removeprefix("/v2/").partition("/manifests/")
            if rest and (repository, rest) in manifests:
                body = manifests[(repository, rest)]
                return self._send(200, body, "application/vnd.oci.image.manifest.v1+json", _digest(body))
            digest = self.path.rpartition("/blobs/")[2]
            if "/blobs/" in self.path and digest in blobs:
                return self._send(200, blobs[digest], "application/octet-stream", digest)
            if self.path == "/v2/":
                return self._send(200, b"{}")
            return self._send(404, b'{"errors": [{"code": "MANIFEST_UNKNOWN", "message": "not found"}]}')

        do_HEAD = do_GET

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Registry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"oci://127.0.0.1:{server.server_address[1]}/{path}", requests
    finally:
        server.shutdown()
        server.server_close()
