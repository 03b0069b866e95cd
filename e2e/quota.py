"""Quota arithmetic read off the emitted ClusterQueues, independent of `gpuplat verify`'s (the
suite checks that model, so it does not borrow it), and the choice of where to test it.

Kueue gives each pod set ONE flavor per resource group, so the most a job can hold is the
largest single flavor's: its nominal quota plus what it may borrow, which is its borrowingLimit
(no limit: all of it) but never more than the other ClusterQueues of its cohort lend of that
flavor (each its nominal quota, at most its lendingLimit).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
RESOURCE_QUOTA = "kubernetes:core/v1:ResourceQuota"
FLAVOR = "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"


def tenant_of(queue: dict[str, Any]) -> str:
    return str(queue["spec"]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"])


def _quota(queue: dict[str, Any], flavor: str, resource: str) -> dict[str, Any] | None:
    for group in queue["spec"].get("resourceGroups", []):
        for entry in group["flavors"]:
            if entry["name"] == flavor:
                for quota in entry["resources"]:
                    if quota["name"] == resource:
                        return dict(quota)
    return None


def lends(queue: dict[str, Any], flavor: str, resource: str) -> int:
    quota = _quota(queue, flavor, resource)
    if quota is None:
        return 0
    nominal = int(quota["nominalQuota"])
    return min(nominal, int(quota["lendingLimit"])) if "lendingLimit" in quota else nominal


def lendable_to(queues: list[dict[str, Any]], queue: dict[str, Any], flavor: str, resource: str) -> int:
    """What the rest of `queue`'s cohort lends of the flavor's resource."""
    cohort = queue["spec"].get("cohortName")
    if not cohort:
        return 0
    return sum(lends(q, flavor, resource) for q in queues
               if q is not queue and q["spec"].get("cohortName") == cohort)


def borrowable(queues: list[dict[str, Any]], queue: dict[str, Any], flavor: str, resource: str) -> int:
    quota = _quota(queue, flavor, resource)
    if quota is None:
        return 0
    lendable = lendable_to(queues, queue, flavor, resource)
    return lendable if "borrowingLimit" not in quota else min(int(quota["borrowingLimit"]), lendable)


def ceiling(queues: list[dict[str, Any]], queue: dict[str, Any], flavor: str, resource: str) -> int | None:
    """The most of `resource` one pod set of `queue` can hold in `flavor` (None: not offered)."""
    quota = _quota(queue, flavor, resource)
    if quota is None:
        return None
    return int(quota["nominalQuota"]) + borrowable(queues, queue, flavor, resource)


@dataclass(frozen=True)
class Slot:
    """One tenant's quota of one resource in one flavor, with its flavor's node labels."""

    tenant: str
    flavor: str
    resource: str
    nominal: int
    borrow: int  # what it may really borrow: min(borrowingLimit, what the cohort lends)
    node_labels: dict[str, str]
    queue: dict[str, Any]

    @property
    def ceiling(self) -> int:
        return self.nominal + self.borrow

    @property
    def pool(self) -> str:
        return self.node_labels.get("gpuplat.dev/pool", "")


def slots(cluster_queues: list[dict[str, Any]], flavors: list[dict[str, Any]],
          topology_aware: bool = False) -> list[Slot]:
    """Every (tenant, flavor, resource) quota of a flavor without a Topology (a topology-aware
    flavor takes only jobs asking for a placement: docs/tenants.md), or with `topology_aware`
    of a flavor that names one."""
    plain = {f["metadata"]["name"]: f["spec"].get("nodeLabels", {}) for f in flavors
             if bool(f["spec"].get("topologyName")) == topology_aware}
    found = []
    for queue in cluster_queues:
        for group in queue["spec"].get("resourceGroups", []):
            for entry in group["flavors"]:
                if entry["name"] not in plain:
                    continue
                for quota in entry["resources"]:
                    found.append(Slot(tenant_of(queue), entry["name"], quota["name"], int(quota["nominalQuota"]),
                                      borrowable(cluster_queues, queue, entry["name"], quota["name"]),
                                      dict(plain[entry["name"]]), queue))
    return found


def within_namespace_quota(found: list[Slot], resource_quotas: list[dict[str, Any]]) -> list[Slot]:
    """The slots whose ceiling the tenant's namespace ResourceQuota lets one pod request. On a pool
    that soft quotas oversubscribe, Kueue's ceiling (nominal + what the cohort lends) can pass what
    the pool holds, and the quota (the pool's capacity, by design) refuses such a pod before Kueue
    sees it: no scenario can show Kueue's limit there."""
    caps: dict[tuple[str, str], int] = {}
    for rq in resource_quotas:
        for key, value in rq["spec"].get("hard", {}).items():
            if key.startswith("requests."):
                caps[(rq["metadata"]["namespace"], key.removeprefix("requests."))] = int(value)
    return [s for s in found if s.ceiling <= caps.get((s.tenant, s.resource), s.ceiling)]


def pool_ceiling(queues: list[dict[str, Any]], queue: dict[str, Any], flavors: list[dict[str, Any]],
                 pool: str, resource: str) -> int | None:
    """The most a job of `queue` on `pool` can hold: the largest single flavor's ceiling."""
    found = [ceiling(queues, queue, f["metadata"]["name"], resource) for f in flavors
             if f["spec"].get("nodeLabels", {}).get("gpuplat.dev/pool") == pool]
    known = [c for c in found if c is not None]
    return max(known) if known else None


def borrowing_slot(found: list[Slot]) -> Slot | None:
    """Where to show borrowing stop at its limit: a slot that may borrow, best one whose
    borrowingLimit (not the cohort) is what stops it; else the smallest slot (stops at nominal)."""
    def bounded_by_limit(s: Slot) -> bool:
        quota = _quota(s.queue, s.flavor, s.resource) or {}
        return "borrowingLimit" in quota and int(quota["borrowingLimit"]) == s.borrow

    usable = [s for s in found if s.nominal > 0]
    ranked = sorted(usable, key=lambda s: (s.borrow == 0, not bounded_by_limit(s), s.ceiling, s.tenant, s.flavor))
    return ranked[0] if ranked else None


@dataclass(frozen=True)
class Reclaim:
    borrower: Slot
    lender: Slot
    policy: str  # the lender's ClusterQueue's preemption.reclaimWithinCohort


def reclaim_pair(found: list[Slot]) -> Reclaim | None:
    """A borrower and a lender of one flavor such that the lender, claiming its nominal quota
    while the borrower holds its ceiling, needs back what it lent (no third queue lends enough)."""
    for borrower in sorted(found, key=lambda s: (s.ceiling, s.tenant, s.flavor)):
        if borrower.borrow == 0 or borrower.nominal == 0:
            continue
        for lender in found:
            if (lender.flavor, lender.resource) != (borrower.flavor, borrower.resource) or lender is borrower:
                continue
            if lender.queue["spec"].get("cohortName") != borrower.queue["spec"].get("cohortName"):
                continue
            others = sum(lends(s.queue, s.flavor, s.resource) for s in found
                         if (s.flavor, s.resource) == (borrower.flavor, borrower.resource)
                         and s is not borrower and s is not lender
                         and s.queue["spec"].get("cohortName") == borrower.queue["spec"].get("cohortName"))
            if lends(lender.queue, lender.flavor, lender.resource) > 0 and borrower.borrow > others:
                policy = lender.queue["spec"].get("preemption", {}).get("reclaimWithinCohort", "Never")
                return Reclaim(borrower, lender, str(policy))
    return None


def reclaim_expected(policy: str, borrower_priority: int, lender_priority: int) -> bool:
    """Kueue's reclaimWithinCohort: Any takes back lent quota from any borrower, LowerPriority
    only from a borrower of lower priority, Never not at all."""
    return policy == "Any" or (policy == "LowerPriority" and borrower_priority < lender_priority)


def within_queue_expected(queue: dict[str, Any], low: int, high: int) -> bool:
    """Kueue's withinClusterQueue: LowerPriority (and LowerOrNewerEqualPriority, whose equal-
    priority case needs the victim to be newer, never so here: it is admitted first) lets a job
    evict its own queue's lower-priority work; Never nothing."""
    policy = queue["spec"].get("preemption", {}).get("withinClusterQueue", "Never")
    return policy in ("LowerPriority", "LowerOrNewerEqualPriority") and low < high
