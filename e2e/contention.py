"""Scenarios where tenants contend for quota: borrowing stops at the limit the spec implies,
and preemption happens where the spec says it does (e2e/expect.py: a soft lender reclaims by
preemption, a tenant's own class evicts its standard-class work). The emitted ClusterQueues only
say where to stage each scenario (the flavor, the amounts); what they imply must agree with the
spec, and the amounts must lie within the spec's bounds, or the row fails.

Quota is held by a plain Pod in Kueue's pod integration (the emitted configuration enables it):
kwok completes a Job's pods as soon as they run, which would hand the quota back before the
next job is judged, while a plain pod holds its workload's quota until it is deleted or Kueue
evicts it. The pod asks for the whole amount at once, so it may never fit one node; Kueue
admits on quota, not on nodes, and that is what these scenarios ask it. The contending jobs are
the tenant's reference Job, pinned to the flavor by the flavor's own node labels (Kueue skips a
flavor whose nodeLabels the pod's nodeSelector contradicts).
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

from e2e import expect, jobs, quota
from e2e.cluster import Cluster, E2EError, wait_for
from e2e.report import Report
from e2e.scenarios import tenant_identity
from e2e.stack import Stack

PRIORITY_CLASS = "kubernetes:scheduling.k8s.io/v1:PriorityClass"
# How long a job Kueue holds is watched for a late admission before it counts as held.
SETTLE = 8.0


def holder_pod(slot: quota.Slot, units: int, name: str, priority_class: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "nodeSelector": dict(slot.node_labels),
        "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10.2",
                        "resources": {"requests": {"cpu": "1", "memory": "1Gi", slot.resource: str(units)},
                                      "limits": {slot.resource: str(units)}},
                        "securityContext": {"allowPrivilegeEscalation": False}}],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": slot.tenant, "labels": {jobs.QUEUE_LABEL: "default"}},
            "spec": spec}


def pinned_job(slot: quota.Slot, units: int, name: str, priority_class: str | None = None) -> dict[str, Any]:
    """The tenant's reference job, `units` pods of one unit, on exactly the slot's flavor."""
    job = jobs.reference_job(slot.tenant, slot.pool, slot.resource, name=name, priority_class=priority_class)
    job["spec"]["parallelism"] = job["spec"]["completions"] = units
    job["spec"]["template"]["spec"]["nodeSelector"] = dict(slot.node_labels)
    return job


def workload(cluster: Cluster, namespace: str, kind: str, name: str) -> dict[str, Any] | None:
    for item in cluster.items("workloads.kueue.x-k8s.io", namespace):
        if any(o.get("kind") == kind and o.get("name") == name for o in item["metadata"].get("ownerReferences", [])):
            return item
    return None


def condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    for found in (obj or {}).get("status", {}).get("conditions", []):
        if found.get("type") == kind:
            return dict(found)
    return {}


def admitted(item: dict[str, Any] | None) -> bool:
    return condition(item, "Admitted").get("status") == "True"


def pending_reason(item: dict[str, Any] | None) -> str:
    if item is None:
        return "no Workload yet"
    return str(condition(item, "QuotaReserved").get("message") or condition(item, "Admitted").get("message")
               or "no verdict yet")


def preempted(cluster: Cluster, namespace: str, name: str) -> str | None:
    """Kueue's own words when it preempted the Workload `name` (condition, else its event)."""
    item = cluster.get("workloads.kueue.x-k8s.io", name, namespace)
    said = condition(item, "Preempted")
    if said.get("status") == "True":
        return f"{said.get('reason')}: {said.get('message')}"
    evicted = condition(item, "Evicted")
    if evicted.get("status") == "True" and evicted.get("reason") == "Preempted":
        return f"Evicted: {evicted.get('message')}"
    events = [e for e in jobs.events_for(cluster, namespace, name) if e.startswith("Preempted")]
    return events[-1] if events else None


def _create(cluster: Cluster, manifest: dict[str, Any]) -> str:
    """Create as the tenant; '' or the API server's refusal."""
    result = cluster.kubectl("create", "-f", "-", stdin=json.dumps(manifest), check=False,
                             **tenant_identity(manifest["metadata"]["namespace"]))
    return result.stderr.strip() if result.returncode else ""


def _admitted_workload(cluster: Cluster, namespace: str, kind: str, name: str, timeout: float) -> dict[str, Any]:
    try:
        return wait_for(lambda: (lambda w: w if admitted(w) else None)(workload(cluster, namespace, kind, name)),
                        timeout, f"Kueue admitting {kind} {namespace}/{name}")
    except E2EError as err:
        raise E2EError(f"{err}: {pending_reason(workload(cluster, namespace, kind, name))}") from None


def _held(cluster: Cluster, namespace: str, kind: str, name: str, timeout: float) -> tuple[bool, str]:
    """(held, Kueue's words): held once Kueue gave its verdict and did not change it for SETTLE s."""
    def verdict() -> dict[str, Any] | None:
        item = workload(cluster, namespace, kind, name)
        return item if admitted(item) or "quota" in pending_reason(item).lower() else None

    wait_for(verdict, timeout, f"Kueue's verdict on {kind} {namespace}/{name}")
    time.sleep(SETTLE)
    item = workload(cluster, namespace, kind, name)
    return (not admitted(item), pending_reason(item) if not admitted(item) else "admitted")


def quiet(cluster: Cluster, timeout: float) -> None:
    """No ClusterQueue reserves quota for anything (earlier scenarios' work has finished)."""
    def idle() -> bool | None:
        busy = [q for q in cluster.items("clusterqueues.kueue.x-k8s.io")
                if int(q.get("status", {}).get("reservingWorkloads", 0) or 0)]
        return True if not busy else None

    wait_for(idle, timeout, "every ClusterQueue to reserve nothing")


def _cleanup(cluster: Cluster, made: list[tuple[str, str, str]], timeout: float) -> None:
    for kind, namespace, name in made:
        cluster.kubectl("delete", kind.lower(), name, "-n", namespace, "--wait=false", "--ignore-not-found",
                        check=False)
    with contextlib.suppress(E2EError):  # reported by the next scenario that needs a quiet cohort
        quiet(cluster, timeout)


def _borrowed(cluster: Cluster, queue: str, flavor: str, resource: str) -> int | None:
    found = cluster.get("clusterqueues.kueue.x-k8s.io", queue) or {}
    for usage in found.get("status", {}).get("flavorsReservation", []):
        if usage.get("name") == flavor:
            for item in usage.get("resources", []):
                if item.get("name") == resource:
                    return int(item.get("borrowed", 0) or 0)
    return None


def _settled_borrowing(cluster: Cluster, queue: str, slot: quota.Slot, timeout: float = 30) -> int | None:
    """What the ClusterQueue reports borrowed of the slot. Its status lags the admission: read it
    until it shows the prediction, and give what it shows at the deadline otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        borrowed = _borrowed(cluster, queue, slot.flavor, slot.resource)
        if borrowed == slot.borrow or time.monotonic() > deadline:
            return borrowed
        time.sleep(1.0)


def borrowing(cluster: Cluster, stack: Stack, report: Report, timeout: float) -> None:
    """A tenant holds its flavor's ceiling (nominal + what it may borrow) and one unit more waits."""
    slot = quota.borrowing_slot(_slots(stack, report))
    if slot is None:
        report.skip(stack.target.label, "borrowing-limit", "no tenant holds nominal quota on a flavor it may borrow on "
                    "within its namespace quota")
        return
    label, made = stack.target.label, [("Pod", slot.tenant, "borrow-holder"), ("Job", slot.tenant, "borrow-one-more")]
    try:
        quiet(cluster, timeout)
        refused = _create(cluster, holder_pod(slot, slot.ceiling, "borrow-holder"))
        if refused:
            report.scenario(label, "borrowing-limit", False, f"API server refused the holder: {refused}")
            return
        _admitted_workload(cluster, slot.tenant, "Pod", "borrow-holder", timeout)
        queue = slot.queue["metadata"]["name"]
        borrowed = _settled_borrowing(cluster, queue, slot)
        refused = _create(cluster, pinned_job(slot, 1, "borrow-one-more"))
        if refused:
            report.scenario(label, "borrowing-limit", False, f"API server refused the job: {refused}")
            return
        held, why = _held(cluster, slot.tenant, "Job", "borrow-one-more", timeout)
        off_spec = expect.ceiling_problem(expect.slots(expect.spec_model(stack.target)), slot.tenant, slot.pool,
                                          slot.resource, slot.ceiling)
        if off_spec:
            why += f"; the emitted queues' ceiling is off the spec: {off_spec}"
        ok = held and borrowed == slot.borrow and not off_spec
        report.scenario(label, "borrowing-limit", ok,
                        f"{slot.tenant} holds {slot.ceiling} {slot.resource} in {slot.flavor}: nominal {slot.nominal} "
                        f"+ borrowed {borrowed} (predicted {slot.borrow}); one more "
                        f"{'waits' if held else 'was admitted'}: {why}")
    except E2EError as err:
        report.scenario(label, "borrowing-limit", False, str(err))
    finally:
        _cleanup(cluster, made, timeout)


def reclaim(cluster: Cluster, stack: Stack, report: Report, timeout: float) -> None:
    """A tenant claiming its nominal quota takes back what it lent, if its queue says it may."""
    pair = quota.reclaim_pair(_slots(stack))
    if pair is None:
        report.skip(stack.target.label, "preemption-reclaim", "no tenant borrows on a flavor what only one other "
                    "tenant lends (within the namespace quotas): no reclaim to show")
        return
    borrower, lender, label = pair.borrower, pair.lender, stack.target.label
    made = [("Pod", borrower.tenant, "reclaim-borrower"), ("Job", lender.tenant, "reclaim-owner")]
    # The outcome is the spec's; the emitted queues only say where to stage it, and must agree.
    model = expect.spec_model(stack.target)
    expected, why = expect.reclaim_by_spec(model, borrower.tenant, lender.tenant, borrower.pool)
    off_spec = [p for p in (expect.ceiling_problem(expect.slots(model), borrower.tenant, borrower.pool,
                                                   borrower.resource, borrower.ceiling),) if p]
    if expected is None:
        report.scenario(label, "preemption-reclaim", False, f"the emitted queues let {lender.tenant} lend "
                        f"{borrower.borrow} {borrower.resource} of {borrower.flavor} to {borrower.tenant}: {why}")
        return
    if quota.reclaim_expected(pair.policy, 0, 0) != expected:  # neither names a PriorityClass
        off_spec.append(f"the lender's queue says reclaimWithinCohort {pair.policy}, which does not preempt")
    try:
        quiet(cluster, timeout)
        refused = _create(cluster, holder_pod(borrower, borrower.ceiling, "reclaim-borrower"))
        if refused:
            report.scenario(label, "preemption-reclaim", False, f"API server refused the borrower: {refused}")
            return
        victim = _admitted_workload(cluster, borrower.tenant, "Pod", "reclaim-borrower", timeout)
        refused = _create(cluster, pinned_job(lender, lender.nominal, "reclaim-owner"))
        if refused:
            report.scenario(label, "preemption-reclaim", False, f"API server refused the owner's job: {refused}")
            return
        outcome = _contest(cluster, victim, lender.tenant, "reclaim-owner", expected, timeout)
        said = (f"{borrower.tenant} borrows {borrower.borrow} {borrower.resource} of {borrower.flavor}; "
                f"{lender.tenant} claims its nominal {lender.nominal} (spec: {why}, so it preempts; "
                f"reclaimWithinCohort {pair.policy}): {outcome[1]}")
        report.scenario(label, "preemption-reclaim", outcome[0] and not off_spec, "; ".join([*off_spec, said]))
    except E2EError as err:
        report.scenario(label, "preemption-reclaim", False, str(err))
    finally:
        _cleanup(cluster, made, timeout)


def priority(cluster: Cluster, stack: Stack, report: Report, timeout: float) -> None:
    """A tenant's own-priority job evicts its standard-priority work holding the flavor's quota."""
    classes = {c["metadata"]["name"]: c for c in stack.of_type(PRIORITY_CLASS)}
    chosen = _priority_slot(_slots(stack), classes)
    if chosen is None:
        report.skip(stack.target.label, "preemption-priority", "no tenant has a PriorityClass of its own above the "
                    "standard one on a flavor where it holds nominal quota")
        return
    slot, low, high = chosen
    label, made = stack.target.label, [("Pod", slot.tenant, "priority-low"), ("Job", slot.tenant, "priority-high")]
    low_value, high_value = int(classes[low]["value"]), int(classes[high]["value"])
    model = expect.spec_model(stack.target)
    expected, why = expect.own_class_preempts(model, slot.tenant)
    off_spec = [p for p in (expect.ceiling_problem(expect.slots(model), slot.tenant, slot.pool, slot.resource,
                                                   slot.ceiling),) if p]
    if quota.within_queue_expected(slot.queue, low_value, high_value) != expected:
        off_spec.append(f"the emitted queue and classes ({low} {low_value}, {high} {high_value}, withinClusterQueue "
                        f"{slot.queue['spec'].get('preemption', {}).get('withinClusterQueue', 'Never')}) do not "
                        "preempt")
    try:
        quiet(cluster, timeout)
        refused = _create(cluster, holder_pod(slot, slot.ceiling, "priority-low", low))
        if refused:
            report.scenario(label, "preemption-priority", False, f"API server refused the low-priority pod: {refused}")
            return
        victim = _admitted_workload(cluster, slot.tenant, "Pod", "priority-low", timeout)
        refused = _create(cluster, pinned_job(slot, 1, "priority-high", high))
        if refused:
            report.scenario(label, "preemption-priority", False, f"API server refused the high-priority job: {refused}")
            return
        ok, detail = _contest(cluster, victim, slot.tenant, "priority-high", expected, timeout)
        policy = slot.queue["spec"].get("preemption", {}).get("withinClusterQueue", "Never")
        said = (f"{slot.tenant} holds {slot.ceiling} {slot.resource} of {slot.flavor} at {low} ({low_value}); "
                        f"one at {high} ({high_value}) (spec: {why}, so it preempts; withinClusterQueue {policy}): "
                f"{detail}")
        report.scenario(label, "preemption-priority", ok and not off_spec, "; ".join([*off_spec, said]))
    except E2EError as err:
        report.scenario(label, "preemption-priority", False, str(err))
    finally:
        _cleanup(cluster, made, timeout)


def _contest(cluster: Cluster, victim: dict[str, Any], namespace: str, job: str, expected: bool,
             timeout: float) -> tuple[bool, str]:
    """Whether Kueue preempted `victim` for `job` exactly as expected, in its words."""
    name, victim_ns = victim["metadata"]["name"], victim["metadata"]["namespace"]
    if expected:
        try:
            wait_for(lambda: True if admitted(workload(cluster, namespace, "Job", job)) else None, timeout,
                     f"Kueue admitting Job {namespace}/{job}")
        except E2EError as err:
            return False, f"{err}: {pending_reason(workload(cluster, namespace, 'Job', job))}"
        said = preempted(cluster, victim_ns, name)
        return said is not None, f"admitted; {victim_ns}/{name} " + (
            f"preempted ({said})" if said else "not preempted (quota freed some other way)")
    held, why = _held(cluster, namespace, "Job", job, timeout)
    said = preempted(cluster, victim_ns, name)
    return held and said is None, f"{'waits' if held else 'admitted'}: {why}" + (
        f"; {victim_ns}/{name} preempted ({said})" if said else "")


def _slots(stack: Stack, report: Report | None = None) -> list[quota.Slot]:
    """The slots a holder pod can take whole: Kueue's ceiling within the namespace quota. Given a
    report, the others are a row: there the namespace quota stops the tenant first (the
    `namespace-quota-<tenant>` rows check it against the spec)."""
    found = quota.slots(stack.of_type(quota.CLUSTER_QUEUE), stack.of_type(quota.FLAVOR))
    kept = quota.within_namespace_quota(found, stack.of_type(quota.RESOURCE_QUOTA))
    past = [s for s in found if s not in kept]
    if report is not None and past:
        report.skip(stack.target.label, "kueue-ceiling-past-namespace-quota",
                    "; ".join(f"{s.tenant} {s.resource} in {s.flavor}: Kueue's ceiling {s.ceiling}" for s in past)
                    + ": above the namespace quota, which refuses such a pod before Kueue sees it")
    return kept


def _priority_slot(found: list[quota.Slot], classes: dict[str, dict[str, Any]]) -> tuple[quota.Slot, str, str] | None:
    """A slot with the tenant's own PriorityClass above the shared standard one (both of which
    the tenant priority policy lets its pods name); a slot that borrows nothing first, smallest."""
    standard = [n for n, c in classes.items() if n.endswith("-standard")]
    if not standard:
        return None
    for slot in sorted(found, key=lambda s: (s.borrow > 0, s.ceiling, s.tenant, s.flavor)):
        if slot.nominal == 0:
            continue
        own = [n for n, c in classes.items()
               if c["metadata"].get("labels", {}).get("gpuplat.dev/tenant") == slot.tenant]
        if own and int(classes[own[0]]["value"]) > int(classes[standard[0]]["value"]):
            return slot, standard[0], own[0]
    return None
