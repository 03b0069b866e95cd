"""Free loopback ports for the servers the suite starts."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

# Set by the suite for each worker it starts (e2e/parallel.py): workers run targets at once, and
# each takes its addresses from a /16 of its own.
SLOT_ENV = "GPUPLAT_E2E_SLOT"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _addresses(slot: int) -> Iterator[str]:
    second = 80 + slot % 170  # 127.80-249.x.y: clear of 127.0.0.1 and of the other slots
    return (f"127.{second}.{i // 250}.{i % 250 + 2}" for i in range(62500))


_SLOT = int(os.environ.get(SLOT_ENV) or 0)
_ADDRESSES = _addresses(_SLOT)


def pod_cidr() -> str:
    """kwok's pod addresses for this worker's cluster: the DCGM exporter stand-in serves each
    exporter pod at its address on loopback, so clusters running at once must not share them."""
    return f"10.{200 + _SLOT % 50}.0.1/16"


def service_cidr() -> str:
    """The Service addresses of this worker's cluster (the API server's default, 10.0.0.0/24, in
    every cluster otherwise): the suite serves KEDA's metrics API at its Service's cluster IP on
    loopback, and two targets' KEDA got the same one (one API server then reached the other's)."""
    return f"10.{100 + _SLOT % 50}.0.0/24"


def loopback_address() -> str:
    """An address of its own on loopback (all of 127/8 is local): servers that must listen on the
    port a Service names (Prometheus' 9090, KEDA's 9666) listen there, one address per cluster."""
    return next(_ADDRESSES)
