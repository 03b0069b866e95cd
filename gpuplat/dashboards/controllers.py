"""Panels from Kueue's and Karpenter's own metrics: who waits and why, borrowing, interruptions, repairs.

Only where the stack runs them (series.runs_kueue / runs_karpenter) and only their series named
in series.py. Counters Kueue and Karpenter create at their first event (evictions, disruptions,
interruption messages) have no series before it: those queries fall back to 0, so a quiet
hour reads 0 rather than "no data". Counts over the last hour (`increase(...[1h])`) rather than
per-second rates: a handful of interruptions a day is what these panels are for.
"""

from __future__ import annotations

from gpuplat.model import GpuNodePool, Platform, Tenant
from gpuplat.plan.types import Plan

from .grafana import Panel, Query, or_zero

EVENTS_OVER = "1h"


def _or_zero_by(expr: str) -> str:
    """0 when `expr`, grouped by labels, has no series at all: `on ()` keeps the 0 out otherwise."""
    return f"({expr} or on () vector(0))"


def _events(series: str, by: str) -> str:
    return _or_zero_by(f"sum by ({by}) (increase({series}[{EVENTS_OVER}]))")


def cluster_queue(model: Platform, tenant: Tenant) -> str:
    """components/kubernetes/scheduling.py names each tenant's ClusterQueue so."""
    return f"{model.metadata.name}-{tenant.name}"


def fleet_queue_panels(model: Platform) -> list[Panel]:
    queues = f'cluster_queue=~"{model.metadata.name}-.*"'
    pending = f"sum by (cluster_queue, status) (kueue_pending_workloads{{{queues}}})"
    return [
        Panel(
            "Workloads waiting in Kueue, by tenant",
            [Query(pending, "{{cluster_queue}} {{status}}")],
            stacked=True,
            description="active: queued for quota or their turn; inadmissible: Kueue tried and they do not fit "
            "until quota or the cluster changes.",
        ),
    ]


def fleet_karpenter_panels() -> list[Panel]:
    return [
        Panel(
            f"Interruption messages (per {EVENTS_OVER})",
            [Query(_events("karpenter_interruption_received_messages_total", "message_type"), "{{message_type}}")],
            description="What Karpenter's interruption queue delivered: spot interruptions, rebalance "
            "recommendations, scheduled changes, instance state and status changes.",
        ),
    ]


def tenant_queue_panels(model: Platform, tenant: Tenant) -> list[Panel]:
    ns, cq = f'namespace="{tenant.name}"', f'cluster_queue="{cluster_queue(model, tenant)}"'
    usage = f"sum by (flavor, resource) (kueue_cluster_queue_resource_usage{{{cq}}})"
    nominal = f"sum by (flavor, resource) (kueue_cluster_queue_nominal_quota{{{cq}}})"
    wait = f"sum by (le) (rate(kueue_admission_wait_time_seconds_bucket{{{cq}}}[{EVENTS_OVER}]))"
    return [
        Panel(
            "Workloads waiting and why",
            [
                Query(f"sum by (status) (kueue_local_queue_pending_workloads{{{ns}}})", "{{status}}"),
                Query(or_zero(f"sum(kueue_admitted_active_workloads{{{cq}}})"), "admitted"),
            ],
            description="active: queued for quota or its turn; inadmissible: Kueue tried and it does not fit "
            "until quota or the cluster changes (its Workload's conditions say which).",
        ),
        Panel(
            "Requested by waiting workloads",
            [Query(_or_zero_by(f"sum by (resource) (kueue_cluster_queue_resource_pending{{{cq}}})"), "{{resource}}")],
            description="In the units the quota counts (GPUs, or shares of one on shared pools).",
        ),
        Panel(
            "Borrowed from the cohort",
            [Query(f"clamp_min({usage} - {nominal}, 0)", "{{flavor}} {{resource}}")],
            stacked=True,
            description="Kueue's usage above the nominal quota, per flavor and resource: lent by other tenants, "
            "reclaimable by them.",
        ),
        Panel(
            f"Evictions by reason (per {EVENTS_OVER})",
            [Query(_events(f"kueue_evicted_workloads_total{{{cq}}}", "reason"), "{{reason}}")],
            description="Preempted: reclaimed by a lender or a higher priority; PodsReadyTimeout: no node in "
            "time (requeued with backoff); back to waiting either way.",
        ),
        Panel(
            "Time to admission, 90th percentile",
            [Query(f"histogram_quantile(0.9, {wait})", "p90")],
            unit="s",
        ),
    ]


def pool_karpenter_panels(plan: Plan, pool: GpuNodePool) -> list[Panel]:
    names = sorted(p.name for p in plan.pool_node_pools(pool.name))
    if not names:
        return []
    sel = f'nodepool=~"{"|".join(names)}"'
    return [
        Panel(
            f"Nodes disrupted by reason (per {EVENTS_OVER})",
            [
                Query(
                    _events(f"karpenter_nodeclaims_disrupted_total{{{sel}}}", "reason, capacity_type"),
                    "{{reason}} {{capacity_type}}",
                )
            ],
            stacked=True,
            description="spot_interrupted and instance_* come from the interruption queue; unhealthy is a repair; "
            "drifted, underutilized, empty and expired are Karpenter's own decisions.",
        ),
        Panel(
            f"Repairs by node condition (per {EVENTS_OVER})",
            [Query(_events(f"karpenter_nodeclaims_unhealthy_disrupted_total{{{sel}}}", "condition"), "{{condition}}")],
            description="Nodes Karpenter replaced because a condition stayed unhealthy (node repair).",
        ),
        Panel(
            f"Nodes launched (per {EVENTS_OVER})",
            [Query(_events(f"karpenter_nodeclaims_created_total{{{sel}}}", "nodepool"), "{{nodepool}}")],
        ),
    ]
