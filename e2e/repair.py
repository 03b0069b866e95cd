"""A GPU node dies under a tenant's running work: what the real engines do about it.

The fault is made the way a dead node looks to the cluster: nothing keeps it any more (the kwok
controller stops its heartbeat and lease once BOOTED is gone, as when its kubelet stops), so the
node controller (kube-controller-manager) marks it Ready Unknown after its grace period, marks
its pods not ready and taints it. Karpenter's kwok provider repairs a node Ready False or
Unknown after 10 minutes (`RepairPolicies`); the AWS provider's GPU condition
`AcceleratedHardwareReady`, set by the EKS node monitoring agent, is not a condition the node
controller taints for, so on a real cluster a GPU that fails under a live kubelet is fenced only
by Karpenter's replacement (docs/health.md). Every judgement is read off the engines' objects:

- fenced: the node controller's `node.kubernetes.io/unreachable` (or `not-ready`) NoSchedule
  taint on the node, so the scheduler sends nothing new there;
- evicted: Kueue evicts the workload once its pod is not ready for `recoveryTimeout` (its
  Evicted condition, reason PodsReadyTimeout, and `requeueState.count`);
- node removed: Karpenter terminates the node once its NodeClaim is deleted;
- lost pod cleared: the pod garbage collector fails the pod of the node that is gone;
- admitted again: Kueue reserves quota for the same Workload again, once the lost pod failed
  (it held the quota while the pod was bound to a node and not failed: pod_controller.go
  `IsActive`) and the group has its next pod;
- running again: the work's next pod runs on another node.

The running work is a plain pod group of one pod (Kueue's pod integration): kwok completes a
Job's pods as soon as they run, a plain pod keeps running. After Kueue evicts a pod group it
deletes the pod; what recreates it is the tenant's launcher, played here by the suite (the
group's next pod), and Kueue takes a new pod into the group only once the lost one is gone
(a pod bound to a node counts until then: pod_controller.go isPodRunnableOrSucceeded).

Shortened for the suite, and said so in the rows: Kueue's `recoveryTimeout` (10 minutes as
emitted; RECOVERY here, Kueue restarted with the emitted configuration changed in that one
field, and restarted as emitted afterwards), and Karpenter's 10 minutes of toleration: once
Kueue evicted the work, the suite deletes the node's NodeClaim as the repair does
(node/health deleteNodeClaim) and judges what the real Karpenter then does.
"""

from __future__ import annotations

import contextlib
import copy
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from e2e import kueue, quota
from e2e.cluster import BOOTED, Cluster, E2EError, wait_for
from e2e.contention import admitted, condition, holder_pod, pending_reason, quiet, workload
from e2e.nodes import FAILED
from e2e.report import Report
from e2e.scenarios import tenant_identity
from e2e.stack import Stack

RECOVERY = "20s"  # Kueue's recoveryTimeout for this scenario (10m as emitted)
FENCE_GRACE = 200.0  # kwokctl's node-monitor-grace-period: 40 s x its default heartbeat factor 5
GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
GROUP_COUNT = "kueue.x-k8s.io/pod-group-total-count"
# The node controller's taints for Ready False and Ready Unknown (TaintNodesByCondition).
FENCE_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
GPU = "nvidia.com/gpu"
GROUP = "repair"
TERMINATE_AT = "karpenter.sh/nodeclaim-termination-timestamp"  # v1.NodeClaimTerminationTimestampAnnotationKey


def _slot(stack: Stack) -> quota.Slot | None:
    """A tenant's whole-GPU quota on an on-demand (else any) flavor without a Topology."""
    found = quota.within_namespace_quota(quota.slots(stack.of_type(quota.CLUSTER_QUEUE), stack.of_type(quota.FLAVOR)),
                                         stack.of_type(quota.RESOURCE_QUOTA))
    whole = [s for s in found if s.resource == GPU and s.nominal >= 1]
    whole.sort(key=lambda s: (s.node_labels.get("karpenter.sh/capacity-type") != "on-demand", s.tenant, s.flavor))
    return whole[0] if whole else None


def _member(slot: quota.Slot, name: str) -> dict[str, Any]:
    pod = holder_pod(slot, 1, name)
    pod["metadata"]["labels"][GROUP_LABEL] = GROUP
    pod["metadata"]["annotations"] = {GROUP_COUNT: "1"}
    return pod


def _create(cluster: Cluster, manifest: dict[str, Any]) -> None:
    result = cluster.kubectl("create", "-f", "-", stdin=json.dumps(manifest), check=False,
                             **tenant_identity(manifest["metadata"]["namespace"]))
    if result.returncode:
        raise E2EError(f"creating pod {manifest['metadata']['name']}: {result.stderr.strip()}")


def _running_node(cluster: Cluster, namespace: str, name: str) -> str | None:
    pod = cluster.get("pod", name, namespace) or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                for c in pod.get("status", {}).get("conditions", []))
    node = pod.get("spec", {}).get("nodeName")
    return str(node) if ready and node and pod.get("status", {}).get("phase") == "Running" else None


def _fail_node(cluster: Cluster, node: str) -> None:
    """What a dead node looks like: nothing keeps it any more. One patch: the node agents
    (e2e/nodes.py) leave a FAILED node alone, and kwok stops its heartbeat once BOOTED is gone."""
    cluster.kubectl("patch", "node", node, "--type=merge", "-p",
                    json.dumps({"metadata": {"labels": {FAILED: "true", BOOTED: None}}}))


def _tainted(cluster: Cluster, node: str) -> str | None:
    found = cluster.get("node", node) or {}
    ready = next((c for c in found.get("status", {}).get("conditions", []) if c.get("type") == "Ready"), {})
    for taint in found.get("spec", {}).get("taints", []) or []:
        if taint.get("key") in FENCE_TAINTS and taint.get("effect") == "NoSchedule":
            return (f"{node} tainted {taint['key']}:NoSchedule, Ready {ready.get('status')} "
                    f"({ready.get('reason')}: {ready.get('message')})")
    return None


def _evicted(item: dict[str, Any] | None) -> str | None:
    said = condition(item, "Evicted")
    count = (item or {}).get("status", {}).get("requeueState", {}).get("count")
    if said.get("status") == "True" and count:
        return f"{said.get('reason')}: {said.get('message')} (requeueState.count {count})"
    return None


@dataclass
class _Made:
    """What the scenario made: its pods, and the node it failed (cleaned up whatever happened)."""

    pods: list[str]
    failed: str = ""


class _Clock:
    """Seconds since the fault, per milestone, for the rows."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.marks: dict[str, float] = {}

    def mark(self, name: str) -> float:
        self.marks[name] = round(time.monotonic() - self.start, 1)
        return self.marks[name]


def node_failure(cluster: Cluster, stack: Stack, report: Report, timeout: float) -> None:
    label = stack.target.label
    if stack.release("kueue") is None:
        report.skip(label, "gpu-node-failure", "queueing: none: no Kueue requeues the work")
        return
    slot = _slot(stack)
    if slot is None:
        report.skip(label, "gpu-node-failure", f"no tenant has {GPU} quota on a flavor without a Topology")
        return
    emitted = kueue.emitted_configuration(stack)
    shortened = copy.deepcopy(emitted)
    shortened["waitForPodsReady"]["recoveryTimeout"] = RECOVERY
    kueue.restart(cluster, stack, shortened)
    made = _Made([f"{GROUP}-0"])
    try:
        _scenario(cluster, report, label, slot, made, timeout)
    finally:
        for name in made.pods:  # Kueue's finalizer would hold a pod of a node that is gone
            cluster.kubectl("patch", "pod", name, "-n", slot.tenant, "--type=merge",
                            "-p", '{"metadata":{"finalizers":null}}', check=False)
            cluster.kubectl("delete", "pod", name, "-n", slot.tenant, "--force", "--grace-period=0",
                            "--ignore-not-found", "--wait=false", check=False)
        if made.failed:  # a failed node the scenario stopped short of removing
            _removed(cluster, made.failed)
        kueue.restart(cluster, stack, emitted)
        with contextlib.suppress(E2EError):
            quiet(cluster, timeout)


def _step(report: Report, label: str, name: str, probe: Callable[[], str | None], timeout: float,
          what: str, clock: _Clock) -> str | None:
    """Wait for `probe`'s words; a row either way (the time since the fault in its detail)."""
    try:
        said = wait_for(probe, timeout, what, 2.0)
    except E2EError as err:
        report.scenario(label, name, False, f"{err} ({clock.mark(name):.0f} s after the fault)")
        return None
    report.scenario(label, name, True, f"{clock.mark(name):.0f} s after the fault: {said}")
    return said


def _scenario(cluster: Cluster, report: Report, label: str, slot: quota.Slot, made: _Made,
              timeout: float) -> None:
    ns, first = slot.tenant, made.pods[0]
    _create(cluster, _member(slot, first))
    try:
        node = wait_for(lambda: _running_node(cluster, ns, first), timeout, f"pod {ns}/{first} running", 2.0)
    except E2EError as err:
        report.scenario(label, "gpu-node-failure-setup", False,
                        f"{err}: {pending_reason(workload(cluster, ns, 'Pod', first))}")
        return
    wl_name = str((workload(cluster, ns, "Pod", first) or {}).get("metadata", {}).get("name"))

    def get() -> dict[str, Any] | None:
        return cluster.get("workloads.kueue.x-k8s.io", wl_name, ns)

    report.mark()
    clock = _Clock()
    made.failed = node
    _fail_node(cluster, node)
    # The node controller notices a silent node after its grace period: the suite's kwokctl
    # control plane runs 40 s x its heartbeat factor 5 (FENCE_GRACE), not the default 40-50 s.
    steps: list[str | None] = [
        _step(report, label, "gpu-node-failure-fenced", lambda: _tainted(cluster, node), timeout + FENCE_GRACE,
              f"the node controller tainting {node}", clock),
        _step(report, label, "gpu-node-failure-evicted", lambda: _evicted(get()), timeout,
              f"Kueue evicting Workload {ns}/{wl_name}", clock),
    ]
    if steps[-1] is not None:
        # Kueue holds an evicted pod group's quota while its pod is bound to a node and not
        # failed (pod_controller.go IsActive, re-read on the pod's events), so the work comes
        # back once the repair removed the node and the pod garbage collector failed the pod.
        steps.append(_step(report, label, "gpu-node-failure-node-removed", lambda: _removed(cluster, node), timeout,
                           f"Karpenter removing {node}", clock))
        steps.append(_step(report, label, "gpu-node-failure-lost-pod-cleared", lambda: _cleared(cluster, ns, first),
                           timeout, f"the lost pod {ns}/{first} failed or gone", clock))
        # Kueue admits a pod group again only once it has a pod (both staging runs: not within
        # 180 s of the lost pod failing, 6 s after the next pod was made): the launcher's part.
        second = f"{GROUP}-1"
        made.pods.append(second)
        _create(cluster, _member(slot, second))
        steps.append(_step(report, label, "gpu-node-failure-readmitted", lambda: _readmitted(get()), timeout,
                           f"Kueue admitting Workload {ns}/{wl_name} again", clock))
        steps.append(_step(report, label, "gpu-node-failure-running-again",
                           lambda: _elsewhere(cluster, ns, second, node), timeout,
                           f"the group's new pod {ns}/{second} running on a healthy node", clock))
    summary = ", ".join(f"{k.removeprefix('gpu-node-failure-')} {v:.0f} s" for k, v in clock.marks.items())
    report.scenario(label, "gpu-node-failure-times", all(s is not None for s in steps),
                    f"node {node} failed under {ns}'s pod in flavor {slot.flavor}; from the fault: {summary}; "
                    f"Kueue's recoveryTimeout shortened to {RECOVERY} for the suite (10m as emitted); the node's "
                    "NodeClaim deleted by the suite once Kueue evicted the work, as Karpenter's repair does after "
                    "10 minutes; the node controller's grace period is the suite's (200 s)")
    report.skip(label, "gpu-node-failure-karpenter-repair-timer",
                "not waited for: Karpenter's kwok provider repairs a node Ready False or Unknown after 10 minutes "
                "(RepairPolicies, fixed), longer than the suite's scenarios; the suite deletes the NodeClaim as the "
                "repair does (node/health deleteNodeClaim), and gpuplat verify checks the NodeRepair gate")


def _readmitted(item: dict[str, Any] | None) -> str | None:
    if not admitted(item) or condition(item, "Evicted").get("status") == "True":
        return None
    assignment = (item or {}).get("status", {}).get("admission", {}) or {}
    flavors = sorted({f for ps in assignment.get("podSetAssignments", []) for f in ps.get("flavors", {}).values()})
    count = (item or {}).get("status", {}).get("requeueState", {}).get("count")
    return f"admitted again into {', '.join(flavors)} (requeueState.count {count})"


def _removed(cluster: Cluster, node: str) -> str | None:
    """What Karpenter's repair does once the toleration is over (node/health/controller.go): the
    NodeClaim annotated to terminate now, then deleted. Then what the real Karpenter does: the
    node gone."""
    if cluster.get("node", node) is None:
        return f"node {node} deleted by Karpenter"
    for claim in cluster.items("nodeclaims.karpenter.sh"):
        if claim.get("status", {}).get("nodeName") == node and not claim["metadata"].get("deletionTimestamp"):
            name = claim["metadata"]["name"]
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            cluster.kubectl("annotate", "nodeclaim", name, f"{TERMINATE_AT}={now}", "--overwrite", check=False)
            cluster.kubectl("delete", "nodeclaim", name, "--wait=false", check=False)
    return None


def _cleared(cluster: Cluster, namespace: str, name: str) -> str | None:
    """The lost pod no longer counts in its group: gone, or Failed (the pod garbage collector
    fails and deletes the pods of a node that no longer exists)."""
    pod = cluster.get("pod", name, namespace)
    if pod is None:
        return f"pod {namespace}/{name} gone"
    phase = pod.get("status", {}).get("phase")
    return f"pod {namespace}/{name} {phase}" if phase == "Failed" else None


def _elsewhere(cluster: Cluster, namespace: str, name: str, failed: str) -> str | None:
    node = _running_node(cluster, namespace, name)
    if node is None:
        return None
    if node == failed:
        raise E2EError(f"pod {namespace}/{name} runs on the failed node {failed}")
    return f"pod {namespace}/{name} running on {node}"
