"""A CA and a serving certificate for 127.0.0.1, for the webhooks the API server calls."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ServingCert:
    dir: Path  # holds tls.crt / tls.key, the names controller-runtime's webhook server reads
    ca_pem: bytes


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def serving_cert(directory: Path, names: tuple[str, ...] = (), addresses: tuple[str, ...] = ()) -> ServingCert:
    """A CA, and a certificate it signs for 127.0.0.1 and localhost plus `names` / `addresses`
    (usable by a server and, for mutual TLS, a client: no key usage restriction)."""
    directory.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=gpuplat-e2e-ca",
             "-keyout", "ca.key", "-out", "ca.crt", cwd=directory)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
             "-keyout", "tls.key", "-out", "tls.csr", cwd=directory)
    sans = ["IP:127.0.0.1", "DNS:localhost", *(f"DNS:{n}" for n in names), *(f"IP:{a}" for a in addresses)]
    (directory / "san.ext").write_text(f"subjectAltName={','.join(sans)}\n")
    _openssl("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
             "-days", "2", "-extfile", "san.ext", "-out", "tls.crt", cwd=directory)
    return ServingCert(directory, (directory / "ca.crt").read_bytes())
