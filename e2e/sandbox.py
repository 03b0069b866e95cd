"""Give one process files of its own at fixed paths, as a pod's volumes would.

Prometheus reads its configuration, rules and web configuration where the operator's
StatefulSet mounts them (/etc/prometheus/...), and KEDA resolves the Services its ScaledObjects
and metrics server name through /etc/hosts. Each such process runs in a mount namespace of its
own (nested in the suite's, which already makes /etc private to the run) with a directory or file
of the cluster's bind-mounted over the path: two clusters' processes never see each other's.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path


def hosts_file(path: Path, names: Mapping[str, str]) -> Path:
    """An /etc/hosts for one cluster: `names` (host name -> address) after the loopback lines."""
    lines = ["127.0.0.1 localhost", "::1 localhost"] + [f"{address} {name}" for name, address in sorted(names.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


def with_mounts(argv: list[str], mounts: Mapping[str, Path]) -> list[str]:
    """`argv`, run with each path of `mounts` (a file or directory that must exist) replaced by its
    source. The target's parent must exist; a missing directory target is created first (in the
    suite's private /etc, never on the machine)."""
    steps = []
    for target, source in mounts.items():
        kind = "-d" if source.is_dir() else "-f"
        make = f"mkdir -p {shlex.quote(target)}" if source.is_dir() else f": > {shlex.quote(target)}"
        steps.append(f"{{ [ {kind} {shlex.quote(target)} ] || {make}; }}")
        steps.append(f"mount --bind {shlex.quote(str(source))} {shlex.quote(target)}")
    script = " && ".join([*steps, 'exec "$@"'])
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh", *argv]
