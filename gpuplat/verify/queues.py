# pyright: strict
"""Steps 1-3: the tenant's LocalQueue, its ClusterQueue's flavors of the pool, their placement.

Kueue files a job without a queue name under the namespace's LocalQueue `default`; the
ClusterQueue admits it only if its namespaceSelector selects the namespace (a missing selector
selects nothing), and only into a flavor with quota left for the resource: nominal quota plus
what it may borrow from its cohort. An admitted job gets the flavor's nodeLabels as node
selector and its tolerations injected. Kueue assigns a flavor only if the pod's tolerations
plus the flavor's `tolerations` cover the flavor's nodeTaints (flavorassigner.go); the job
followed here is the default tenant job, which tolerates nothing itself, so on a spot flavor
the flavor must carry the spot toleration.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from gpuplat.catalog.labels import POOL_LABEL

from .k8s import Obj, as_list, as_map, describe, dig, labels_of, labels_text, quantity, selector_matches, taint_text
from .k8s import tolerates as _tolerates
from .types import PLACEMENT, QUEUE, QUOTA, Outcome, Placement, Step
from .view import View

LOCAL_QUEUE = "default"
SPOT_TAINT_KEY = "gpuplat.dev/spot"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"


def namespace_labels(view: View, namespace: str) -> dict[str, str] | None:
    found = view.find("Namespace", name=namespace)
    if not found:
        return None
    # The API server adds this label to every namespace.
    return {**labels_of(found[0]), "kubernetes.io/metadata.name": namespace}


def queue_step(view: View, tenant: str) -> Outcome:
    local = view.find("LocalQueue", name=LOCAL_QUEUE, namespace=tenant)
    if not local:
        return Outcome(Step(QUEUE, False, f"no LocalQueue {LOCAL_QUEUE} in namespace {tenant}"))
    name = str(dig(local[0], "spec", "clusterQueue") or "")
    queues = view.find("ClusterQueue", name=name)
    if not queues:
        return Outcome(Step(QUEUE, False, f"{describe(local[0])} names ClusterQueue {name!r}, which is not emitted"))
    labels = namespace_labels(view, tenant)
    if labels is None:
        return Outcome(Step(QUEUE, False, f"no Namespace {tenant} is emitted"))
    selector = dig(queues[0], "spec", "namespaceSelector")
    if not selector_matches(selector, labels):
        return Outcome(
            Step(
                QUEUE, False, f"ClusterQueue {name}: namespaceSelector {selector!r} does not select namespace {tenant}"
            )
        )
    return Outcome(
        Step(QUEUE, True, f"{describe(local[0])} -> ClusterQueue {name}, selecting namespace {tenant}"), queues[0]
    )


def _flavor_quota(entry: Obj, resource: str) -> tuple[Decimal, Decimal | None] | None:
    for quota in as_list(entry.get("resources")):
        q = as_map(quota)
        if q.get("name") == resource:
            nominal = quantity(q.get("nominalQuota")) or Decimal(0)
            borrowing = quantity(q["borrowingLimit"]) if "borrowingLimit" in q else None
            return nominal, borrowing
    return None


def _cohort_of(queue: Obj) -> Any:
    return dig(queue, "spec", "cohortName") or dig(queue, "spec", "cohort")


def _lends(queue: Obj, flavor: str, resource: str) -> Decimal:
    """What a queue lends its cohort: its nominal quota, at most its lendingLimit (Kueue's
    lendingLimit 0 keeps a hard tenant's guarantee to itself)."""
    total = Decimal(0)
    for entry in _flavor_entries(queue):
        if entry.get("name") != flavor:
            continue
        for quota in as_list(entry.get("resources")):
            q = as_map(quota)
            if q.get("name") == resource:
                nominal = quantity(q.get("nominalQuota")) or Decimal(0)
                limit = quantity(q["lendingLimit"]) if "lendingLimit" in q else None
                total += nominal if limit is None else min(nominal, limit)
    return total


def _cohort_lendable(view: View, queue: Obj, flavor: str, resource: str) -> Decimal:
    """What the other ClusterQueues of the queue's cohort lend of `flavor`/`resource`.
    The cohort's total is summed once per view: per journey it made verify quadratic in tenants."""
    cohort = _cohort_of(queue)
    if not cohort:
        return Decimal(0)
    key = ("cohort-lendable", str(cohort), flavor, resource)
    if key not in view.memo:
        members = [q for q in view.find("ClusterQueue") if _cohort_of(q) == cohort]
        view.memo[key] = sum((_lends(q, flavor, resource) for q in members), Decimal(0))
    total: Decimal = view.memo[key]
    return total - _lends(queue, flavor, resource)


def _flavor_entries(queue: Obj) -> list[Obj]:
    return [as_map(f) for g in as_list(dig(queue, "spec", "resourceGroups")) for f in as_list(as_map(g).get("flavors"))]


def _available(view: View, queue: Obj, entry: Obj, resource: str) -> Decimal | None:
    found = _flavor_quota(entry, resource)
    if found is None:
        return None
    nominal, borrowing = found
    lendable = _cohort_lendable(view, queue, str(entry.get("name")), resource)
    # Without a borrowingLimit a queue may borrow whatever its cohort holds.
    return nominal + (lendable if borrowing is None else min(borrowing, lendable))


def quota_step(view: View, queue: Obj, pool: str, resource: str) -> Outcome:
    """Flavors of `pool` in the ClusterQueue with room for one unit of `resource`."""
    cq = f"ClusterQueue {dig(queue, 'metadata', 'name')}"
    usable: list[Obj] = []
    notes: list[str] = []
    for entry in _flavor_entries(queue):
        available = _available(view, queue, entry, resource)
        if available is None:
            continue
        name = str(entry.get("name"))
        flavors = view.find("ResourceFlavor", name=name)
        if not flavors:
            notes.append(f"flavor {name} is listed but no ResourceFlavor {name} is emitted")
            continue
        labels = as_map(dig(flavors[0], "spec", "nodeLabels"))
        if labels and labels.get(POOL_LABEL) != pool:
            continue  # another pool's flavor; an unlabelled one may take this job too
        if available < 1:
            notes.append(f"flavor {name} has {available} {resource} (nominal + borrowable)")
            continue
        usable.append(flavors[0])
    if not usable:
        why = "; ".join(notes) or f"none of its flavors offering {resource} selects {POOL_LABEL}={pool}"
        return Outcome(Step(QUOTA, False, f"{cq} has no flavor of pool {pool} with quota for 1 {resource}: {why}"))
    names = ", ".join(str(dig(f, "metadata", "name")) for f in usable)
    return Outcome(Step(QUOTA, True, f"{cq}: flavor(s) {names} hold quota for 1 {resource}"), usable)


def placement_step(flavor: Obj) -> Outcome:
    name = str(dig(flavor, "metadata", "name"))
    spec = as_map(flavor.get("spec"))
    labels = {str(k): str(v) for k, v in as_map(spec.get("nodeLabels")).items()}
    node_taints = [as_map(t) for t in as_list(spec.get("nodeTaints"))]
    spot = labels.get(CAPACITY_TYPE_LABEL) == "spot" or any(t.get("key") == SPOT_TAINT_KEY for t in node_taints)
    tolerations = [as_map(t) for t in as_list(spec.get("tolerations"))]
    refused = [taint_text(t) for t in node_taints if not any(_tolerates(tol, t) for tol in tolerations)]
    if not labels:
        return Outcome(
            Step(PLACEMENT, False, f"ResourceFlavor {name} has no nodeLabels: its jobs may land on any node")
        )
    if refused:
        return Outcome(
            Step(
                PLACEMENT,
                False,
                f"ResourceFlavor {name}: nodeTaints {', '.join(refused)} are not covered by its tolerations, "
                "so Kueue admits no default job of the tenant there (untolerated taint)",
            )
        )
    kind = "a default job (spot)" if spot else "a default job"
    detail = f"ResourceFlavor {name}: {kind} selects {labels_text(labels)} with {len(tolerations)} toleration(s)"
    return Outcome(Step(PLACEMENT, True, detail), Placement(name, labels, tolerations, spot))
