"""The work pods of the autoscaling loop: on aws a pool whose floor may be zero has no GPU node,
so no series, and no data means no change; one tenant's reference pod is run there first (Kueue
admits it, Karpenter launches its node)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from e2e import jobs
from e2e.cluster import Cluster, E2EError, wait_for
from e2e.scenarios import tenant_identity
from e2e.stack import Stack

if TYPE_CHECKING:
    from e2e.floor import Watch

PER_LAUNCH = 10.0  # seconds allowed per node to launch, beyond the suite's timeout
WORK_RECREATIONS = 3


def _work_pod(stack: Stack, pool: str) -> tuple[str, dict[str, Any]] | None:
    """A tenant's reference pod for the pool (a plain pod, so it runs until deleted)."""
    for journey in stack.journeys:
        if journey["pool"] == pool and journey["ok"]:
            job = jobs.reference_job(journey["tenant"], pool, journey["resource"], name=f"loop-work-{pool}")
            template = job["spec"]["template"]
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": job["metadata"]["name"], "namespace": journey["tenant"],
                                "labels": dict(template["metadata"]["labels"])},
                   "spec": {**template["spec"], "restartPolicy": "Never"}}
            return journey["tenant"], pod
    return None


def start_work(cluster: Cluster, stack: Stack, watches: list[Watch], timeout: float) -> None:
    """On aws, run one tenant pod on every pool whose floor may be zero: its node and devices are
    the pool's only series (nodes left from earlier scenarios are consolidated away now)."""
    for watch in watches:
        if stack.provider != "aws" or watch.low > 0:
            continue
        found = _work_pod(stack, watch.pool)
        if found is None:
            watch.failure = f"pool {watch.pool} may have no GPU node and no tenant may run there: nothing to measure"
            continue
        tenant, pod = found
        refused = _create_work(cluster, tenant, pod)
        if refused:
            watch.failure = f"the work pod for pool {watch.pool} was refused: {refused}"
            continue
        watch.work = (tenant, pod["metadata"]["name"])
        watch.work_pod = pod
        watch.work_resource = next(iter(pod["spec"]["containers"][0]["resources"]["limits"]))

    waiting = [w for w in watches if w.work]
    if waiting:
        try:
            wait_for(lambda: work_running(cluster, watches), timeout + PER_LAUNCH * len(waiting),
                     "the work pods running on their pools' new nodes")
        except E2EError as err:
            for watch in waiting:
                if not watch.work_running and watch.work is not None:
                    said = jobs.events_for(cluster, *watch.work)
                    watch.failure = f"{err}: {'; '.join(said[-2:])}"


def work_running(cluster: Cluster, watches: list[Watch]) -> bool | None:
    """True once every work pod runs (each watch's `work_running` says whose does); a work pod
    that is gone is created again."""
    for watch in watches:
        if watch.work is None:
            continue
        pod = cluster.get("pod", watch.work[1], watch.work[0]) or {}
        if not pod and watch.work_recreated < WORK_RECREATIONS:
            # Karpenter may evict it from a leftover node it had already found empty (the coverage
            # run of 2026-12-06): a tenant's Job would get a new pod, and so does the suite.
            watch.work_recreated += 1
            _create_work(cluster, watch.work[0], watch.work_pod)
        terminating = bool(pod.get("metadata", {}).get("deletionTimestamp"))
        watch.work_running = pod.get("status", {}).get("phase") == "Running" and not terminating
    return True if all(w.work_running for w in watches if w.work is not None) else None


def _create_work(cluster: Cluster, tenant: str, pod: dict[str, Any]) -> str:
    """What the API server said when it refused the pod, or ""."""
    result = cluster.kubectl("create", "-f", "-", stdin=json.dumps(pod), check=False, **tenant_identity(tenant))
    return result.stderr.strip()[-300:] if result.returncode != 0 else ""


def stop_work(cluster: Cluster, watches: list[Watch]) -> None:
    for watch in watches:
        if watch.work is not None:
            cluster.kubectl("delete", "pod", watch.work[1], "-n", watch.work[0], "--wait=false", check=False)
