"""A GPU fails under a tenant's running work: what the real engines do about it.

The fault is made as the EKS node monitoring agent reports it (e2e/gpufault.py): the node's status
condition `AcceleratedHardwareReady` set False (reason NvidiaXID79Error, a GPU fallen off the
bus), its kubelet alive (kwok keeps it Ready). Nothing in Kubernetes taints for that condition;
Karpenter's repair (a disruption method since 1.15) acts on it, as on EKS: the suite's Karpenter
is the kwok provider with the AWS provider's repair policies (e2e/tools/karpenter/main.go), their
tolerations shortened to `karpenter.REPAIR_TOLERATION` (10 minutes upstream for this condition),
and the NodeRepair gate as the emitted release renders it. Every judgement is read off the
engines' objects:

- repaired: Karpenter replaces the node's NodeClaim once the toleration is over (its log:
  "disrupting node(s)" for a command of reason Unhealthy; replace-first: the new node is
  launched before the old one is drained), not before;
- node removed: Karpenter terminates the node (its disrupted taint fences it meanwhile);
- lost pod cleared: the pod ends Failed, as its kubelet leaves it once Karpenter's drain evicts
  it (kwok's `pod-stop`, e2e/kwokstages.py), or the pod garbage collector fails it once its node is gone;
- admission: once the group's next pod runs, Kueue's Workload is admitted: the same admission
  kept (the dev run of 2026-12-05: Kueue never evicted the group, whose lost pod went from Ready
  to Failed to gone and left no not-ready pod for `waitForPodsReady` to time out), or admitted
  again after an eviction (reason PodsReadyTimeout, `requeueState.count`); the row says which;
- new node: Karpenter launches a node in the same NodePool for the requeued work;
- running again: the work's next pod runs on another node.

The running work is a plain pod group of one pod (Kueue's pod integration): kwok completes a
Job's pods as soon as they run, a plain pod keeps running. After Kueue evicts a pod group it
deletes the pod; what recreates it is the tenant's launcher, played here by the suite (the
group's next pod), and Kueue takes a new pod into the group only once the lost one is gone.
A job of two ranks on two nodes, one lost, resuming with its checkpoints: e2e/resume.py.

Shortened for the suite, and said so in the rows: Karpenter's tolerations, and Kueue's
`recoveryTimeout` (10 minutes as emitted; RECOVERY here, Kueue restarted with the emitted
configuration changed in that one field, and restarted as emitted afterwards). A node whose
kubelet dies (Ready Unknown) is repaired by the same controller on the same policy list; it is
not run again here (the node controller's grace period is 200 s on the suite's control plane).
"""

from __future__ import annotations

import calendar
import contextlib
import copy
import json
import time
from dataclasses import dataclass
from typing import Any

from e2e import karpenter, kueue, quota
from e2e.cluster import Cluster, E2EError, wait_for
from e2e.contention import admitted, condition, holder_pod, pending_reason, quiet, workload
from e2e.gpufault import GPU_CONDITION, Clock, heal, mark_unhealthy, node_condition, watch
from e2e.jobs import not_running
from e2e.report import Report
from e2e.scenarios import tenant_identity
from e2e.stack import Stack

RECOVERY = "20s"  # Kueue's recoveryTimeout for this scenario (10m as emitted)
GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
GROUP_COUNT = "kueue.x-k8s.io/pod-group-total-count"
GPU = "nvidia.com/gpu"
GROUP = "repair"
NODEPOOL_LABEL = "karpenter.sh/nodepool"
DISRUPTED = "karpenter.sh/disrupted"  # the taint Karpenter puts on a node it terminates
# The disruption queue's log line for a command, and the command of a repair (its reason Unhealthy)
REPAIRING = ("disrupting node(s)", '"command":"Unhealthy/')


def repair_gate(cluster: Cluster, stack: Stack) -> tuple[bool | None, str]:
    """(None: the emitted release turns NodeRepair off; False: on, yet Karpenter runs no repair
    controller; True) with what said so. Since 1.15 repair is a method of the disruption
    controller, on with the gate (disruption/repair.go); controller-runtime logs the controller's start."""
    gates = karpenter.feature_gates(stack)
    if "NodeRepair=true" not in gates.split(","):
        return None, f"the emitted Karpenter release's feature gates are {gates or 'none'}: NodeRepair off"
    log = cluster.workdir / "karpenter.log"
    started = log.exists() and any('"Starting Controller"' in line and '"controller":"disruption"' in line
                                   for line in log.read_text(errors="replace").splitlines())
    return started, f"NodeRepair on ({gates}); Karpenter's disruption controller (repair one of its methods) " + \
        ("started" if started else f"not started (no such line in {log})")


def repairing(cluster: Cluster, stack: Stack, report: Report, row: str, off: str) -> bool:
    """Karpenter repairs here; else `row` says why not: skipped, `off` said, where the release
    turns NodeRepair off, failed where it is on and no repair controller runs."""
    gate, said = repair_gate(cluster, stack)
    if gate is None:
        report.skip(stack.target.label, row, f"{said}: {off}")
    elif not gate:
        report.scenario(stack.target.label, row, False, said)
    return bool(gate)


def undo(cluster: Cluster, namespace: str, made: Made) -> None:
    """Remove what a failure scenario made; a failed node that is still there is healed."""
    remove_pods(cluster, namespace, made.pods)
    if made.failed and cluster.get("node", made.failed) is not None:
        heal(cluster, made.failed)


def karpenter_said(cluster: Cluster, phrases: tuple[str, ...], name: str) -> str | None:
    """Karpenter's log line saying every one of `phrases` about object `name`, if any."""
    log = cluster.workdir / "karpenter.log"
    if not log.exists():
        return None
    for line in log.read_text(errors="replace").splitlines():
        if all(phrase in line for phrase in phrases) and f'"{name}"' in line:
            return line.strip()[:300]
    return None


def claim_of(cluster: Cluster, node: str) -> dict[str, Any] | None:
    return next((c for c in cluster.items("nodeclaims.karpenter.sh") if c.get("status", {}).get("nodeName") == node),
                None)


def whole_gpu_slot(stack: Stack) -> quota.Slot | None:
    """A tenant's whole-GPU quota on an on-demand (else any) flavor without a Topology."""
    found = quota.within_namespace_quota(quota.slots(stack.of_type(quota.CLUSTER_QUEUE), stack.of_type(quota.FLAVOR)),
                                         stack.of_type(quota.RESOURCE_QUOTA))
    whole = [s for s in found if s.resource == GPU and s.nominal >= 1]
    whole.sort(key=lambda s: (s.node_labels.get("karpenter.sh/capacity-type") != "on-demand", s.tenant, s.flavor))
    return whole[0] if whole else None


def group_member(slot: quota.Slot, name: str, group: str = GROUP) -> dict[str, Any]:
    """Pod `name` of a Kueue plain pod group of one, holding one whole GPU of the slot."""
    pod = holder_pod(slot, 1, name)
    pod["metadata"]["labels"][GROUP_LABEL] = group
    pod["metadata"]["annotations"] = {GROUP_COUNT: "1"}
    return pod


def create_pod(cluster: Cluster, manifest: dict[str, Any]) -> None:
    result = cluster.kubectl("create", "-f", "-", stdin=json.dumps(manifest), check=False,
                             **tenant_identity(manifest["metadata"]["namespace"]))
    if result.returncode:
        raise E2EError(f"creating pod {manifest['metadata']['name']}: {result.stderr.strip()}")


def remove_pods(cluster: Cluster, namespace: str, names: list[str]) -> None:
    for name in names:  # Kueue's finalizer would hold a pod of a node that is gone
        cluster.kubectl("patch", "pod", name, "-n", namespace, "--type=merge",
                        "-p", '{"metadata":{"finalizers":null}}', check=False)
        cluster.kubectl("delete", "pod", name, "-n", namespace, "--force", "--grace-period=0",
                        "--ignore-not-found", "--wait=false", check=False)


def running_node(cluster: Cluster, namespace: str, name: str) -> str | None:
    return node_running(cluster.get("pod", name, namespace) or {})


def node_running(pod: dict[str, Any]) -> str | None:
    """The node `pod` runs on, Running and Ready (None otherwise)."""
    ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                for c in pod.get("status", {}).get("conditions", []))
    node = pod.get("spec", {}).get("nodeName")
    return str(node) if ready and node and pod.get("status", {}).get("phase") == "Running" else None


@dataclass
class Made:
    """What the scenario made: its pods, and the node it failed (healed whatever happened)."""

    pods: list[str]
    failed: str = ""


def node_failure(cluster: Cluster, stack: Stack, report: Report, timeout: float) -> None:
    label = stack.target.label
    if stack.release("kueue") is None:
        report.skip(label, "gpu-node-failure", "queueing: none: no Kueue requeues the work")
        return
    slot = whole_gpu_slot(stack)
    if slot is None:
        report.skip(label, "gpu-node-failure", f"no tenant has {GPU} quota on a flavor without a Topology")
        return
    gate, said = repair_gate(cluster, stack)
    if gate is None:
        report.skip(label, "gpu-node-failure", f"{said}: nothing replaces a failed node (health.repair: none)")
        return
    report.scenario(label, "gpu-node-failure-repair-controller", gate, said)
    if not gate:
        return
    emitted = kueue.emitted_configuration(stack)
    shortened = copy.deepcopy(emitted)
    shortened["waitForPodsReady"]["recoveryTimeout"] = RECOVERY
    kueue.restart(cluster, stack, shortened)
    made = Made([f"{GROUP}-0"])
    try:
        _scenario(cluster, report, label, slot, made, timeout)
    finally:
        undo(cluster, slot.tenant, made)
        kueue.restart(cluster, stack, emitted)
        with contextlib.suppress(E2EError):
            quiet(cluster, timeout)


def _scenario(cluster: Cluster, report: Report, label: str, slot: quota.Slot, made: Made,
              timeout: float) -> None:
    ns, first = slot.tenant, made.pods[0]
    create_pod(cluster, group_member(slot, first))
    try:
        node = wait_for(lambda: running_node(cluster, ns, first), timeout, f"pod {ns}/{first} running", 2.0)
    except E2EError as err:
        report.scenario(label, "gpu-node-failure-setup", False,
                        f"{err}: {pending_reason(workload(cluster, ns, 'Pod', first))}; "
                        f"{not_running(cluster, ns, first)}")
        return
    wl_name = str((workload(cluster, ns, "Pod", first) or {}).get("metadata", {}).get("name"))
    claim = claim_of(cluster, node) or {}
    claim_name = str(claim.get("metadata", {}).get("name"))
    nodepool = str(claim.get("metadata", {}).get("labels", {}).get(NODEPOOL_LABEL))

    def get() -> dict[str, Any] | None:
        return cluster.get("workloads.kueue.x-k8s.io", wl_name, ns)

    report.mark()
    made.failed = node
    clock = Clock()
    mark_unhealthy(cluster, node)
    toleration = karpenter.REPAIR_TOLERATION
    seen: dict[str, float] = {}
    # Karpenter's repair and the pod garbage collector act concurrently.
    seen_first = watch(report, label, {
        "gpu-node-failure-repaired": (lambda: repaired(cluster, node, claim_name, clock, seen),
                                      "Karpenter's repair"),
        "gpu-node-failure-node-removed": (lambda: removed(cluster, node), f"Karpenter removing {node}"),
        "gpu-node-failure-lost-pod-cleared": (lambda: cleared(cluster, ns, first), f"the lost pod {ns}/{first}"),
    }, 2 * timeout + toleration, clock)
    seen_then: set[str] = set()
    if "gpu-node-failure-lost-pod-cleared" in seen_first:
        # Kueue takes the group's next pod only once the lost one is gone: the launcher's part.
        again = f"{GROUP}-1"
        made.pods.append(again)
        create_pod(cluster, group_member(slot, again))
        seen_then = watch(report, label, {
            "gpu-node-failure-admission": (lambda: admission(get()) if running_node(cluster, ns, again) else None,
                                           f"Kueue's admission of Workload {ns}/{wl_name} with its next pod running"),
            "gpu-node-failure-new-node": (lambda: launched(cluster, nodepool, node, clock),
                                          f"Karpenter launching a node in NodePool {nodepool}"),
            "gpu-node-failure-running-again": (lambda: _elsewhere(cluster, ns, again, node),
                                               f"the group's new pod {ns}/{again} running on a healthy node"),
        }, 2 * timeout, clock)
    summary = ", ".join(f"{k.removeprefix('gpu-node-failure-')} {v:.0f} s" for k, v in clock.marks.items())
    report.scenario(label, "gpu-node-failure-times", len(seen_first) + len(seen_then) == 6,
                    f"{GPU_CONDITION} False on node {node} (NodePool {nodepool}) under {ns}'s pod in flavor "
                    f"{slot.flavor}, kubelet alive; from the fault: {summary}; as run: Karpenter's "
                    f"toleration {toleration:.0f} s (10 minutes upstream for {GPU_CONDITION}), Kueue's "
                    f"recoveryTimeout {RECOVERY} (10m as emitted)")


def repaired(cluster: Cluster, node: str, claim: str, clock: Clock, seen: dict[str, float]) -> str | None:
    """Karpenter's repair deleted the NodeClaim, after the toleration and only then (`seen`:
    when the deletion was first seen, the log line may follow it by a moment)."""
    found = cluster.get("nodeclaims.karpenter.sh", claim)
    if found is not None and not found["metadata"].get("deletionTimestamp"):
        current = cluster.get("node", node)
        gpu = node_condition(current, GPU_CONDITION).get("status")
        if gpu != "False":
            raise E2EError(f"node {node}'s {GPU_CONDITION} is {gpu} again before any repair: something reset it")
        ready = node_condition(current, "Ready").get("status")
        if ready != "True":
            raise E2EError(f"node {node}'s kubelet is not Ready ({ready}): the fault is meant under a live kubelet")
        return None
    seconds = seen.setdefault("deleted", time.monotonic() - clock.start)
    said = karpenter_said(cluster, REPAIRING, claim)
    if said is None:
        if time.monotonic() - clock.start < seconds + 10:
            return None
        raise E2EError(f"NodeClaim {claim} deleted {seconds:.0f} s after the fault, but Karpenter's log has no "
                       f"'{REPAIRING[0]}' of reason Unhealthy for it: not the repair")
    if seconds < karpenter.REPAIR_TOLERATION - 2:
        raise E2EError(f"NodeClaim {claim} deleted {seconds:.0f} s after the fault, before the "
                       f"{karpenter.REPAIR_TOLERATION:.0f} s toleration")
    return (f"Karpenter's repair replaced NodeClaim {claim} ({GPU_CONDITION} False past the "
            f"{karpenter.REPAIR_TOLERATION:.0f} s toleration, kubelet Ready until then): {said}")


def removed(cluster: Cluster, node: str) -> str | None:
    found = cluster.get("node", node)
    if found is None:
        return f"node {node} deleted by Karpenter"
    return None


def cleared(cluster: Cluster, namespace: str, name: str) -> str | None:
    """The lost pod no longer counts in its group: gone, or Failed (stopped after the drain's
    eviction, or failed by the pod garbage collector once its node no longer exists)."""
    pod = cluster.get("pod", name, namespace)
    if pod is None:
        return f"pod {namespace}/{name} gone"
    phase = pod.get("status", {}).get("phase")
    return f"pod {namespace}/{name} {phase}" if phase == "Failed" else None


def admission(item: dict[str, Any] | None) -> str | None:
    """Kueue's verdict once the group has its next pod: admitted, either the same admission kept
    (never evicted: a pod group whose only pod went with its node keeps its quota, e2e run of
    2026-12-05, docs/health.md) or admitted again after an eviction (`requeueState.count`)."""
    if not admitted(item) or condition(item, "Evicted").get("status") == "True":
        return None
    assignment = (item or {}).get("status", {}).get("admission", {}) or {}
    flavors = ", ".join(sorted({f for ps in assignment.get("podSetAssignments", [])
                                for f in ps.get("flavors", {}).values()}))
    count = (item or {}).get("status", {}).get("requeueState", {}).get("count")
    if count:
        return f"admitted again into {flavors} after an eviction (requeueState.count {count})"
    return f"the same admission into {flavors} kept, never evicted: the next pod joined it"


def launched(cluster: Cluster, nodepool: str, failed: str, clock: Clock) -> str | None:
    """A NodeClaim of the same NodePool made after the fault, its node Ready."""
    for claim in cluster.items("nodeclaims.karpenter.sh"):
        meta = claim["metadata"]
        made = calendar.timegm(time.strptime(meta["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ"))
        node = claim.get("status", {}).get("nodeName")
        if meta.get("labels", {}).get(NODEPOOL_LABEL) != nodepool or made < clock.wall - 1 or not node or \
                node == failed:
            continue
        if node_condition(cluster.get("node", node), "Ready").get("status") == "True":
            return f"NodeClaim {meta['name']} made {made - clock.wall:.0f} s after the fault, node {node} Ready"
    return None


def _elsewhere(cluster: Cluster, namespace: str, name: str, failed: str) -> str | None:
    node = running_node(cluster, namespace, name)
    if node is None:
        return None
    if node == failed:
        raise E2EError(f"pod {namespace}/{name} runs on the failed node {failed}")
    return f"pod {namespace}/{name} running on {node}"
