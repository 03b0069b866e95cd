"""A GPU fault a reboot clears, under `health.repair: reboot`: the real Karpenter reboots the node in place.

The fault is the node monitoring agent's `AcceleratedHardwareReady` False with reason
`NvidiaXID48Error` (a double-bit ECC error; the agent names the XID in the reason, as the AWS
provider's own tests write it), which the AWS provider 1.15.2 lists among the reboot-clearable
XIDs: with its `RebootForRepair` gate on (AWS_FEATURE_GATES, as the emitted release renders it),
Karpenter's repair reboots the node after the toleration (shortened to
`karpenter.REPAIR_TOLERATION`, as in e2e/repair.py) instead of replacing it. kwok's provider
stands in for EC2's RebootInstances by giving the node a new boot ID. Read off the engines:

- rebooting: the NodeClaim's `Rebooting` condition (RebootRequested, then RebootIssued), after the
  toleration and not before, the NodeClaim never deleted;
- fenced: Karpenter's `karpenter.sh/rebooting` NoSchedule taint on the node;
- new boot: the node reports another boot ID; the suite then plays the agent on the new boot,
  which finds the GPU healthy (the condition removed);
- pod: what the reboot's drain did to the running pod of a Kueue pod group of one;
- rebooted: `Rebooting` RebootSucceeded, the same NodeClaim (its UID), the taint gone, the node Ready;
- running again: the group's next pod (the tenant's launcher, played by the suite) runs.

A fatal XID (79) is still replaced: e2e/repair.py's scenario runs on the same target.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from e2e import karpenter
from e2e.cluster import Cluster, E2EError, wait_for
from e2e.contention import pending_reason, workload
from e2e.gpufault import GPU_CONDITION, Clock, heal, mark_unhealthy, node_condition, watch
from e2e.jobs import not_running
from e2e.repair import Made, claim_of, cleared, create_pod, group_member, repairing, running_node, undo, whole_gpu_slot
from e2e.report import Report
from e2e.stack import Stack

ROW = "gpu-node-reboot"
GROUP = "reboot"
XID = (48, "double-bit ECC error")  # AWS provider 1.15.2: XID 48 is reboot-clearable
REASON = f"NvidiaXID{XID[0]}Error"
REBOOTING_TAINT = "karpenter.sh/rebooting"


def reboots(stack: Stack) -> bool:
    """The emitted Karpenter release turns the AWS provider's RebootForRepair gate on."""
    values = (stack.release("karpenter") or {}).get("values", {})
    return values.get("settings", {}).get("awsFeatureGates", {}).get("rebootForRepair") is True


def _rebooting(claim: dict[str, Any] | None) -> dict[str, Any]:
    return next((dict(c) for c in (claim or {}).get("status", {}).get("conditions", [])
                 if c.get("type") == "Rebooting"), {})


def node_reboot(cluster: Cluster, stack: Stack, report: Report, timeout: float) -> None:
    label = stack.target.label
    if not reboots(stack):
        report.skip(label, ROW, "the emitted Karpenter release leaves RebootForRepair off "
                    "(health.repair is not reboot)")
        return
    if stack.release("kueue") is None:
        report.skip(label, ROW, "queueing: none: no Kueue pod group to follow")
        return
    slot = whole_gpu_slot(stack)
    if slot is None:
        report.skip(label, ROW, "no tenant has whole-GPU quota on a flavor without a Topology")
        return
    if not repairing(cluster, stack, report, ROW, "nothing is rebooted"):
        return
    made = Made([f"{GROUP}-0"])
    try:
        _scenario(cluster, report, label, slot, made, timeout)
    finally:
        undo(cluster, slot.tenant, made)


def _scenario(cluster: Cluster, report: Report, label: str, slot: Any, made: Made, timeout: float) -> None:
    ns, first = slot.tenant, made.pods[0]
    create_pod(cluster, group_member(slot, first, GROUP))
    try:
        node = wait_for(lambda: running_node(cluster, ns, first), timeout, f"pod {ns}/{first} running", 2.0)
    except E2EError as err:
        report.scenario(label, f"{ROW}-setup", False,
                        f"{err}: {pending_reason(workload(cluster, ns, 'Pod', first))}")
        return
    claim = claim_of(cluster, node) or {}
    name, uid = str(claim["metadata"]["name"]), str(claim["metadata"]["uid"])
    boot = str((cluster.get("node", node) or {}).get("status", {}).get("nodeInfo", {}).get("bootID", ""))
    report.mark()
    made.failed = node
    clock = Clock()
    mark_unhealthy(cluster, node, XID)
    toleration = karpenter.REPAIR_TOLERATION

    def kept() -> dict[str, Any]:
        found = cluster.get("nodeclaims.karpenter.sh", name)
        if found is None or found["metadata"].get("deletionTimestamp") or found["metadata"]["uid"] != uid:
            raise E2EError(f"NodeClaim {name} deleted: the node was replaced, not rebooted")
        return found

    def requested() -> str | None:
        condition = _rebooting(kept())
        if condition.get("status") != "True":
            return None
        if time.monotonic() - clock.start < toleration - 2:
            raise E2EError(f"Rebooting set before the {toleration:.0f} s toleration: {condition}")
        return f"NodeClaim {name} Rebooting {condition.get('reason')}: {condition.get('message')}"

    def fenced() -> str | None:
        taints = (cluster.get("node", node) or {}).get("spec", {}).get("taints", [])
        found = [t for t in taints if t.get("key") == REBOOTING_TAINT]
        return f"node {node} tainted {REBOOTING_TAINT}:{found[0].get('effect')}" if found else None

    def new_boot() -> str | None:
        now = str((cluster.get("node", node) or {}).get("status", {}).get("nodeInfo", {}).get("bootID", ""))
        if not now or now == boot:
            return None
        heal(cluster, node)  # the agent on the new boot finds the GPU healthy
        return f"node {node} boot ID {boot or '(none)'} -> {now}; {GPU_CONDITION} cleared by the new boot's agent"

    def pod() -> str | None:
        found = cluster.get("pod", first, ns)
        if found is None:
            return f"pod {ns}/{first} gone (the reboot's drain evicted it)"
        if found["metadata"].get("deletionTimestamp"):
            return f"pod {ns}/{first} terminating (the reboot's drain evicted it)"
        phase = found.get("status", {}).get("phase")
        if phase in ("Failed", "Succeeded"):
            return f"pod {ns}/{first} {phase}"
        return None

    def rebooted() -> str | None:
        claim_now = kept()
        condition = _rebooting(claim_now)
        if condition.get("reason") != "RebootSucceeded":
            return None
        current = cluster.get("node", node)
        if fenced() is not None or node_condition(current, "Ready").get("status") != "True":
            return None
        return (f"NodeClaim {name} kept (same UID), Rebooting {condition.get('reason')} "
                f"({condition.get('message')}), node {node} Ready, {REBOOTING_TAINT} removed")

    seen = watch(report, label, {
        f"{ROW}-rebooting": (requested, "Karpenter's Rebooting condition on the NodeClaim"),
        f"{ROW}-fenced": (fenced, f"Karpenter's {REBOOTING_TAINT} taint"),
        f"{ROW}-new-boot": (new_boot, f"a new boot ID on node {node}"),
        f"{ROW}-pod": (pod, f"the reboot's drain of pod {ns}/{first}"),
        f"{ROW}-rebooted": (rebooted, "Rebooting RebootSucceeded with the node Ready"),
    }, 2 * timeout + toleration, clock)
    if f"{ROW}-pod" in seen:
        again = f"{GROUP}-1"
        made.pods.append(again)
        with_next = group_member(slot, again, GROUP)
        # The launcher's part: the next pod once the evicted one has ended. While it still runs it
        # counts in its group of one, and Kueue deletes a next pod as excess (docs/health.md).
        with contextlib.suppress(E2EError):
            wait_for(lambda: cleared(cluster, ns, first), timeout, f"pod {ns}/{first} ended", 2.0)
        create_pod(cluster, with_next)

        def running_again() -> str | None:
            where = running_node(cluster, ns, again)
            if where is None:
                return None
            return f"pod {ns}/{again} running on {where}" + (" (the rebooted node)" if where == node else "")
        seen |= watch(report, label, {f"{ROW}-running-again": (running_again, f"pod {ns}/{again} running")},
                      2 * timeout, clock)
        if f"{ROW}-running-again" not in seen:
            kueue_said = pending_reason(workload(cluster, ns, "Pod", again))
            evicted = cluster.get("pod", first, ns)
            left = (f"phase {evicted.get('status', {}).get('phase')}, deletionTimestamp "
                    f"{evicted['metadata'].get('deletionTimestamp')}, "
                    f"finalizers {evicted['metadata'].get('finalizers')}" if evicted else "gone")
            report.scenario(label, f"{ROW}-why-not-running", False,
                            f"Kueue: {kueue_said}; {not_running(cluster, ns, again)}; the evicted pod {first}: {left}")
    summary = ", ".join(f"{k.removeprefix(ROW + '-')} {v:.0f} s" for k, v in clock.marks.items())
    report.scenario(label, f"{ROW}-times", len(seen) == 6,
                    f"{GPU_CONDITION} False ({REASON}) on node {node} under {ns}'s pod in flavor {slot.flavor}; from "
                    f"the fault: {summary}; as run: Karpenter's toleration {toleration:.0f} s "
                    f"(10 minutes upstream for a known XID)")
