"""A GPU node fails under one rank of a multi-node job: the job runs again, all its ranks at once,
with its checkpoints where they were.

The sequel to e2e/repair.py, with its fault and its probes: there the work was a pod group of
one pod; here it is a Kueue pod group of two pods that may not share a node (a required pod
anti-affinity on the hostname, as two ranks of a whole node each would land: two 8-GPU pods are
more than the suite's tenants may hold), both held running (`kwokstages.HOLD`), each mounting
its tenant's checkpoint location by the tenant guide's convention
(docs/tenants.md#resuming-from-a-checkpoint): the tenant namespace's emitted claim `hot` at
`/hot`, the job's name in `JOB` (the group's name, so a pod made again names the same
directory, `/hot/checkpoints/$JOB/`).

One of the two nodes gets the GPU fault (`gpufault.mark_unhealthy`); the other keeps its pod.
Judged off the engines' objects, with the seconds from the fault, whatever order they come in:

- fenced: Karpenter's `karpenter.sh/disrupted` NoSchedule taint on the node (or the node gone);
- repaired, node removed, lost pod cleared: as in e2e/repair.py;
- then the tenant's launcher, played by the suite, makes a pod for each one the group lacks
  (the lost one; both, had Kueue evicted the group and deleted the survivor);
- admission: Kueue's Workload admitted with both pods running, the same admission kept or
  admitted again after an eviction (the row says which);
- new node: Karpenter launches a node in the same NodePool after the fault;
- running again: one list of the group's pods shows two Running and Ready at once, on two nodes,
  neither the failed one, each carrying the checkpoint location the first two carried.

Kueue runs as emitted (`recoveryTimeout` 10 minutes): the launcher's new pod is ready well
inside it, so Kueue has no reason to evict; if it does, the launcher makes both pods again.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from typing import Any

from e2e import karpenter, quota
from e2e.cluster import Cluster, E2EError, wait_for
from e2e.contention import holder_pod, pending_reason, quiet, workload
from e2e.gang import ENDED, Gang
from e2e.gpufault import GPU_CONDITION, Clock, mark_unhealthy, watch
from e2e.jobs import not_running
from e2e.kwokstages import HOLD
from e2e.repair import (
    DISRUPTED,
    GROUP_COUNT,
    GROUP_LABEL,
    NODEPOOL_LABEL,
    Made,
    admission,
    claim_of,
    cleared,
    create_pod,
    launched,
    removed,
    repaired,
    repairing,
    undo,
)
from e2e.repair_share import share_target
from e2e.report import Report
from e2e.stack import Stack

ROW = "gpu-node-failure-multinode-resume"
PREFIX = "gpu-node-failure-multinode-"
GROUP = "resume"
PODS = 2
HOT_CLAIM, HOT_PATH = "hot", "/hot"  # the tenant guide's checkpoint volume and where it is mounted
CLAIM_TYPE = "kubernetes:core/v1:PersistentVolumeClaim"
HOSTNAME = "kubernetes.io/hostname"
_LABEL_REF = re.compile(r"^metadata\.labels\['([^']+)'\]$")


def member(slot: quota.Slot, name: str) -> dict[str, Any]:
    """A rank of the job: one unit, no other rank on its node, held running, its checkpoints on
    the hot tier by the tenant guide's convention."""
    pod = holder_pod(slot, 1, name)
    pod["metadata"]["labels"][GROUP_LABEL] = GROUP
    pod["metadata"]["annotations"] = {GROUP_COUNT: str(PODS), HOLD: "true"}
    spec = pod["spec"]
    spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {GROUP_LABEL: GROUP}}, "topologyKey": HOSTNAME}]}}
    spec["volumes"] = [{"name": "hot", "persistentVolumeClaim": {"claimName": HOT_CLAIM}}]
    container = spec["containers"][0]
    container["volumeMounts"] = [{"name": "hot", "mountPath": HOT_PATH}]
    container["env"] = [{"name": "JOB", "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{GROUP_LABEL}']"}}},
                        {"name": "CHECKPOINTS", "value": f"{HOT_PATH}/checkpoints/$(JOB)"}]
    return pod


def _env_value(pod: dict[str, Any], entry: dict[str, Any]) -> str | None:
    """An env entry's value as the kubelet would give it: literal, or a label of the pod."""
    if "value" in entry:
        return str(entry["value"])
    path = entry.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath", "")
    found = _LABEL_REF.match(str(path))
    return pod.get("metadata", {}).get("labels", {}).get(found.group(1)) if found else None


def checkpoint(pod: dict[str, Any]) -> str | None:
    """Where the pod's job keeps its checkpoints by the tenant guide's convention (the claim
    mounted at /hot, the job named by `JOB`), or None if it does not follow it."""
    spec = pod.get("spec", {})
    claims = {v["name"]: v["persistentVolumeClaim"].get("claimName") for v in spec.get("volumes", [])
              if "persistentVolumeClaim" in v}
    for container in spec.get("containers", []):
        mounted = {m.get("mountPath"): m.get("name") for m in container.get("volumeMounts", [])}
        claim = claims.get(mounted.get(HOT_PATH))
        job = next((_env_value(pod, e) for e in container.get("env", []) if e.get("name") == "JOB"), None)
        if claim and job:
            return f"claim {claim} at {HOT_PATH}, {HOT_PATH}/checkpoints/{job}/"
    return None


def _ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status", {})
    return status.get("phase") == "Running" and bool(pod.get("spec", {}).get("nodeName")) and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions", []))


def live(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The group's pods that still count: not being deleted, not ended."""
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")
            and p.get("status", {}).get("phase") not in ENDED]


def together(pods: list[dict[str, Any]], failed: str, location: str, first: set[str] | None = None) -> Gang:
    """The group as one list of its pods shows it: True once PODS run and are Ready at once, on
    as many nodes, none on the `failed` one, each with the checkpoint `location`; False at once
    on a pod of the group running on the failed node, two on one node or a pod elsewhere
    without that location; None while a pod still waits. `first`, after the fault: the pods
    made before it (the row tells the pods kept from those made again)."""
    running = [p for p in live(pods) if _ready(p)]
    on_failed = sorted(p["metadata"]["name"] for p in running if p["spec"]["nodeName"] == failed)
    if on_failed:
        return Gang(False, f"pod(s) {', '.join(on_failed)} running on the failed node {failed}")
    if len(running) < PODS:
        return Gang(None, f"{len(running)} of {PODS} pods Running")
    shared = {n: c for n, c in Counter(p["spec"]["nodeName"] for p in running).items() if c > 1}
    if shared:
        return Gang(False, "; ".join(f"{c} of the group's pods on node {n}: the ranks must not share a node"
                                     for n, c in sorted(shared.items())))
    elsewhere = [f"{p['metadata']['name']}: {checkpoint(p) or 'no checkpoint location'}" for p in running
                 if checkpoint(p) != location]
    if elsewhere:
        return Gang(False, f"not the first pods' checkpoint location ({location}): {'; '.join(sorted(elsewhere))}")
    said = ", ".join(f"{p['metadata']['name']} on {p['spec']['nodeName']}" + (
        "" if first is None else " (kept running)" if p["metadata"]["name"] in first else " (made after the fault)")
        for p in sorted(running, key=lambda p: p["metadata"]["name"]))
    return Gang(True, f"{len(running)} pods Running and Ready at once: {said}; each {location}")


def fenced(cluster: Cluster, node: str) -> str | None:
    """Nothing new lands on the node: Karpenter's disrupted taint on it, or the node gone."""
    found = cluster.get("node", node)
    if found is None:
        return f"node {node} gone (its {DISRUPTED} taint not seen first)"
    taints = [t for t in found.get("spec", {}).get("taints", []) if t.get("key") == DISRUPTED]
    return f"node {node} tainted {DISRUPTED}:{taints[0].get('effect')} by Karpenter" if taints else None


def hot_claim(stack: Stack, tenant: str) -> dict[str, Any] | None:
    return next((c for c in stack.of_type(CLAIM_TYPE) if c["metadata"]["name"] == HOT_CLAIM
                 and c["metadata"].get("namespace") == tenant), None)


def multinode(cluster: Cluster, stack: Stack, report: Report, timeout: float) -> None:
    label = stack.target.label
    if stack.release("kueue") is None:
        report.skip(label, ROW, "queueing: none: no Kueue admits the job as one group")
        return
    if not repairing(cluster, stack, report, ROW, "nothing replaces a failed node (health.repair: none)"):
        return
    target = share_target(stack)
    if isinstance(target, str):
        report.skip(label, ROW, f"{target.rsplit(': ', 1)[0]}: no job of {PODS} ranks on {PODS} nodes fits")
        return
    slot, _ = target
    if hot_claim(stack, slot.tenant) is None:
        report.skip(label, ROW, f"the stack emits no claim `{HOT_CLAIM}` in {slot.tenant}'s namespace (no hot tier): "
                    "no checkpoint location to resume from (docs/tenants.md)")
        return
    made = Made([])
    try:
        _scenario(cluster, report, label, slot, made, timeout)
    finally:
        undo(cluster, slot.tenant, made)
        with contextlib.suppress(E2EError):
            quiet(cluster, timeout)


def group_pods(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    return [p for p in cluster.items("pods", namespace) if p["metadata"].get("labels", {}).get(GROUP_LABEL) == GROUP]


def launch(cluster: Cluster, slot: quota.Slot, made: Made) -> None:
    """The tenant's launcher: a new pod for each one the group lacks."""
    for _ in range(PODS - len(live(group_pods(cluster, slot.tenant)))):
        name = f"{GROUP}-{len(made.pods)}"
        made.pods.append(name)
        create_pod(cluster, member(slot, name))


def _judged(verdict: Gang) -> str | None:
    if verdict.together is False:
        raise E2EError(verdict.said)
    return verdict.said if verdict.together else None


def _scenario(cluster: Cluster, report: Report, label: str, slot: quota.Slot, made: Made, timeout: float) -> None:
    ns = slot.tenant
    location = str(checkpoint(member(slot, GROUP)))
    launch(cluster, slot, made)
    first = set(made.pods)
    try:
        setup = wait_for(lambda: _judged(together(group_pods(cluster, ns), "", location)), 2 * timeout,
                         f"the {PODS} pods of group {ns}/{GROUP} running on {PODS} nodes", 2.0)
    except E2EError as err:
        claim = cluster.get("persistentvolumeclaim", HOT_CLAIM, ns) or {}
        report.scenario(label, ROW, False, f"{err} in flavor {slot.flavor}: "
                        f"{pending_reason(workload(cluster, ns, 'Pod', made.pods[0]))}; claim {ns}/{HOT_CLAIM} "
                        f"{claim.get('status', {}).get('phase', 'missing')}; "
                        + "; ".join(f"{n}: {not_running(cluster, ns, n)}" for n in made.pods))
        return
    pods = {p["metadata"]["name"]: p for p in group_pods(cluster, ns)}
    lost = sorted(first)[0]
    node = str(pods[lost]["spec"]["nodeName"])
    wl_name = str((workload(cluster, ns, "Pod", lost) or {}).get("metadata", {}).get("name"))
    claim = claim_of(cluster, node) or {}
    claim_name = str(claim.get("metadata", {}).get("name"))
    nodepool = str(claim.get("metadata", {}).get("labels", {}).get(NODEPOOL_LABEL))
    report.mark()
    made.failed = node
    clock = Clock()
    mark_unhealthy(cluster, node)
    seen: dict[str, float] = {}
    seen_first = watch(report, label, {
        f"{PREFIX}fenced": (lambda: fenced(cluster, node), f"Karpenter's {DISRUPTED} taint on {node}"),
        f"{PREFIX}repaired": (lambda: repaired(cluster, node, claim_name, clock, seen), "Karpenter's repair"),
        f"{PREFIX}node-removed": (lambda: removed(cluster, node), f"Karpenter removing {node}"),
        f"{PREFIX}lost-pod-cleared": (lambda: cleared(cluster, ns, lost), f"the lost pod {ns}/{lost}"),
    }, 2 * timeout + karpenter.REPAIR_TOLERATION, clock)
    seen_then: set[str] = set()
    if f"{PREFIX}lost-pod-cleared" in seen_first:
        last: list[Gang] = []  # the latest judgement of the group, which the admission probe waits on

        def again() -> str | None:
            launch(cluster, slot, made)
            last[:] = [together(group_pods(cluster, ns), node, location, first)]
            return _judged(last[0])

        seen_then = watch(report, label, {
            f"{PREFIX}running-again": (again, f"both pods of group {ns}/{GROUP} running at once on healthy nodes"),
            f"{PREFIX}admission": (
                lambda: admission(cluster.get("workloads.kueue.x-k8s.io", wl_name, ns))
                if last and last[0].together else None,
                f"Kueue's admission of Workload {ns}/{wl_name} with both pods running"),
            f"{PREFIX}new-node": (lambda: launched(cluster, nodepool, node, clock),
                                  f"Karpenter launching a node in NodePool {nodepool}"),
        }, 2 * timeout, clock)
    summary = ", ".join(f"{k.removeprefix(PREFIX)} {v:.0f} s" for k, v in clock.marks.items())
    report.scenario(label, ROW, len(seen_first) + len(seen_then) == 7,
                    f"group {ns}/{GROUP} of {PODS} pods in flavor {slot.flavor} ({setup}); {GPU_CONDITION} False on "
                    f"node {node} (NodePool {nodepool}) under {lost}, kubelet alive; from the fault: {summary}; "
                    f"Karpenter's toleration {karpenter.REPAIR_TOLERATION:.0f} s (10 minutes upstream), "
                    "Kueue as emitted")
