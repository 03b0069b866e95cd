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

Not run: the network-resources injector's mutation (it is not a Go module the module proxy
serves, so the suite builds no injector); the report names it.
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


def fence(cluster: Cluster, stack: Stack, report: Report) -> None:
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
    ok = not admitted and named in words and message in words
    report.scenario(label, "rail-fence-refuses-foreign-network", ok,
                    f"{tenant} naming {foreign}: {words}" if not admitted else
                    f"a pod of {tenant} naming {foreign} was admitted")
    report.skip(label, "rail-injector-mutation", "not run: the network-resources injector "
                "(github.com/k8snetworkplumbingwg/network-resources-injector) is not served by the Go module "
                "proxy, so the suite builds and runs no injector; what a pod stores after its mutation is unchecked")
