"""A GPU fails under a topology-aware job: the node is fenced by a taint, and Kueue replaces it in
the job's topology assignment without evicting the job.

Kueue 0.19.2's topology-aware scheduling node controller (pkg/controller/tas/node_controller.go,
with TASFailedNodeReplacement, TASReplaceNodeOnNodeTaints and TASReplaceNodeOnPodTermination on
by default) counts a node of a workload's topology assignment as failed once it carries a
NoSchedule or NoExecute taint the workload does not tolerate and none of the workload's pods
there still runs. It lists the node in the Workload's `status.unhealthyNodes`, and the scheduler
gives the workload a new assignment with another node of the same topology domain. The
admission is kept. With TASFailedNodeReplacementFailFast, also on by default, the workload is
evicted instead when no node fits.

The fence here is the operator's cordon, as on provider kubernetes (docs/health.md): its taint is
`node.kubernetes.io/unschedulable:NoSchedule`. On aws, Karpenter's repair taint
`karpenter.sh/disrupted:NoSchedule` is the same kind of taint. The rows, in seconds from the
cordon:

- setup: a tenant's reference job of one pod, held running, on a topology-aware flavor. It
  carries the tenant guide's preferred-topology annotation at the host level, and Kueue admits
  it with a topology assignment;
- cordoned and drained: `kubectl cordon` and `kubectl drain`; the kubelet's part is kwok's
  `pod-stop` (e2e/kwokstages.py): the container stops with exit 143 and the pod is Failed;
- replaced: the node listed in `status.unhealthyNodes` (if seen: the scheduler may clear it
  at once), and a pod of the Job, made by the Job controller, Running and Ready on another node
  of the pool. That node must be the one Kueue's topology ungater put in the pod's node
  selector, so it is Kueue's new assignment, not the scheduler's free choice. The Workload keeps
  the same admission and is never evicted.

The Job, its pods and the cordon are removed afterwards.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from e2e import quota
from e2e.cluster import Cluster, E2EError, wait_for
from e2e.contention import condition, pending_reason, quiet
from e2e.gpufault import Clock
from e2e.jobs import reference_job, workload_of
from e2e.kwokstages import HOLD
from e2e.repair import admission, node_running
from e2e.report import Report
from e2e.requeue import cordoned, drain_relaunching, with_spare_node, workload_state
from e2e.scenarios import topology_level
from e2e.stack import Stack

SCENARIO = "gpu-node-failure-tas-replacement"
JOB = "tas-replace"
JOB_LABEL = "batch.kubernetes.io/job-name"
# The evicted pod and any pod the ungater still sends to the fenced node fail; the Job goes on.
BACKOFF_LIMIT = 4


def slots_of(stack: Stack) -> list[quota.Slot]:
    """Tenants' whole-GPU quotas on topology-aware flavors, within their namespace quota."""
    found = quota.within_namespace_quota(
        quota.slots(stack.of_type(quota.CLUSTER_QUEUE), stack.of_type(quota.FLAVOR), topology_aware=True),
        stack.of_type(quota.RESOURCE_QUOTA))
    return sorted((s for s in found if s.resource == "nvidia.com/gpu" and s.nominal >= 1),
                  key=lambda s: (s.tenant, s.flavor))


def held_job(slot: quota.Slot, level: str) -> dict[str, Any]:
    """The tenant's reference job on exactly the slot's flavor, its pod held running, retried."""
    job = reference_job(slot.tenant, slot.pool, slot.resource, name=JOB, topology_level=level)
    job["spec"]["backoffLimit"] = BACKOFF_LIMIT
    template = job["spec"]["template"]
    template["metadata"].setdefault("annotations", {})[HOLD] = "true"
    template["spec"]["nodeSelector"] = dict(slot.node_labels)
    return job


def job_pods(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    return [p for p in cluster.items("pods", namespace)
            if p.get("metadata", {}).get("labels", {}).get(JOB_LABEL) == JOB]


def running_pod(cluster: Cluster, namespace: str, avoid: str = "") -> tuple[str, str] | None:
    """(pod, node) of a pod of the Job Running and Ready on a node other than `avoid`."""
    for pod in job_pods(cluster, namespace):
        name = pod["metadata"]["name"]
        node = node_running(pod)
        if node == avoid and avoid:
            raise E2EError(f"pod {namespace}/{name} runs on the cordoned node {avoid}")
        if node:
            return name, node
    return None


def selectors(pods: list[dict[str, Any]], level: str) -> str:
    """Where Kueue's ungater sent each pod of the Job (its node selector at the host level)."""
    said = [f"{p['metadata']['name']} -> {p.get('spec', {}).get('nodeSelector', {}).get(level, 'gated')} "
            f"({p.get('status', {}).get('phase')})" for p in pods]
    return "; ".join(said) or "no pod"


def replacement(cluster: Cluster, stack: Stack, report: Report, timeout: float) -> None:
    label = stack.target.label
    if stack.release("kueue") is None:
        report.skip(label, SCENARIO, "queueing: none: no Kueue places the job by topology")
        return
    found = slots_of(stack)
    if not found:
        report.skip(label, SCENARIO, "no tenant has whole-GPU quota on a topology-aware flavor")
        return
    spare = with_spare_node(cluster, found)
    if isinstance(spare, str):
        report.skip(label, SCENARIO, "no topology-aware pool of a tenant's quota has a second Ready node to "
                    f"replace the failed one with: {spare}")
        return
    slot, pool = spare
    level = topology_level(stack, slot.pool)
    if level is None:
        report.skip(label, SCENARIO, f"flavor {slot.flavor} names no Topology the stack emits")
        return
    fenced = ""
    try:
        fenced = _scenario(cluster, report, label, slot, pool, level, timeout)
    finally:
        cluster.kubectl("delete", "job", JOB, "-n", slot.tenant, "--ignore-not-found", "--wait=false", check=False)
        if fenced:
            cluster.kubectl("uncordon", fenced, check=False)
        with contextlib.suppress(E2EError):
            quiet(cluster, timeout)


def _scenario(cluster: Cluster, report: Report, label: str, slot: quota.Slot, pool: list[str], level: str,
              timeout: float) -> str:
    """Returns the node cordoned ('' when it got no further than the setup)."""
    ns = slot.tenant
    made = cluster.kubectl("create", "-f", "-", stdin=json.dumps(held_job(slot, level)), check=False)
    if made.returncode:
        report.scenario(label, f"{SCENARIO}-setup", False, f"job refused: {made.stderr.strip()[-400:]}")
        return ""
    try:
        first, node = wait_for(lambda: running_pod(cluster, ns), timeout, f"a pod of job {ns}/{JOB} running", 2.0)
    except E2EError as err:
        why = pending_reason(workload_of(cluster, ns, JOB))
        report.scenario(label, f"{SCENARIO}-setup", False,
                        f"{err}: {why}; pods: {selectors(job_pods(cluster, ns), level)}")
        return ""
    wl_name = str((workload_of(cluster, ns, JOB) or {}).get("metadata", {}).get("name"))
    placed = selectors(job_pods(cluster, ns), level)  # where Kueue's assignment sent the first pod

    def wl() -> dict[str, Any] | None:
        return cluster.get("workloads.kueue.x-k8s.io", wl_name, ns)

    before = workload_state(wl())
    report.mark()
    clock = Clock()
    cluster.kubectl("cordon", node)
    try:
        how = wait_for(lambda: cordoned(cluster.get("node", node)), timeout, f"node {node} unschedulable", 1.0)
    except E2EError as err:
        report.scenario(label, f"{SCENARIO}-cordoned", False, str(err))
        return node
    clock.mark("cordoned")
    drain, played = drain_relaunching(cluster, node, ns, first, timeout, clock,
                                      lambda: "the Job controller makes the next pod")
    clock.mark("drained")
    if drain.returncode:
        report.scenario(label, f"{SCENARIO}-drained", False, f"kubectl drain {node} failed ({drain.returncode}): "
                        f"{(drain.stdout + drain.stderr).strip()[-600:]}; {played}")
        return node
    report.scenario(label, f"{SCENARIO}-drained", True, f"node {node} {how}; pod {ns}/{first} evicted "
                    f"({played or 'gone before it was seen Failed'}); drain returned at "
                    f"{clock.marks['drained']:.0f} s")
    unhealthy: list[str] = []

    def moved() -> tuple[str, str] | None:
        listed = [n.get("name") for n in (wl() or {}).get("status", {}).get("unhealthyNodes", [])]
        if node in listed and not unhealthy:
            unhealthy.append(f"{clock.mark('unhealthy'):.0f} s")
        if condition(wl(), "Evicted").get("status") == "True":
            raise E2EError(f"Kueue evicted the Workload instead: {workload_state(wl())}")
        return running_pod(cluster, ns, avoid=node)

    try:
        again, new_node = wait_for(moved, 2 * timeout, f"a pod of job {ns}/{JOB} running off {node}", 0.5)
        clock.mark("running-again")
        verdict = wait_for(lambda: admission(wl()), timeout, f"Kueue's admission of Workload {ns}/{wl_name}", 1.0)
    except E2EError as err:
        report.scenario(label, SCENARIO, False, f"{err}: {workload_state(wl())}; unhealthyNodes "
                        f"{(wl() or {}).get('status', {}).get('unhealthyNodes')}; pods: "
                        f"{selectors(job_pods(cluster, ns), level)}")
        return node
    pod = next((p for p in job_pods(cluster, ns) if p["metadata"]["name"] == again), {})
    chosen = pod.get("spec", {}).get("nodeSelector", {}).get(level)
    ok = new_node in pool and chosen == new_node and "kept" in verdict
    report.scenario(label, SCENARIO, ok, f"job {ns}/{JOB} (1 {slot.resource}, {JOB_LABEL} pods, preferred topology "
                    f"{level}) in flavor {slot.flavor}; node {node} cordoned and drained; Kueue listed it in "
                    f"status.unhealthyNodes at {unhealthy[0] if unhealthy else 'a moment the suite did not see'}; "
                    f"pod {again} running on {new_node} at {clock.marks['running-again']:.0f} s after the cordon "
                    f"(pool {slot.pool}: {', '.join(pool)}); before the cordon: {placed}; now: "
                    f"{selectors(job_pods(cluster, ns), level)} (the node selector is Kueue's assignment); "
                    f"Kueue: {verdict}; Workload before: {before}")
    return node
