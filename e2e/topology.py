"""Kueue's topology-only rule, asked of the real Kueue: on a pool whose flavor names a Topology,
the tenant's job WITHOUT the placement annotation docs/tenants.md asks for is admitted only when
every flavor of the tenant's ClusterQueue names a Topology (Kueue implies a placement). `gpuplat
verify` predicts which, in its topology step; this checks the prediction."""

from __future__ import annotations

import json

from e2e import jobs
from e2e.cluster import Cluster
from e2e.report import Report
from e2e.scenarios import tenant_identity
from e2e.stack import Stack

# verify's topology step says one of these about the job without the annotation.
IMPLIED, REFUSED = "is topology-only", "supports only TopologyAwareScheduling"


def predictions(stack: Stack) -> dict[tuple[str, str, str], bool]:
    """(tenant, pool, resource) -> whether verify predicts the unannotated job is admitted."""
    found = {}
    for journey in stack.journeys:
        for step in journey["steps"]:
            if step["step"] == "topology" and step["ok"] and (IMPLIED in step["detail"] or REFUSED in step["detail"]):
                found[(journey["tenant"], journey["pool"], journey["resource"])] = IMPLIED in step["detail"]
    return found


def without_annotation(cluster: Cluster, stack: Stack, report: Report, timeout: float) -> None:
    submitted = {}
    if not predictions(stack):
        report.skip(stack.target.label, "tas-only", "no pool's flavor names a Topology: every job may omit a placement")
        return
    for (tenant, pool, resource), implied in predictions(stack).items():
        job = jobs.reference_job(tenant, pool, resource, name=f"no-placement-{pool}"[:63])  # no annotation
        refused = cluster.kubectl("create", "-f", "-", stdin=json.dumps(job), check=False, **tenant_identity(tenant))
        if refused.returncode:
            report.scenario(stack.target.label, f"tas-only-{tenant}-{pool}", False, refused.stderr.strip())
            continue
        submitted[(tenant, job["metadata"]["name"])] = (pool, implied)
    outcomes = jobs.await_outcomes(cluster, list(submitted), timeout / 3)
    for (tenant, name), (pool, implied) in submitted.items():
        outcome = outcomes[(tenant, name)]
        predicted = "admitted (placement implied)" if implied else "waits (topology-only flavor)"
        report.scenario(stack.target.label, f"tas-only-{tenant}-{pool}", outcome.admitted == implied,
                        f"a job of {tenant} on {pool} without {jobs.TOPOLOGY_ANNOTATION}: verify predicts "
                        f"{predicted}; {outcome.reason}")
        cluster.kubectl("delete", "job", name, "-n", tenant, "--wait=false", check=False)
