"""Free loopback ports for the servers the suite starts."""

from __future__ import annotations

import socket


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


_ADDRESSES = iter(f"127.80.{i // 250}.{i % 250 + 2}" for i in range(62500))


def loopback_address() -> str:
    """An address of its own on loopback (all of 127/8 is local): servers that must listen on the
    port a Service names (Prometheus' 9090, KEDA's 9666) listen there, one address per cluster."""
    return next(_ADDRESSES)
