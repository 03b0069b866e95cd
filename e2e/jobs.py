"""A tenant's reference job, written as the tenant documentation tells tenants to write it,
and what the controllers did with it, in their own words."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from e2e.cluster import Cluster

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
POOL_LABEL = "gpuplat.dev/pool"


def job_name(pool: str, resource: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", resource.split("/")[-1].lower()).strip("-")
    return f"ref-{pool}-{slug}"[:63].rstrip("-")


TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-preferred-topology"


def reference_job(tenant: str, pool: str, resource: str, name: str | None = None, units: int = 1,
                  priority_class: str | None = None, topology_level: str | None = None) -> dict[str, Any]:
    """One container asking for `units` of the pool's resource, in the tenant's LocalQueue,
    on the pool chosen by its label; no toleration, no limit but the device's; on a
    topology-aware pool, the preferred-topology annotation docs/tenants.md asks for."""
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "nodeSelector": {POOL_LABEL: pool},
        "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10.2",
                        "resources": {"requests": {"cpu": "1", "memory": "1Gi", resource: str(units)},
                                      "limits": {resource: str(units)}},
                        "securityContext": {"allowPrivilegeEscalation": False}}],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    template: dict[str, Any] = {"metadata": {"labels": {QUEUE_LABEL: "default"}}, "spec": spec}
    if topology_level:
        template["metadata"]["annotations"] = {TOPOLOGY_ANNOTATION: topology_level}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name or job_name(pool, resource), "namespace": tenant,
                         "labels": {QUEUE_LABEL: "default"}},
            "spec": {"backoffLimit": 0, "template": template}}


@dataclass
class Outcome:
    admitted: bool = False
    bound: bool = False
    completed: bool = False
    reason: str = ""
    flavors: tuple[str, ...] = ()  # the ResourceFlavors Kueue admitted the job onto

    @property
    def actual(self) -> str:
        return "runs" if self.admitted and self.bound else "blocked"


def _condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    for condition in (obj or {}).get("status", {}).get("conditions", []):
        if condition.get("type") == kind:
            return condition
    return None


def workload_of(cluster: Cluster, namespace: str, job: str) -> dict[str, Any] | None:
    for workload in cluster.items("workloads.kueue.x-k8s.io", namespace):
        owners = workload["metadata"].get("ownerReferences", [])
        if any(o.get("kind") == "Job" and o.get("name") == job for o in owners):
            return workload
    return None


def pending_reason(cluster: Cluster, namespace: str, job: str) -> str | None:
    """Kueue's words for why the job holds no quota, once its scheduler has tried."""
    reserved = _condition(workload_of(cluster, namespace, job), "QuotaReserved")
    if reserved and reserved["status"] == "False" and reserved.get("message"):
        return str(reserved["message"])
    return None


def pods_of(cluster: Cluster, namespace: str, job: str) -> list[dict[str, Any]]:
    found = cluster.get("pods", namespace=namespace) or {"items": []}
    return [p for p in found["items"] if p["metadata"].get("labels", {}).get("job-name") == job]


def events_for(cluster: Cluster, namespace: str, name: str) -> list[str]:
    found = cluster.get("events", namespace=namespace) or {"items": []}
    return [f"{e.get('reason')}: {e.get('message', '').strip()}" for e in found["items"]
            if e.get("involvedObject", {}).get("name") == name]


def observe(cluster: Cluster, namespace: str, job: str) -> Outcome:
    outcome = Outcome()
    workload = workload_of(cluster, namespace, job)
    admitted = _condition(workload, "Admitted")
    outcome.admitted = bool(admitted and admitted["status"] == "True")
    if workload is None:
        outcome.reason = "Kueue made no Workload for the job: " + "; ".join(events_for(cluster, namespace, job)[-2:])
        return outcome
    assignments = (workload or {}).get("status", {}).get("admission", {}).get("podSetAssignments", [])
    outcome.flavors = tuple(sorted({f for a in assignments for f in a.get("flavors", {}).values()}))
    if not outcome.admitted:
        reserved = _condition(workload, "QuotaReserved")
        outcome.reason = f"Kueue: {(reserved or admitted or {}).get('message', 'not admitted yet')}"
        return outcome
    pods = pods_of(cluster, namespace, job)
    if not pods:
        outcome.reason = "admitted, but the Job made no pod: " + "; ".join(events_for(cluster, namespace, job)[-2:])
        return outcome
    scheduled = _condition(pods[0], "PodScheduled")
    outcome.bound = bool(scheduled and scheduled["status"] == "True") or bool(pods[0]["spec"].get("nodeName"))
    if not outcome.bound:
        said = events_for(cluster, namespace, pods[0]["metadata"]["name"])
        outcome.reason = "scheduler / Karpenter: " + ("; ".join(said[-2:]) or (scheduled or {}).get("message", ""))
        return outcome
    job_obj = cluster.get("job", job, namespace)
    complete = _condition(job_obj, "Complete")
    outcome.completed = bool(complete and complete["status"] == "True")
    outcome.reason = f"admitted by Kueue onto {', '.join(outcome.flavors)}, bound to " \
        f"{pods[0]['spec'].get('nodeName')}" + (", completed" if outcome.completed else "")
    return outcome


def await_outcomes(cluster: Cluster, jobs: list[tuple[str, str]], timeout: float) -> dict[tuple[str, str], Outcome]:
    """Observe (namespace, job) pairs until each runs or the deadline passes."""
    deadline = time.monotonic() + timeout
    outcomes: dict[tuple[str, str], Outcome] = {}
    pending = list(jobs)
    while pending:
        for key in list(pending):
            outcomes[key] = observe(cluster, *key)
            if outcomes[key].completed or (outcomes[key].bound and outcomes[key].admitted):
                pending.remove(key)
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    return outcomes


def not_running(cluster: Cluster, namespace: str, name: str) -> str:
    """The scheduler's and Karpenter's words on a pod that is not running: what a failed row needs."""
    pod = cluster.get("pod", name, namespace) or {}
    status = pod.get("status", {})
    said = [f"pod {status.get('phase', 'gone')}", *(f"gate {g['name']}" for g in
                                                     pod.get("spec", {}).get("schedulingGates", []))]
    said += [f"{c['type']} {c['status']}: {c.get('message', c.get('reason', ''))}"
             for c in status.get("conditions", []) if c.get("status") != "True"]
    if pod.get("spec", {}).get("nodeName"):
        said.append(f"bound to {pod['spec']['nodeName']}")
    claims = [f"{c['metadata']['name']} ({_true_conditions(c) or 'no condition true'})"
              for c in cluster.items("nodeclaims.karpenter.sh")]
    return "; ".join([*said, f"NodeClaims: {', '.join(claims) or 'none'}",
                      *(e for e in events_for(cluster, namespace, name)[-3:])])


def _true_conditions(item: dict[str, Any]) -> str:
    return ", ".join(c["type"] for c in item.get("status", {}).get("conditions", []) if c.get("status") == "True")
