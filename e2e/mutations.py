"""Edits of emitted values that break a real cluster, and the real controllers catching each.

A review found edits of values the controllers read that `gpuplat verify` (the project's model)
let through, while a real cluster would break. Each edit here is made to the stack's output as
it is: the edited object goes into the running cluster (Kueue's configuration by restarting the
manager with it), a tenant does what the README tells tenants to do, and the scenario passes
only when the real engine refuses it, in its own words. What `gpuplat verify --recording` says
of the same edited recording is reported beside it. The original object is put back after each.

An edit whose object a stack does not emit (no fabric pool, no spot flavor) is a skipped row.
Only the engine's own reason counts: Kueue's message naming what the edit broke, the API
server naming the policy that denied; a refusal for any other reason is not the edit caught.
The HAMi NodeOverlay edit has its own scenario (e2e/hami.py): it needs a node to be launched.
"""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML

from e2e import expect, jobs, kueue
from e2e.cluster import Cluster, E2EError, wait_for
from e2e.report import Report
from e2e.scenarios import spot_probe, tenant_identity, tenants
from e2e.stack import Stack, verify_recording
from gpuplat.verify.admission import PSA_ENFORCE

Inputs = dict[str, Any]
FLAVOR = "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"
POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
RELEASE = "kubernetes:helm.sh/v3:Release"
RDMA_CAPABILITY = "IPC_LOCK"


@dataclass(frozen=True)
class Mutation:
    name: str
    what: str
    # The index of the recorded resource this edits, and its edited inputs; None: not emitted.
    edit: Callable[[Stack], tuple[int, Inputs] | None]
    # With the edit in the cluster: (the engine refused what a tenant does, in its words).
    probe: Callable[[Cluster, Stack, Inputs, float], tuple[bool, str]]
    # How the edited (or original) inputs reach the cluster.
    install: Callable[[Cluster, Stack, Inputs], None]


def _apply(cluster: Cluster, stack: Stack, inputs: Inputs) -> None:
    refused = cluster.apply([inputs])
    if refused:
        raise E2EError(f"the API server refused {inputs['kind']} {inputs['metadata']['name']}: {refused[0][1]}")


def _restart_kueue(cluster: Cluster, stack: Stack, inputs: Inputs) -> None:
    kueue.restart(cluster, stack, kueue.release_configuration(inputs))


def _first(stack: Stack, type_: str, predicate: Callable[[Inputs], bool]) -> tuple[int, Inputs] | None:
    for index, resource in enumerate(stack.resources):
        if resource["type"] == type_ and predicate(resource["inputs"]):
            return index, copy.deepcopy(resource["inputs"])
    return None


# -- Kueue checks every requested resource against quota -------------------------------------

def _drop_quota_check_strategy(stack: Stack) -> tuple[int, Inputs] | None:
    found = _first(stack, RELEASE, lambda r: r.get("name") == "kueue")
    if found is None:
        return None
    index, release = found
    config = kueue.release_configuration(release)
    if "quotaCheckStrategy" not in config.get("resources", {}):
        return None
    del config["resources"]["quotaCheckStrategy"]
    buffer = io.StringIO()
    YAML().dump(config, buffer)
    release["values"]["managerConfig"]["controllerManagerConfigYaml"] = buffer.getvalue()
    return index, release


def _job_waits(cluster: Cluster, tenant: str, job: dict[str, Any], timeout: float, words: tuple[str, ...]
               ) -> tuple[bool, str]:
    """Submit a tenant's job; (Kueue kept it from quota for the edit's reason, Kueue's words)
    once Kueue decided. Only Kueue's own message naming the edit's effect (every one of `words`)
    counts: another wait, or the API server refusing the job, is not this edit caught."""
    created = cluster.kubectl("create", "-f", "-", stdin=json.dumps(job), check=False, **tenant_identity(tenant))
    if created.returncode:
        return False, f"the API server refused the job, not Kueue: {created.stderr.strip()}"
    name = job["metadata"]["name"]
    try:
        def decided() -> tuple[bool, str] | None:
            reason = jobs.pending_reason(cluster, tenant, name)
            if reason is not None:
                caught = all(w in reason for w in words)
                return caught, f"Kueue: {reason}" if caught else \
                    f"Kueue holds it, but not saying {' / '.join(words)}: {reason}"
            outcome = jobs.observe(cluster, tenant, name)
            return (False, outcome.reason) if outcome.admitted else None
        return wait_for(decided, timeout, f"Kueue deciding on {tenant}/{name}")
    finally:
        cluster.kubectl("delete", "job", name, "-n", tenant, "--wait=false", "--ignore-not-found", check=False)


# Kueue's flavor assigner with BlockUndeclared (the default once quotaCheckStrategy is gone): a
# requested resource no resource group covers (the job's cpu, memory) is "unavailable".
UNDECLARED_WORDS = "unavailable in ClusterQueue"


def _reference_job_waits(cluster: Cluster, stack: Stack, inputs: Inputs, timeout: float) -> tuple[bool, str]:
    slots = expect.slots(expect.spec_model(stack.target))
    if not slots:
        raise E2EError("the spec allows no tenant a pool")
    slot = slots[0]
    job = jobs.reference_job(slot.tenant, slot.pool, slot.resource, name="edit-quota-check")
    if slot.topology:
        job["spec"]["template"]["metadata"]["annotations"] = {expect.PREFERRED_TOPOLOGY: expect.HOSTNAME}
    return _job_waits(cluster, slot.tenant, job, timeout, (UNDECLARED_WORDS,))


# -- spot flavors carry the spot toleration for default jobs ---------------------------------

def _is_spot(flavor: Inputs) -> bool:
    return flavor["spec"].get("nodeLabels", {}).get("karpenter.sh/capacity-type") == "spot"


def _spot_taints(flavor: Inputs) -> set[str]:
    return {t["key"] for t in flavor["spec"].get("nodeTaints", [])} if _is_spot(flavor) else set()


def _drop_spot_toleration(stack: Stack) -> tuple[int, Inputs] | None:
    """A spot flavor that no longer tolerates its own taint for the jobs it admits: the output
    before default jobs could reach spot."""
    def tolerates_spot(flavor: Inputs) -> bool:
        return any(t.get("key") in _spot_taints(flavor) for t in flavor["spec"].get("tolerations", []))
    found = _first(stack, FLAVOR, tolerates_spot)
    if found is None:
        return None
    index, flavor = found
    kept = [t for t in flavor["spec"]["tolerations"] if t.get("key") not in _spot_taints(flavor)]
    flavor["spec"]["tolerations"] = kept
    if not kept:
        del flavor["spec"]["tolerations"]
    return index, flavor


def _spot_job_waits(cluster: Cluster, stack: Stack, flavor: Inputs, timeout: float) -> tuple[bool, str]:
    probe = spot_probe(stack, flavor["metadata"]["name"], "edit-spot-toleration")
    if probe is None:
        raise E2EError(f"no tenant's queue offers {flavor['metadata']['name']}")
    tenant, job = probe
    # Kueue's flavor assigner: "untolerated taint {key value effect} in flavor <name>".
    return _job_waits(cluster, tenant, job, timeout, ("untolerated taint", flavor["metadata"]["name"]))


# -- the fabric tenants' admission policy allows RDMA's capability ---------------------------

def _drop_rdma_capability(stack: Stack) -> tuple[int, Inputs] | None:
    found = _first(stack, POLICY, lambda p: f"'{RDMA_CAPABILITY}'" in json.dumps(p["spec"]))
    if found is None:
        return None
    index, policy = found
    policy["spec"] = json.loads(json.dumps(policy["spec"]).replace(f", '{RDMA_CAPABILITY}'", ""))
    return index, policy


def fabric_pod(tenant: str, name: str) -> dict[str, Any]:
    """A pod as a fabric (RDMA) job writes it: IPC_LOCK added, nothing else beyond baseline."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": tenant},
            "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10.2",
                                     "securityContext": {"capabilities": {"add": [RDMA_CAPABILITY]}}}]}}


def fabric_tenant(stack: Stack) -> str | None:
    """A tenant whose namespace enforces no Pod Security level (the admission policy holds it)."""
    names = set(tenants(stack))
    for namespace in stack.of_type("kubernetes:core/v1:Namespace"):
        name = str(namespace["metadata"]["name"])
        if name in names and namespace["metadata"].get("labels", {}).get(PSA_ENFORCE) == "privileged":
            return name
    return None


def _create_fabric_pod(cluster: Cluster, tenant: str) -> tuple[bool, str]:
    """(admitted, the API server's words) for a fabric pod the tenant creates (dry run)."""
    result = cluster.kubectl("create", "--dry-run=server", "-f", "-", stdin=json.dumps(fabric_pod(tenant, "rdma")),
                             check=False, **tenant_identity(tenant))
    # The error, not the PodSecurity warnings (restricted, audited) kubectl prints before it.
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    return result.returncode == 0, (errors[-1] if errors else result.stderr.strip())[-400:]


def _fabric_pod_refused(cluster: Cluster, stack: Stack, policy: Inputs, timeout: float) -> tuple[bool, str]:
    tenant = fabric_tenant(stack)
    if tenant is None:
        raise E2EError("no tenant namespace is held by the admission policy")

    # The API server names the policy that denied: "ValidatingAdmissionPolicy '<name>' with binding".
    named = f"ValidatingAdmissionPolicy '{policy['metadata']['name']}'"

    def answer() -> tuple[bool, str] | None:
        admitted, words = _create_fabric_pod(cluster, tenant)
        if not admitted and (named not in words or (RDMA_CAPABILITY not in words and "capabilit" not in words)):
            return False, f"refused, but not by the policy for the capability: {words}"
        # The API server reads policies through an informer: an edit takes a moment to apply.
        return None if admitted else (True, words)
    try:
        return wait_for(answer, min(timeout, 30), "the edited policy taking effect")
    except E2EError:
        return False, f"a pod adding {RDMA_CAPABILITY} in {tenant} was still admitted"


MUTATIONS = (
    Mutation("kueue-quota-check-strategy", "Kueue's resources.quotaCheckStrategy dropped",
             _drop_quota_check_strategy, _reference_job_waits, _restart_kueue),
    Mutation("spot-flavor-toleration", "a spot ResourceFlavor without the spot toleration",
             _drop_spot_toleration, _spot_job_waits, _apply),
    Mutation("pod-security-ipc-lock", f"{RDMA_CAPABILITY} removed from the fabric tenants' admission policy",
             _drop_rdma_capability, _fabric_pod_refused, _apply),
)


def admits_fabric_pods(cluster: Cluster, stack: Stack, report: Report) -> None:
    """What an RDMA job's pod needs is admitted where the platform promises it."""
    tenant = fabric_tenant(stack)
    if tenant is None or _drop_rdma_capability(stack) is None:
        report.skip(stack.target.label, "admission-admits-fabric", "no tenant namespace is held by the admission "
                    f"policy that allows {RDMA_CAPABILITY} (no RDMA fabric pool)")
        return
    admitted, words = _create_fabric_pod(cluster, tenant)
    report.scenario(stack.target.label, "admission-admits-fabric", admitted,
                    f"a pod adding {RDMA_CAPABILITY} is admitted in {tenant}" if admitted else words)


def caught(cluster: Cluster, stack: Stack, report: Report, timeout: float) -> None:
    """Each breaking edit the stack's output allows, made and refused by the real controllers."""
    for mutation in MUTATIONS:
        found = mutation.edit(stack)
        if found is None:
            report.skip(stack.target.label, f"edit-caught-{mutation.name}",
                        f"{mutation.what}: the stack emits no object this edit applies to")
            continue
        index, edited = found
        original = stack.resources[index]["inputs"]
        recording = [*stack.resources[:index], {**stack.resources[index], "inputs": edited},
                     *stack.resources[index + 1:]]
        passed = [j for j in verify_recording(stack.target, recording) if not j["ok"]] == []
        verdict = "verify passes it" if passed else "verify fails it"
        scenario = f"edit-caught-{mutation.name}"
        try:
            mutation.install(cluster, stack, edited)
            refused, words = mutation.probe(cluster, stack, edited, timeout)
            engine = "the real engine refuses" if refused else "the real engine lets it through"
            report.scenario(stack.target.label, scenario, refused, f"{mutation.what}: {verdict}; {engine}: {words}")
        except E2EError as err:
            report.scenario(stack.target.label, scenario, False, f"{mutation.what}: {err}")
        finally:
            mutation.install(cluster, stack, original)
