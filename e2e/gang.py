"""Whether a job of several pods ran as a gang, judged from one read of the API server.

A gang's pods are held running (e2e/kwokstages.py, `HOLD` on its pod template), so once every
one runs they run together, and a single list of the job's pods (one resourceVersion, one
moment) shows it. The judgement asks what the spec makes of the job, not what the plan says:

- admitted by Kueue as one workload: the job's Workload admits all its pods at once (the counts
  of its pod set assignments add up to the job's pods);
- every pod Running at the same moment, each on a node;
- no node holds more of the gang's units than one node of the pool serves (the spec's GPUs per
  node x units per GPU): a gang of two whole-node pods must be on two nodes.

A gang whose pods ended before the last one ran (the hold lost, or pods that ran one after
another) is judged at once and fails; one still waiting for a node is left to the deadline.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from e2e.shapes import Shape

RUNNING, ENDED = "Running", ("Succeeded", "Failed")
NOT_TOGETHER = "runs, not together"  # a journey's outcome when the gang's pods did not run at once


@dataclass(frozen=True)
class Gang:
    together: bool | None  # None: undecided yet (a pod still waits)
    said: str


def admitted_pods(workload: dict[str, Any] | None) -> int:
    assignments = (workload or {}).get("status", {}).get("admission", {}).get("podSetAssignments", [])
    return sum(int(a.get("count", 0) or 0) for a in assignments)


def _phase(pod: dict[str, Any]) -> str:
    return str(pod.get("status", {}).get("phase") or "Pending")


def judge(shape: Shape, workload: dict[str, Any] | None, pods: list[dict[str, Any]]) -> Gang:
    """The gang's pods as one read of the API server shows them, against the spec's node size."""
    admitted = admitted_pods(workload)
    if admitted != shape.pods:
        return Gang(False, f"Kueue's Workload admits {admitted} pod(s), not the job's {shape.pods} as one workload")
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    running = [p for p in live if _phase(p) == RUNNING and p["spec"].get("nodeName")]
    ended = [p for p in live if _phase(p) in ENDED]
    if len(running) >= shape.pods:
        per_node = Counter(p["spec"]["nodeName"] for p in running)
        packed = {n: c for n, c in per_node.items() if c * shape.units > shape.slot.per_node}
        if packed:
            return Gang(False, "; ".join(f"{c} of the gang's pods on {n}: {c} x {shape.units} > the "
                                         f"{shape.slot.per_node} units one node of {shape.slot.pool} serves"
                                         for n, c in sorted(packed.items())))
        return Gang(True, f"all {len(running)} pods Running at once on {len(per_node)} node(s) "
                          f"({', '.join(sorted(per_node))})")
    if ended:
        states = ", ".join(sorted(f"{p['metadata']['name']} {_phase(p)}" for p in live))
        return Gang(False, f"{len(ended)} pod(s) ended before all {shape.pods} ran: not together ({states})")
    return Gang(None, f"{len(running)} of {shape.pods} pod(s) Running")
