"""The scenarios run on one stack's cluster, each reporting what the real engines did."""

from __future__ import annotations

import json
import time
from typing import Any

from e2e import jobs, quota
from e2e.cluster import Cluster, E2EError, wait_for
from e2e.karpenter import initialized_condition
from e2e.report import Journey, Report
from e2e.stack import Stack

TENANT_USER = "e2e-tenant-user"


def tenant_identity(tenant: str) -> dict[str, Any]:
    return {"as_user": f"{TENANT_USER}-{tenant}", "as_groups": [f"gpuplat:{tenant}", "system:authenticated"]}


def tenants(stack: Stack) -> list[str]:
    return sorted({j["tenant"] for j in stack.journeys} | {
        o["metadata"]["namespace"] for o in stack.of_type("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue")})


def journeys(cluster: Cluster, stack: Stack, report: Report, timeout: float) -> None:
    """Each tenant submits one reference job per pool and resource verify follows."""
    submitted: dict[tuple[str, str], dict[str, Any]] = {}
    label = stack.target.label
    for journey in stack.journeys:
        job = jobs.reference_job(journey["tenant"], journey["pool"], journey["resource"],
                                 topology_level=topology_level(stack, journey["pool"]))
        refused = cluster.kubectl("create", "-f", "-", stdin=json.dumps(job), check=False,
                                  **tenant_identity(journey["tenant"]))
        key = (journey["tenant"], job["metadata"]["name"])
        submitted[key] = journey
        if refused.returncode != 0:
            journey["refused"] = refused.stderr.strip()
    outcomes = jobs.await_outcomes(cluster, [k for k, j in submitted.items() if "refused" not in j], timeout)
    spot_reachable(cluster, stack, report, [o for o in outcomes.values() if o.admitted], timeout)
    for key, journey in submitted.items():
        predicted = "runs" if journey["ok"] else "blocked"
        if "refused" in journey:
            actual, reason = "blocked", f"API server refused the job: {journey['refused']}"
        else:
            outcome = outcomes[key]
            actual, reason = outcome.actual, outcome.reason
        report.journey(Journey(label, journey["tenant"], journey["pool"], journey["resource"],
                               predicted, actual, reason))


def spot_reachable(cluster: Cluster, stack: Stack, report: Report, admitted: list[jobs.Outcome],
                   timeout: float) -> None:
    """The spot share is capacity only if a default job can be admitted onto it. A flavor the
    reference jobs did not reach (an earlier flavor had quota) is probed by a default job that
    asks for spot by its node label only, with no toleration of its own."""
    spot = sorted(f["metadata"]["name"] for f in stack.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor")
                  if f["spec"].get("nodeLabels", {}).get("karpenter.sh/capacity-type") == "spot")
    used = {flavor for outcome in admitted for flavor in outcome.flavors}
    probes = {}
    for flavor in (f for f in spot if f not in used):
        probe = spot_probe(stack, flavor, f"spot-probe-{flavor}"[:63].rstrip("-"))
        if probe is None:
            continue  # in no tenant's queue: nothing to reach it with
        tenant, job = probe
        refused = cluster.kubectl("create", "-f", "-", stdin=json.dumps(job), check=False, **tenant_identity(tenant))
        probes[flavor] = (tenant, job["metadata"]["name"], refused.stderr.strip() if refused.returncode else "")
    outcomes = jobs.await_outcomes(cluster, [(t, n) for t, n, err in probes.values() if not err], timeout)
    unreached = []
    for flavor, (tenant, name, err) in probes.items():
        outcome = outcomes.get((tenant, name))
        if err or outcome is None or flavor not in outcome.flavors or not outcome.bound:
            unreached.append(f"{flavor}: {err or (outcome.reason if outcome else 'no outcome')}")
    if spot:
        report.scenario(stack.target.label, "spot-reachable", not unreached,
                        "; ".join(unreached) if unreached
                        else f"default jobs admitted and bound on every spot flavor ({', '.join(spot)})")


def spot_probe(stack: Stack, flavor: str, name: str) -> tuple[str, dict[str, Any]] | None:
    """(tenant, job): a default job of a tenant whose queue offers the spot `flavor`, asking for
    spot by its node label only, with no toleration of its own."""
    found = _user_of(stack, flavor)
    if found is None:
        return None
    tenant, pool, resource = found
    job = jobs.reference_job(tenant, pool, resource, name=name)
    job["spec"]["template"]["spec"]["nodeSelector"]["karpenter.sh/capacity-type"] = "spot"
    return tenant, job


def _user_of(stack: Stack, flavor: str) -> tuple[str, str, str] | None:
    """A (tenant, pool, resource) whose ClusterQueue offers `flavor` and that verify follows."""
    for queue in stack.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"):
        tenant = queue["spec"]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
        for group in queue["spec"].get("resourceGroups", []):
            if any(f["name"] == flavor for f in group["flavors"]):
                for journey in stack.journeys:
                    if journey["tenant"] == tenant and journey["resource"] in group["coveredResources"] \
                            and flavor.endswith(f"-{journey['pool']}-spot"):
                        return tenant, journey["pool"], journey["resource"]
    return None


def topology_level(stack: Stack, pool: str) -> str | None:
    """The host level of the Topology a pool's flavors name, when they are topology-aware."""
    for flavor in stack.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"):
        labels = flavor["spec"].get("nodeLabels", {})
        name = flavor["spec"].get("topologyName")
        if labels.get("gpuplat.dev/pool") == pool and name:
            for topology in stack.of_type("kubernetes:kueue.x-k8s.io/v1beta2:Topology"):
                if topology["metadata"]["name"] == name:
                    return str(topology["spec"]["levels"][-1]["nodeLabel"])
    return None


def nodeclaims_initialized(cluster: Cluster, stack: Stack, report: Report, timeout: float) -> None:
    """Karpenter counts a node as its own only once initialized: only then can it consolidate it.
    A claim the scenario before just launched is still booting, so the claims get `timeout` to
    initialize; one still waiting then never will."""
    deadline = time.monotonic() + timeout
    while True:
        claims = cluster.items("nodeclaims.karpenter.sh")
        stuck = []
        for claim in claims:
            initialized = initialized_condition(claim)
            if initialized.get("status") != "True":
                nodepool = claim["metadata"].get("labels", {}).get("karpenter.sh/nodepool")
                why = initialized.get("message") or initialized.get("reason") or "no Initialized condition"
                stuck.append(f"{claim['metadata']['name']} ({nodepool}): {why}")
        if not stuck or time.monotonic() > deadline:
            break
        time.sleep(2.0)
    report.scenario(stack.target.label, "nodeclaims-initialized", not stuck and bool(claims),
                    "; ".join(stuck) if stuck else f"{len(claims)} NodeClaim(s) initialized")


def isolation(cluster: Cluster, stack: Stack, report: Report) -> None:
    """A tenant's group may create work in its namespace and nowhere else."""
    names = tenants(stack)
    wrong = []
    for tenant in names:
        for namespace in names:
            answer = cluster.kubectl("auth", "can-i", "create", "jobs.batch", "-n", namespace, check=False,
                                     **tenant_identity(tenant)).stdout.strip()
            if (answer == "yes") != (namespace == tenant):
                wrong.append(f"{tenant} in {namespace}: {answer}")
        for verb, resource in (("create", "clusterqueues.kueue.x-k8s.io"), ("patch", "resourcequotas"),
                               ("create", "priorityclasses")):
            answer = cluster.kubectl("auth", "can-i", verb, resource, "-n", tenant, check=False,
                                     **tenant_identity(tenant)).stdout.strip()
            if answer == "yes":
                wrong.append(f"{tenant} may {verb} {resource}")
    report.scenario(stack.target.label, "tenant-isolation", not wrong,
                    "; ".join(wrong) or f"{len(names)} tenant(s): own namespace only")


def pod_security(cluster: Cluster, stack: Stack, report: Report) -> None:
    """What admission must refuse in a tenant namespace, refused by the real API server."""
    names = tenants(stack)
    if not names:
        return
    tenant = names[0]
    hostile = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "e2e-privileged", "namespace": tenant},
               "spec": {"hostNetwork": True, "containers": [{"name": "x", "image": "registry.k8s.io/pause:3.10.2",
                                                             "securityContext": {"privileged": True}}]}}
    result = cluster.kubectl("create", "--dry-run=server", "-f", "-", stdin=json.dumps(hostile), check=False,
                             **tenant_identity(tenant))
    refused = result.returncode != 0 and ("forbidden" in result.stderr.lower() or "denied" in result.stderr.lower())
    report.scenario(stack.target.label, "admission-refuses-privileged", refused,
                    result.stderr.strip()[-300:] if refused else "a privileged hostNetwork pod was admitted")


def floor(cluster: Cluster, stack: Stack, report: Report, timeout: float) -> None:
    """`nodes.min` nodes stand with no job; the floor raised as KEDA would adds nodes."""
    for deployment in stack.of_type("kubernetes:apps/v1:Deployment"):
        name = deployment["metadata"]["name"]
        if not name.startswith("capacity-floor-"):
            continue
        pool, namespace = deployment["metadata"]["labels"]["gpuplat.dev/pool"], deployment["metadata"]["namespace"]
        replicas = int(deployment["spec"]["replicas"])
        if replicas == 0:
            continue

        try:
            wait_for(lambda n=name, ns=namespace, r=replicas: _ready_replicas(cluster, n, ns, r), timeout,
                     f"{replicas} floor placeholder(s) of pool {pool} on nodes")
            report.scenario(stack.target.label, f"capacity-floor-{pool}", True,
                            f"{replicas} node(s) held for pool {pool} with no job running")
        except E2EError as err:
            pods = [p for p in cluster.items("pods", namespace) if p["metadata"]["name"].startswith(name)]
            said = jobs.events_for(cluster, namespace, pods[0]["metadata"]["name"]) if pods else []
            report.scenario(stack.target.label, f"capacity-floor-{pool}", False, f"{err}: {'; '.join(said[-2:])}")


def _ready_replicas(cluster: Cluster, name: str, namespace: str, wanted: int) -> int | None:
    found = cluster.get("deployment", name, namespace) or {}
    count = int(found.get("status", {}).get("readyReplicas", 0) or 0)
    return count if count >= wanted else None


def quota_waits(cluster: Cluster, stack: Stack, report: Report, timeout: float) -> None:
    """A job asking for one unit more than its tenant can hold in any single flavor of the pool
    (Kueue gives a pod set one flavor: nominal + what it may borrow there) is held by Kueue."""
    queues = stack.of_type(quota.CLUSTER_QUEUE)
    by_tenant = {quota.tenant_of(q): q for q in queues}
    for journey in stack.journeys[:1]:
        tenant, pool, resource = journey["tenant"], journey["pool"], journey["resource"]
        if tenant not in by_tenant:
            continue
        ceiling = quota.pool_ceiling(queues, by_tenant[tenant], stack.of_type(quota.FLAVOR), pool, resource)
        if ceiling is None:
            continue
        job = jobs.reference_job(tenant, pool, resource, name="over-quota", topology_level=topology_level(stack, pool))
        job["spec"]["parallelism"] = job["spec"]["completions"] = ceiling + 1
        refused = cluster.kubectl("create", "-f", "-", stdin=json.dumps(job), check=False, **tenant_identity(tenant))
        if refused.returncode != 0:
            report.scenario(stack.target.label, "quota-waits", False, f"job refused: {refused.stderr.strip()}")
            continue
        outcome = wait_for(lambda t=tenant: _reserved_or_held(cluster, t), timeout, "Kueue's verdict on over-quota")
        held = not outcome.admitted
        report.scenario(stack.target.label, "quota-waits", held,
                        f"{ceiling + 1} x {resource} for {tenant} (ceiling {ceiling}): {outcome.reason}")
        cluster.kubectl("delete", "job", "over-quota", "-n", tenant, "--wait=false", check=False)


def _reserved_or_held(cluster: Cluster, namespace: str) -> jobs.Outcome | None:
    outcome = jobs.observe(cluster, namespace, "over-quota")
    return outcome if outcome.admitted or "quota" in outcome.reason.lower() else None
