"""The scenarios run on one stack's cluster, each reporting what the real engines did."""

from __future__ import annotations

import json
import time
from typing import Any

from e2e import jobs
from e2e.cluster import Cluster, E2EError, wait_for
from e2e.karpenter import initialized_condition
from e2e.report import Report
from e2e.stack import Stack

TENANT_USER = "e2e-tenant-user"


def tenant_identity(tenant: str) -> dict[str, Any]:
    return {"as_user": f"{TENANT_USER}-{tenant}", "as_groups": [f"gpuplat:{tenant}", "system:authenticated"]}


def tenants(stack: Stack) -> list[str]:
    return sorted({j["tenant"] for j in stack.journeys} | {
        o["metadata"]["namespace"] for o in stack.of_type("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue")})


def journeys(cluster: Cluster, stack: Stack, report: Report, timeout: float) -> None:
    """Every journey the spec allows, each tried with the jobs e2e/expect.py sizes (e2e/journeys.py)."""
    from e2e import journeys as spec_journeys  # it builds on this module's helpers

    spec_journeys.run(cluster, stack, report, timeout)


def spot_reachable(cluster: Cluster, stack: Stack, report: Report, admitted: list[jobs.Outcome],
                   timeout: float) -> None:
    """The spot share is capacity only if a default job can be admitted onto it. A flavor the
    reference jobs did not reach (an earlier flavor had quota) is probed by a default job that
    asks for spot by its node label only, with no toleration of its own."""
    spot = sorted(f["metadata"]["name"] for f in stack.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor")
                  if f["spec"].get("nodeLabels", {}).get("karpenter.sh/capacity-type") == "spot")
    used = {flavor for outcome in admitted for flavor in outcome.flavors}
    probes, unprobed = {}, []
    for flavor in (f for f in spot if f not in used):
        probe = spot_probe(stack, flavor, f"spot-probe-{flavor}"[:63].rstrip("-"))
        if probe is None:
            unprobed.append(flavor)  # in no tenant's queue: nothing to reach it with
            continue
        tenant, job = probe
        refused = cluster.kubectl("create", "-f", "-", stdin=json.dumps(job), check=False, **tenant_identity(tenant))
        probes[flavor] = (tenant, job["metadata"]["name"], refused.stderr.strip() if refused.returncode else "")
    outcomes = jobs.await_outcomes(cluster, [(t, n) for t, n, err in probes.values() if not err], timeout)
    unreached = []
    for flavor, (tenant, name, err) in probes.items():
        outcome = outcomes.get((tenant, name))
        if err or outcome is None or flavor not in outcome.flavors or not outcome.bound:
            unreached.append(f"{flavor}: {err or (outcome.reason if outcome else 'no outcome')}")
        cluster.kubectl("delete", "job", name, "-n", tenant, "--wait=false", "--ignore-not-found", check=False)
    label = stack.target.label
    if not spot:
        report.skip(label, "spot-reachable", "the stack has no spot flavor")
        return
    reached = [f for f in spot if f not in unprobed]
    report.scenario(label, "spot-reachable", not unreached and bool(reached),
                    "; ".join(unreached) if unreached
                    else f"default jobs admitted and bound on spot flavor(s) {', '.join(reached) or 'none'}")
    if unprobed:
        report.skip(label, "spot-reachable-unprobed", f"spot flavor(s) {', '.join(unprobed)} in no queue of a tenant "
                    "the spec allows on the pool: no default job can be sent there")


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
    """A (tenant, pool, resource) whose ClusterQueue offers `flavor` and that the spec allows."""
    from e2e import expect  # it imports the compiler's front end, which this module's users need not

    allowed = {(s.tenant, s.pool, s.resource) for s in expect.slots(expect.spec_model(stack.target))}
    for queue in stack.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"):
        tenant = queue["spec"]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
        for group in queue["spec"].get("resourceGroups", []):
            if any(f["name"] == flavor for f in group["flavors"]):
                for found in sorted(allowed):
                    if found[0] == tenant and found[2] in group["coveredResources"] \
                            and flavor.endswith(f"-{found[1]}-spot"):
                        return found
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


# What refuses a privileged hostNetwork pod in a tenant namespace, in its own words: Pod Security
# (baseline namespaces), or, where a fabric tenant's namespace enforces `privileged`, the
# platform's ValidatingAdmissionPolicy with its own messages (components/kubernetes/pod_security.py).
POD_SECURITY_WORDS = 'violates PodSecurity "'
POLICY_WORDS = ("ValidatingAdmissionPolicy", "must not be privileged", "hostNetwork, hostPID and hostIPC")


def refused_by_admission(stderr: str) -> str:
    """Which admission refused, by its own words ('' when neither Pod Security nor the policy did)."""
    if POD_SECURITY_WORDS in stderr:
        return "Pod Security"
    if POLICY_WORDS[0] in stderr and any(words in stderr for words in POLICY_WORDS[1:]):
        return "the tenant admission policy"
    return ""


def pod_security(cluster: Cluster, stack: Stack, report: Report) -> None:
    """In every tenant namespace, a privileged hostNetwork pod is refused by Pod Security (or,
    in a namespace enforcing `privileged` for RDMA, by the platform's admission policy), in its
    own words: any other refusal (RBAC, a quota) is not this protection."""
    names = tenants(stack)
    if not names:
        report.skip(stack.target.label, "admission-refuses-privileged", "the stack has no tenant")
        return
    wrong, said = [], []
    for tenant in names:
        hostile = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "e2e-privileged", "namespace": tenant},
                   "spec": {"hostNetwork": True,
                            "containers": [{"name": "x", "image": "registry.k8s.io/pause:3.10.2",
                                            "securityContext": {"privileged": True}}]}}
        result = cluster.kubectl("create", "--dry-run=server", "-f", "-", stdin=json.dumps(hostile), check=False,
                                 **tenant_identity(tenant))
        # The error, not the warnings kubectl prints before it ("would violate PodSecurity" of
        # a namespace's warn level): only the refusal's own words count.
        errors = [line for line in result.stderr.splitlines() if line.startswith("Error")] or [result.stderr.strip()]
        who = refused_by_admission("\n".join(errors)) if result.returncode else ""
        if who:
            said.append(f"{tenant}: {who}: {errors[-1][-200:]}")
        elif result.returncode:
            wrong.append(f"{tenant}: refused, but not by Pod Security or the admission policy: {errors[-1][-300:]}")
        else:
            wrong.append(f"{tenant}: a privileged hostNetwork pod was admitted")
    report.scenario(stack.target.label, "admission-refuses-privileged", not wrong, "; ".join(wrong or said))


def floor(cluster: Cluster, stack: Stack, report: Report, timeout: float) -> None:
    """Each pool's floor keeps the nodes the spec asks for (`nodes.min`, e2e/expect.py) with no
    job: the emitted Deployment at that size, its placeholders ready on nodes."""
    from e2e import expect  # it imports the compiler's front end, which this module's users need not

    label = stack.target.label
    try:
        sizes = expect.floor_sizes(expect.spec_model(stack.target))
    except expect.SpecError as err:
        report.scenario(label, "capacity-floor", False, str(err))
        return
    floors = [d for d in stack.of_type("kubernetes:apps/v1:Deployment")
              if d["metadata"]["name"].startswith("capacity-floor-")]
    emitted = {d["metadata"]["labels"].get("gpuplat.dev/pool"): d for d in floors}
    for pool, (wanted, why) in sizes.items():
        scenario, deployment = f"capacity-floor-{pool}", emitted.get(pool)
        if wanted == 0:
            report.skip(label, scenario, f"the spec keeps no node of pool {pool} with no job ({why})")
            continue
        replicas = int(deployment["spec"]["replicas"]) if deployment else 0
        if replicas != wanted:
            report.scenario(label, scenario, False, f"the spec keeps {wanted} node(s) ({why}); the stack emits "
                            + (f"a floor of {replicas}" if deployment else "no floor"))
            continue
        assert deployment is not None
        name, namespace = deployment["metadata"]["name"], deployment["metadata"]["namespace"]
        try:
            wait_for(lambda n=name, ns=namespace, r=wanted: _ready_replicas(cluster, n, ns, r), timeout,
                     f"{wanted} floor placeholder(s) of pool {pool} on nodes")
            report.scenario(label, scenario, True, f"{wanted} node(s) held for pool {pool} with no job running ({why})")
        except E2EError as err:
            pods = [p for p in cluster.items("pods", namespace) if p["metadata"]["name"].startswith(name)]
            said = jobs.events_for(cluster, namespace, pods[0]["metadata"]["name"]) if pods else []
            report.scenario(label, scenario, False, f"{err}: {'; '.join(said[-2:])}; {_pool_nodes_said(cluster, pool)}"
                            f"{_karpenter_errors(cluster, pool)}")


def _karpenter_errors(cluster: Cluster, pool: str) -> str:
    """Karpenter's last distinct error lines about the pool's NodePools (its log goes with the
    cluster when the run ends, so the row keeps what explains a floor that was not placed)."""
    log = cluster.workdir / "karpenter.log"
    seen: dict[str, None] = {}
    for line in log.read_text(errors="replace").splitlines() if log.exists() else []:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("level") == "ERROR" and f'"{pool}-' in json.dumps(entry.get("NodePool", "")):
            seen.pop(said := f"{entry.get('message')}: {entry.get('error', '')}"[:200], None)
            seen[said] = None
    return f"; Karpenter's last errors for it: {' | '.join(list(seen)[-3:])}" if seen else ""


def _pool_nodes_said(cluster: Cluster, pool: str) -> str:
    """The pool's nodes by readiness and taint, for a floor that was not placed in time."""
    nodes = [n for n in cluster.items("nodes") if n["metadata"].get("labels", {}).get("gpuplat.dev/pool") == pool]
    ready = sum(any(c["type"] == "Ready" and c["status"] == "True" for c in n.get("status", {}).get("conditions", []))
                for n in nodes)
    taints: dict[str, int] = {}
    for node in nodes:
        for taint in node["spec"].get("taints") or []:
            key = f"{taint['key']}:{taint['effect']}"
            taints[key] = taints.get(key, 0) + 1
    return (f"pool {pool} has {len(nodes)} node(s), {ready} Ready; taints: "
            + (", ".join(f"{k} x{v}" for k, v in sorted(taints.items())) or "none"))


def _ready_replicas(cluster: Cluster, name: str, namespace: str, wanted: int) -> int | None:
    found = cluster.get("deployment", name, namespace) or {}
    count = int(found.get("status", {}).get("readyReplicas", 0) or 0)
    return count if count >= wanted else None
