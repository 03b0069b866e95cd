"""A GPU fault as the EKS node monitoring agent reports it (a node condition, the kubelet alive),
and the clock the failure scenarios (e2e/repair.py and its siblings) time their milestones by."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from e2e.cluster import Cluster, E2EError
from e2e.report import Report

GPU_CONDITION = "AcceleratedHardwareReady"  # set by the EKS node monitoring agent
# An XID the AWS provider's repair policies replace a node for
FALLEN_OFF_THE_BUS = (79, "GPU has fallen off the bus")


def gpu_fault(now: str, xid: tuple[int, str] = FALLEN_OFF_THE_BUS) -> dict[str, Any]:
    """The node status patch the node monitoring agent's GPU monitor amounts to (a strategic
    merge: the kubelet's own conditions stay), naming the XID in the reason as the agent does.
    The transition time is when the toleration starts."""
    code, what = xid
    return {"status": {"conditions": [{
        "type": GPU_CONDITION, "status": "False", "reason": f"NvidiaXID{code}Error",
        "message": f"XID {code} ({what}) in the kernel log",
        "lastHeartbeatTime": now, "lastTransitionTime": now}]}}


def mark_unhealthy(cluster: Cluster, node: str, xid: tuple[int, str] = FALLEN_OFF_THE_BUS) -> None:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    result = cluster.kubectl("patch", "node", node, "--subresource=status", "--type=strategic",
                             "-p", json.dumps(gpu_fault(now, xid)), check=False)
    if result.returncode:
        raise E2EError(f"setting {GPU_CONDITION} False on node {node}: {result.stderr.strip()}")


def heal(cluster: Cluster, node: str) -> None:
    """The node as it was: without the agent's condition (kwok nodes never had it)."""
    patch = {"status": {"conditions": [{"type": GPU_CONDITION, "$patch": "delete"}]}}
    cluster.kubectl("patch", "node", node, "--subresource=status", "--type=strategic", "-p", json.dumps(patch),
                    check=False)


def node_condition(node: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    return next((dict(c) for c in (node or {}).get("status", {}).get("conditions", []) if c.get("type") == kind), {})


class Clock:
    """Seconds since the fault, per milestone, for the rows."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.wall = time.time()
        self.marks: dict[str, float] = {}

    def mark(self, name: str) -> float:
        self.marks[name] = round(time.monotonic() - self.start, 1)
        return self.marks[name]


Probe = Callable[[], str | None]


def watch(report: Report, label: str, probes: dict[str, tuple[Probe, str]], timeout: float,
          clock: Clock) -> set[str]:
    """Poll every probe until each said something or `timeout` passed, whatever their order (the
    engines act concurrently); one row per probe, with the seconds since the fault. Returns the
    probes that said something."""
    said: dict[str, str] = {}
    failed: dict[str, str] = {}
    deadline = time.monotonic() + timeout
    while True:
        for name, (probe, _) in probes.items():
            if name in said or name in failed:
                continue
            try:
                value = probe()
            except E2EError as err:
                failed[name] = f"{err} ({clock.mark(name):.0f} s after the fault)"
                continue
            if value is not None:
                said[name] = f"{clock.mark(name):.0f} s after the fault: {value}"
        if len(said) + len(failed) == len(probes) or time.monotonic() > deadline:
            break
        time.sleep(2.0)
    for name, (_, what) in sorted(probes.items(), key=lambda p: clock.marks.get(p[0], float("inf"))):
        if name in said:
            report.scenario(label, name, True, said[name])
        else:
            report.scenario(label, name, False, failed.get(name) or f"timed out after {timeout:.0f} s waiting for "
                            f"{what} ({clock.mark(name):.0f} s after the fault)")
    return set(said)
