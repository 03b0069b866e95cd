"""The journeys, from the spec: every tenant x pool x unit the spec allows, each tried with the
jobs e2e/expect.py sizes (e2e/shapes.py: one unit, a whole node, a gang over two nodes, one unit past the
tenant's quota, on a topology-aware pool a job larger than a leaf), each job judged against
what the spec says of it, in the controllers' own words. A job of several pods that should run
(a gang, a job placed by the fabric) is held running by kwok until the round deletes it, and
runs only if Kueue admitted it as one workload and all its pods were Running at one moment, no
node holding more of it than the spec's node serves (e2e/gang.py).

Jobs run in rounds, so the real engines stay cheap: every one-unit job at once (the tenants'
reference jobs, as docs/tenants.md writes them), then every job the spec says must wait at once
(they hold nothing), then the larger jobs, at most one per pool and resource in a round (what
the spec guarantees a tenant assumes the rest of its cohort idle there). Between rounds the
round's jobs are deleted and the ClusterQueues drained. A job the spec cannot decide is a
skipped row saying why. verify's predictions are compared with the spec's set in a row of
their own.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from e2e import expect, gang, jobs
from e2e.cluster import Cluster, E2EError
from e2e.contention import SETTLE, admitted, condition, quiet
from e2e.expect import EITHER, RUNS, WAITS
from e2e.kwokstages import HOLD
from e2e.report import Journey, Report
from e2e.scenarios import spot_reachable, tenant_identity
from e2e.shapes import Shape, shapes
from e2e.stack import Stack


def rounds(shapes: Iterable[Shape]) -> list[list[Shape]]:
    """The order jobs are submitted in: the one-unit jobs, then those that must wait, then the
    larger ones with at most one per (pool, resource) in a round. Skipped ones in none."""
    runnable = [s for s in shapes if not s.skip]
    single = [s for s in runnable if s.name == "single"]
    waits = [s for s in runnable if s.name != "single" and s.expect == WAITS]
    found: list[list[Shape]] = [r for r in (single, waits) if r]
    larger: list[list[Shape]] = []
    for shape in (s for s in runnable if s.name != "single" and s.expect != WAITS):
        key = (shape.slot.pool, shape.slot.resource)
        for batch in larger:
            if all((s.slot.pool, s.slot.resource) != key for s in batch):
                batch.append(shape)
                break
        else:
            larger.append([shape])
    return found + larger


def manifest(shape: Shape) -> dict[str, Any]:
    """The tenant's reference job (docs/tenants.md) at the shape's size and placement."""
    slot = shape.slot
    job = jobs.reference_job(slot.tenant, slot.pool, slot.resource, name=shape.job_name, units=shape.units)
    job["spec"]["parallelism"] = job["spec"]["completions"] = shape.pods
    annotations = dict(shape.annotations)
    if shape.together:  # kwok keeps its pods running until the round deletes the job (e2e/kwokstages.py)
        annotations[HOLD] = "true"
    if annotations:
        job["spec"]["template"]["metadata"]["annotations"] = annotations
    return job


@dataclass
class Verdict:
    actual: str
    reason: str
    flavors: tuple[str, ...] = ()
    bound: bool = False


class Snapshot:
    """What the engines show at one moment, each list read once per namespace (a round's jobs
    are judged together: one kubectl call per kind and tenant, not per job)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._lists: dict[tuple[str, str], list[dict[str, Any]]] = {}

    def _items(self, kind: str, namespace: str = "") -> list[dict[str, Any]]:
        if (kind, namespace) not in self._lists:
            self._lists[(kind, namespace)] = self.cluster.items(kind, namespace)
        return self._lists[(kind, namespace)]

    def workload(self, shape: Shape) -> dict[str, Any] | None:
        for item in self._items("workloads.kueue.x-k8s.io", shape.slot.tenant):
            if any(o.get("kind") == "Job" and o.get("name") == shape.job_name
                   for o in item["metadata"].get("ownerReferences", [])):
                return item
        return None

    def pods(self, shape: Shape) -> list[dict[str, Any]]:
        return [p for p in self._items("pods", shape.slot.tenant)
                if p["metadata"].get("labels", {}).get("job-name") == shape.job_name]

    def node_labels(self) -> dict[str, dict[str, str]]:
        return {n["metadata"]["name"]: n["metadata"].get("labels", {}) for n in self._items("nodes")}


def placement(pods: list[dict[str, Any]], nodes: dict[str, dict[str, str]], within: str, spans: str) -> str:
    """'' when the pods share one `within` domain and span more than one `spans` domain; else
    where they landed."""
    inside = {nodes.get(p["spec"]["nodeName"], {}).get(within) for p in pods}
    across = {nodes.get(p["spec"]["nodeName"], {}).get(spans) for p in pods}
    if len(inside) == 1 and None not in inside and len(across) > 1:
        return ""
    return f"pods in {within} {sorted(map(str, inside))}, {spans} {sorted(map(str, across))}"


def kueue_message(item: dict[str, Any] | None) -> str:
    return str(condition(item, "QuotaReserved").get("message") or condition(item, "Admitted").get("message") or "")


def observe(now: Snapshot, shape: Shape, settled: bool) -> Verdict | None:
    """The verdict on the shape's job once the engines decided it; None while undecided. A job
    the spec says waits is decided once Kueue said why for `SETTLE` s (`settled`)."""
    item = now.workload(shape)
    if item is not None and admitted(item):
        assignments = item.get("status", {}).get("admission", {}).get("podSetAssignments", [])
        flavors = tuple(sorted({f for a in assignments for f in a.get("flavors", {}).values()}))
        pods = now.pods(shape)
        bound = [p for p in pods if p["spec"].get("nodeName")]
        if shape.together:
            found = gang.judge(shape, item, pods)
            if found.together is None:
                return None
            where = f"admitted by Kueue onto {', '.join(flavors)} as one workload; {found.said}"
            if not found.together:
                return Verdict(gang.NOT_TOGETHER, where, flavors, True)
        elif len(bound) < shape.pods:
            return None
        else:
            nodes = sorted({p["spec"]["nodeName"] for p in bound})
            where = f"admitted by Kueue onto {', '.join(flavors)}; {len(bound)} pod(s) bound to {', '.join(nodes)}"
        if shape.within:
            off = placement(bound, now.node_labels(), shape.within, shape.spans)
            if off:
                return Verdict("runs, placed otherwise", f"{where}: {off}", flavors, True)
            where += f", within one {shape.within} across {shape.spans}s"
        return Verdict(RUNS, where, flavors, True)
    if shape.expect in (WAITS, EITHER) and settled and shape.kueue_says in kueue_message(item):
        return Verdict(WAITS, f"Kueue: {kueue_message(item)}")
    return None


def _final(cluster: Cluster, now: Snapshot, shape: Shape) -> Verdict:
    """At the deadline: what holds the job, in the controller's words."""
    item = now.workload(shape)
    if item is None:
        return Verdict(WAITS, "Kueue made no Workload for the job: " +
                       "; ".join(jobs.events_for(cluster, shape.slot.tenant, shape.job_name)[-2:]))
    if not admitted(item):
        said = kueue_message(item) or "no verdict from Kueue"
        held = shape.expect == RUNS or shape.kueue_says in said
        return Verdict(WAITS if held else f"{WAITS}, not for the spec's reason", f"Kueue: {said}")
    pods = now.pods(shape)
    waiting = [p for p in pods if not p["spec"].get("nodeName")]
    said = jobs.events_for(cluster, shape.slot.tenant, waiting[0]["metadata"]["name"]) if waiting else []
    actual = WAITS if shape.expect != EITHER else "admitted, not placed"
    return Verdict(actual, f"admitted, {len(pods) - len(waiting)} of {shape.pods} pod(s) bound; scheduler: "
                   + ("; ".join(said[-2:]) or "no pod yet"))


Key = tuple[str, str]  # a job: its namespace (the tenant) and name


def key(shape: Shape) -> Key:
    return shape.slot.tenant, shape.job_name


def judge(cluster: Cluster, submitted: list[tuple[Shape, str]], timeout: float) -> dict[Key, Verdict]:
    """Each submitted shape's verdict, given the API server's refusal of it ('' if created)."""
    verdicts = {key(s): Verdict(WAITS, f"API server refused the job: {refused}") for s, refused in submitted if refused}
    pending = [s for s, refused in submitted if not refused]
    seen: dict[Key, float] = {}  # when Kueue first gave the words a waiting job must wait with
    deadline = time.monotonic() + timeout
    now = Snapshot(cluster)
    while pending:
        now = Snapshot(cluster)
        for shape in list(pending):
            item = now.workload(shape)
            if shape.expect != RUNS and shape.kueue_says in kueue_message(item) and not admitted(item):
                seen.setdefault(key(shape), time.monotonic())
            since = seen.get(key(shape))
            verdict = observe(now, shape, since is not None and time.monotonic() - since >= SETTLE)
            if verdict is not None:
                verdicts[key(shape)] = verdict
                pending.remove(shape)
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    for shape in pending:
        verdicts[key(shape)] = _final(cluster, now, shape)
    return verdicts


def _submit(cluster: Cluster, shape: Shape) -> str:
    result = cluster.kubectl("create", "-f", "-", stdin=json.dumps(manifest(shape)), check=False,
                             **tenant_identity(shape.slot.tenant))
    return result.stderr.strip() if result.returncode else ""


def verify_follows_spec(stack: Stack, report: Report, slots: list[expect.Slot]) -> None:
    """verify's journeys are the spec's, each predicted to run (verify checks the same promise)."""
    spec = {(s.tenant, s.pool, s.resource) for s in slots}
    said = {(j["tenant"], j["pool"], j["resource"]): j for j in stack.journeys}
    missing = sorted(spec - set(said))
    extra = sorted(set(said) - spec)
    blocked = sorted(k for k in spec & set(said) if not said[k]["ok"])
    wrong = [f"verify does not follow {'/'.join(k)}" for k in missing] + \
        [f"verify follows {'/'.join(k)}, which the spec does not allow" for k in extra] + \
        [f"verify predicts {'/'.join(k)} blocked" for k in blocked]
    report.scenario(stack.target.label, "verify-follows-spec", not wrong,
                    "; ".join(wrong) or f"verify follows the spec's {len(spec)} tenant x pool x unit journeys, "
                    "each predicted to run")


QUOTA_WORDS = "exceeded quota"


def quota_pod(tenant: str, resource: str, units: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "e2e-namespace-quota", "namespace": tenant,
                         "labels": {jobs.QUEUE_LABEL: "default"}},
            "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10.2",
                                     "resources": {"requests": {"cpu": "1", "memory": "1Gi", resource: str(units)},
                                                   "limits": {resource: str(units)}},
                                     "securityContext": {"allowPrivilegeEscalation": False}}]}}


def namespace_quota(cluster: Cluster, stack: Stack, report: Report, ceilings: dict[str, dict[str, int]]) -> None:
    """Per tenant and resource, the API server's ResourceQuota lets a pod request the spec's
    ceiling (e2e/expect.py) and refuses one unit more, in its own words (a server dry run)."""
    for tenant, by_resource in ceilings.items():
        wrong, held = [], []
        for resource, ceiling in by_resource.items():
            answers = []
            for units in (ceiling, ceiling + 1):
                result = cluster.kubectl("create", "--dry-run=server", "-f", "-",
                                         stdin=json.dumps(quota_pod(tenant, resource, units)), check=False,
                                         **tenant_identity(tenant))
                errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
                answers.append((result.returncode == 0, (errors or [result.stderr.strip()])[-1][-300:]))
            (fits, why_not), (over, said) = answers
            if not fits:
                wrong.append(f"{ceiling} {resource} refused: {why_not}")
            elif over or QUOTA_WORDS not in said or resource not in said:
                wrong.append(f"{ceiling + 1} {resource} " + ("admitted" if over else f"refused otherwise: {said}"))
            else:
                held.append(f"{resource} {ceiling}")
        report.scenario(stack.target.label, f"namespace-quota-{tenant}", not wrong,
                        "; ".join(wrong) or f"the namespace quota holds the spec's ceilings ({', '.join(held)}) "
                        f"and refuses one more ({QUOTA_WORDS})")


def run(cluster: Cluster, stack: Stack, report: Report, timeout: float) -> None:
    label = stack.target.label
    try:
        model = expect.spec_model(stack.target)
    except expect.SpecError as err:
        report.scenario(label, "journeys", False, str(err))
        return
    slots = expect.slots(model)
    verify_follows_spec(stack, report, slots)
    every = [shape for slot in slots for shape in shapes(slot)]
    for shape in every:
        if shape.skip:
            report.skip(label, f"job-{shape.slot.tenant}-{shape.job_name.removeprefix('e2e-')}",
                        f"{shape.label}: {shape.skip}")
    single_outcomes: list[jobs.Outcome] = []
    spot_judged = False
    batches = rounds(every)
    for index, batch in enumerate(batches):
        verdicts = judge(cluster, [(s, _submit(cluster, s)) for s in batch], timeout)
        for shape in batch:
            verdict = verdicts[key(shape)]
            slot = shape.slot
            report.journey(Journey(label, slot.tenant, slot.pool, slot.resource, shape.expect, verdict.actual,
                                   f"{verdict.reason} (spec: {shape.why})", job=shape.label))
            if shape.name == "single" and verdict.actual == RUNS:
                single_outcomes.append(jobs.Outcome(True, True, reason=verdict.reason, flavors=verdict.flavors))
        if batch[0].name == "single":
            spot_reachable(cluster, stack, report, single_outcomes, timeout)
            spot_judged = True
        for shape in batch:
            cluster.kubectl("delete", "job", shape.job_name, "-n", shape.slot.tenant, "--wait=false",
                            "--ignore-not-found", check=False)
        try:
            quiet(cluster, timeout)
        except E2EError as err:
            report.scenario(label, "journeys-drained", False, f"after a round of jobs: {err}")
            for shape in (s for later in batches[index + 1:] for s in later):
                report.skip(label, f"job-{shape.slot.tenant}-{shape.job_name.removeprefix('e2e-')}",
                            f"{shape.label}: not run, the ClusterQueues never drained after the round before")
            break
    if not spot_judged:
        spot_reachable(cluster, stack, report, [], timeout)
    namespace_quota(cluster, stack, report, expect.namespace_ceilings(model))
