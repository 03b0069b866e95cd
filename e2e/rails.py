"""The fabric rails on a real API server: VF resources per node from the emitted node policies,
the rail fence (a tenant's pod naming another tenant's network is refused by the emitted policy,
in its words), and a pod that asks for its rail networks by annotation alone.

Each fabric node's VF resources are what the SR-IOV device plugin would advertise once the
operator applied the emitted SriovNetworkNodePolicies to it: per policy whose nodeSelector the
node's labels match (the pool labeler writes the fabric label), `<prefix>/<resourceName>` with the
VFs of each `nicSelector.pfNames` entry (its `#first-last` range, or all `numVfs`). The node's
hardware is what the spec describes: every rail's PF, a ConnectX (vendor 15b3). The prefix is the
rendered operator's RESOURCE_PREFIX. Then the real scheduler places a pod asking for a node's
whole share and leaves one asking for one VF more Pending.

The injector's mutation as the API server stores it: on Kubernetes 1.36+ the platform emits a
MutatingAdmissionPolicy doing the network-resources injector's job for the rail networks
(components/kubernetes/rail_requests.py); a tenant's pod with only the annotation is created
and read back, its first container holding `<prefix>/<resourceName>` of each named network's
SriovNetwork (once per naming) in requests and limits. The injector itself is not run (it is not
a Go module the module proxy serves, so the suite builds none).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from e2e.cluster import Cluster, E2EError, wait_for
from e2e.report import Report
from e2e.scenarios import tenant_identity, tenants
from e2e.stack import Stack

POLICY = "kubernetes:sriovnetwork.openshift.io/v1:SriovNetworkNodePolicy"
NETWORK = "kubernetes:sriovnetwork.openshift.io/v1:SriovNetwork"
VAP = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
MAP = "kubernetes:admissionregistration.k8s.io/v1:MutatingAdmissionPolicy"
NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
CONNECTX = "15b3"
PAUSE = "registry.k8s.io/pause:3.10.2"


def _vfs(entry: str, num_vfs: int) -> int:
    if "#" not in entry:
        return num_vfs
    first, last = (int(n) for n in entry.split("#", 1)[1].split("-"))
    return max(0, min(last, num_vfs - 1) - first + 1)


def vf_resources(stack: Stack, labels: Mapping[str, str], prefix: str) -> dict[str, int]:
    """What the device plugin advertises on a node with these labels, from the emitted policies."""
    found: dict[str, int] = {}
    for policy in stack.of_type(POLICY):
        spec = policy["spec"]
        selector = spec.get("nodeSelector") or {}
        if any(labels.get(k) != v for k, v in selector.items()) or spec["nicSelector"].get("vendor") != CONNECTX:
            continue
        count = sum(_vfs(entry, int(spec["numVfs"])) for entry in spec["nicSelector"].get("pfNames", []))
        name = f"{prefix}/{spec['resourceName']}"
        found[name] = found.get(name, 0) + count
    return found


def _probe(name: str, requests: Mapping[str, int]) -> dict[str, Any]:
    limits = {k: str(v) for k, v in requests.items()}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"tolerations": [{"operator": "Exists"}],
                     "containers": [{"name": "main", "image": PAUSE, "resources": {"limits": limits}}]}}


def vf_scheduling(cluster: Cluster, stack: Stack, report: Report, prefix: str, timeout: float) -> None:
    """The real scheduler sees each fabric node's VFs as the emitted policies make them."""
    label = stack.target.label
    shares = {n["metadata"]["name"]: vf_resources(stack, n["metadata"].get("labels", {}), prefix)
              for n in cluster.items("nodes")}
    shares = {node: res for node, res in shares.items() if res}
    if not stack.of_type(POLICY):
        report.skip(label, "rail-vf-resources", "no SriovNetworkNodePolicy is emitted (no SR-IOV rails)")
        return
    if not shares:
        report.scenario(label, "rail-vf-resources", False, "no node matches an emitted SriovNetworkNodePolicy")
        return
    whole = next(iter(shares.values()))
    first = min(whole, key=lambda name: ("dpdk" in name, name))  # an RDMA rail's resource first
    one_more = {**whole, first: whole[first] + 1}
    cluster.apply([_probe("e2e-rail-share", whole), _probe("e2e-rail-over", one_more)])

    def placed() -> tuple[str, str] | None:
        pods = {p["metadata"]["name"]: p for p in cluster.items("pods", "default")}
        share, over = pods.get("e2e-rail-share"), pods.get("e2e-rail-over")
        if share is None or over is None or not share["spec"].get("nodeName"):
            return None
        conditions = {c["type"]: c for c in over.get("status", {}).get("conditions", [])}
        why = conditions.get("PodScheduled", {}).get("message", "")
        return (share["spec"]["nodeName"], why) if "Insufficient" in why else None
    try:
        node, why = wait_for(placed, min(timeout, 60), "the scheduler placing the rail probes")
        ok = node in shares and f"Insufficient {first}" in why
        advertised = ", ".join(f"{k.split('/')[-1]} {v}" for k, v in sorted(whole.items()))
        detail = (f"{len(shares)} fabric node(s) each advertise {advertised} "
                  f"(from {len(stack.of_type(POLICY))} node policies); a pod asking a node's whole share ran on "
                  f"{node}; one VF more of {first}: {why[:160]}")
    except E2EError as err:
        ok, detail = False, str(err)
    report.scenario(label, "rail-vf-resources", ok, detail)
    cluster.kubectl("delete", "pod", "e2e-rail-share", "e2e-rail-over", "-n", "default", "--wait=false", check=False)


def _fence(stack: Stack) -> dict[str, Any] | None:
    return next((p for p in stack.of_type(VAP) if NETWORKS_ANNOTATION in json.dumps(p["spec"])), None)


def _networks_of(stack: Stack) -> dict[str, list[str]]:
    """Tenant namespace -> the rail networks (NetworkAttachmentDefinition names) rendered there."""
    found: dict[str, list[str]] = {}
    for network in stack.of_type(NETWORK):
        found.setdefault(network["spec"]["networkNamespace"], []).append(network["metadata"]["name"])
    return found


def _create(cluster: Cluster, tenant: str, name: str, networks: str) -> tuple[bool, str]:
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": tenant, "annotations": {NETWORKS_ANNOTATION: networks}},
           "spec": {"containers": [{"name": "main", "image": PAUSE}]}}
    result = cluster.kubectl("create", "--dry-run=server", "-f", "-", stdin=json.dumps(pod), check=False,
                             **tenant_identity(tenant))
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    return result.returncode == 0, (errors[-1] if errors else result.stderr.strip())[-400:]


def fence(cluster: Cluster, stack: Stack, report: Report, prefix: str | None = None) -> None:
    label = stack.target.label
    policy, networks = _fence(stack), _networks_of(stack)
    names = [t for t in tenants(stack) if t in networks]
    if policy is None or len(names) < 2:
        for scenario in ("rail-fence-refuses-foreign-network", "rail-annotation-only-admitted"):
            report.skip(label, scenario, "no rail fence policy or fewer than two tenants with rail networks")
        report.skip(label, "rail-injector-mutation", "no SR-IOV rails")
        return
    tenant, other = names[0], names[1]
    own = sorted(n for n in networks[tenant] if "dpdk" not in n)
    admitted, words = _create(cluster, tenant, "e2e-rails-own", ",".join(own))
    report.scenario(label, "rail-annotation-only-admitted", admitted,
                    f"a pod of {tenant} with only {NETWORKS_ANNOTATION}: {','.join(own)} (no resource request) is "
                    "admitted" if admitted else words)
    foreign = f"{other}/{min(networks[other], key=lambda name: ('dpdk' in name, name))}"
    admitted, words = _create(cluster, tenant, "e2e-rails-foreign", f"{own[0]},{foreign}")
    message = policy["spec"]["validations"][0]["message"]
    named = f"ValidatingAdmissionPolicy '{policy['metadata']['name']}'"
    refused = not admitted and named in words and message in words
    report.scenario(label, "rail-fence-refuses-foreign-network", refused,
                    f"{tenant} naming {foreign}: refused by {named}: {message}" if refused else
                    f"{tenant} naming {foreign}: refused, not by {named}: {words}" if not admitted else
                    f"a pod of {tenant} naming {foreign} was admitted")
    mutation(cluster, stack, report, prefix, tenant, refused)


def _rail_resources(stack: Stack, prefix: str) -> dict[str, str]:
    """`<namespace>/<network>` -> `<prefix>/<resourceName>`: what the operator's rendered
    NetworkAttachmentDefinition names in its resourceName annotation, the injector's input."""
    return {f"{n['spec']['networkNamespace']}/{n['metadata']['name']}": f"{prefix}/{n['spec']['resourceName']}"
            for n in stack.of_type(NETWORK)}


def _stored(cluster: Cluster, tenant: str, name: str, networks: str) -> tuple[dict[str, Any] | None, str]:
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": tenant, "annotations": {NETWORKS_ANNOTATION: networks}},
           "spec": {"containers": [{"name": "main", "image": PAUSE}, {"name": "side", "image": PAUSE}]}}
    result = cluster.kubectl("create", "-f", "-", stdin=json.dumps(pod), check=False, **tenant_identity(tenant))
    if result.returncode != 0:
        return None, result.stderr.strip()[-400:]
    return cluster.get("pods", name, tenant), ""


def mutation(cluster: Cluster, stack: Stack, report: Report, prefix: str | None, tenant: str,
             fence_refused: bool) -> None:
    """A pod with only the annotation, as the API server stores it after the emitted mutation."""
    label = stack.target.label
    policy = next((p for p in stack.of_type(MAP) if NETWORKS_ANNOTATION in json.dumps(p["spec"])), None)
    if policy is None or prefix is None:
        report.skip(label, "rail-injector-mutation", f"not run: Kubernetes {stack.kubernetes_minor} has no "
                    "MutatingAdmissionPolicy in admissionregistration.k8s.io/v1, so the platform emits none, and the "
                    "network-resources injector is not served by the Go module proxy, so the suite runs no injector"
                    if policy is None else "no SR-IOV operator release: no resource prefix")
        return
    rails = _rail_resources(stack, prefix)
    own = sorted(k.split("/", 1)[1] for k in rails if k.startswith(f"{tenant}/") and "dpdk" not in k)
    # Every RDMA rail once and the first twice (a second interface on it): two VFs of rail 0.
    named = [*own, f"{own[0]}@net{len(own)}"]
    expected: dict[str, str] = {}
    for network in named:
        resource = rails[f"{tenant}/{network.split('@')[0]}"]
        expected[resource] = str(int(expected.get(resource, "0")) + 1)
    stored, words = _stored(cluster, tenant, "e2e-rails-injected", ",".join(named))
    if stored is None:
        report.scenario(label, "rail-injector-mutation", False, f"the annotation-only pod was refused: {words}")
        return
    first, side = stored["spec"]["containers"][0], stored["spec"]["containers"][1]
    got = {key: {r: q for r, q in first.get("resources", {}).get(key, {}).items() if r.startswith(f"{prefix}/")}
           for key in ("requests", "limits")}
    untouched = not any(r.startswith(f"{prefix}/") for key in ("requests", "limits")
                        for r in side.get("resources", {}).get(key, {}))
    ok = got["requests"] == expected and got["limits"] == expected and untouched and fence_refused
    shown = ", ".join(f"{r.split('/')[-1]}={q}" for r, q in sorted(got["requests"].items()))
    matched = "matched" if got["requests"] == expected == got["limits"] else json.dumps(expected)
    report.scenario(label, "rail-injector-mutation", ok,
                    f"{policy['metadata']['name']}: the stored pod of {tenant} naming {','.join(named)} asks in its "
                    f"first container (requests = limits) {shown}; expected from the SriovNetworks "
                    f"{matched}; the second "
                    f"container {'untouched' if untouched else 'changed'}; a network of another tenant still "
                    f"{'refused by the fence' if fence_refused else 'NOT refused'}")
    cluster.kubectl("delete", "pod", "e2e-rails-injected", "-n", tenant, "--wait=false", check=False)
