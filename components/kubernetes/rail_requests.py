"""The rail requests a pod's network annotation implies, added by the API server itself.

Where the target's Kubernetes has MutatingAdmissionPolicy in admissionregistration.k8s.io/v1
(1.36+), a policy bound to the tenant namespaces does for the rail networks what the
network-resources injector does for any NetworkAttachmentDefinition: for a pod whose
`k8s.v1.cni.cncf.io/networks` names `[<namespace>/]<name>[@<interface>]` entries (no namespace:
the pod's), each rail network named adds its resource (`openshift.io/rdma_rail<i>`, the
`resourceName` of its SriovNetwork with the operator's prefix, which the rendered
NetworkAttachmentDefinition carries) as many times as it is named, to the first container's
requests and limits, unless a container already asks for that resource. Networks, names and
resources are known when the platform is compiled, so the policy needs no lookup.

The injector stays on beside it (docs/tenants.md says why): it covers the JSON form of the
annotation, which CEL cannot parse, and the downward-API `podnetinfo` volume. Both skip a resource
a container already has (the operator runs the injector without `--honor-resources`), so
whichever runs second finds the requests made and changes nothing: no double count.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_kubernetes as k8s

from gpuplat.model import Platform

from .._common import child_opts
from ._common import POD_CREATE, TENANT_NAMESPACES, meta, prefix
from ._rails import (
    SRIOV_RESOURCE_PREFIX,
    dpdk_network_name,
    dpdk_resource,
    fabric_tenants,
    rail_network_name,
    rail_resource,
)
from .rail_fence import NETWORKS_ANNOTATION, NETWORKS_VARIABLE

# MutatingAdmissionPolicy is GA (admissionregistration.k8s.io/v1, on by default) from this minor.
FIRST_MINOR = 36

HAS_NETWORKS = f"has(object.metadata.annotations) && '{NETWORKS_ANNOTATION}' in object.metadata.annotations"
# The comma form, as the injector reads it: entries trimmed, `@<interface>` dropped, the pod's
# namespace where an entry names none. The JSON form is the injector's alone.
SELECTIONS = (
    "variables.networks.trim().startsWith('[') ? [] : variables.networks.split(',')"
    ".map(e, e.trim()).filter(e, e != '').map(e, e.split('@')[0])"
    ".map(e, e.contains('/') ? e : request.namespace + '/' + e)"
)
# One resource per naming of a rail network (a network named twice asks for two VFs).
REQUESTED = "variables.selections.filter(s, s in variables.rails).map(s, variables.rails[s])"
_ASKED = (
    "object.spec.containers.exists(c, has(c.resources) && "
    "((has(c.resources.requests) && r in c.resources.requests) || "
    "(has(c.resources.limits) && r in c.resources.limits)))"
)
# Each resource once, unless some container already asks for it (the injector's default).
MISSING = f"variables.resources.filter(r, r in variables.requested && !({_ASKED}))"

_FIRST = "object.spec.containers[0]"
_COUNT = "string(variables.requested.filter(x, x == r).size())"


def _empty(field: str) -> str:
    return (
        f"(!has({_FIRST}.resources) || !has({_FIRST}.resources.{field}) ? "
        f"[JSONPatch{{op: 'add', path: '/spec/containers/0/resources/{field}', value: {{}}}}] : [])"
    )


def _adds(field: str) -> str:
    return (
        f"variables.missing.map(r, JSONPatch{{op: 'add', "
        f"path: '/spec/containers/0/resources/{field}/' + jsonpatch.escapeKey(r), value: {_COUNT}}})"
    )


MUTATION = (
    "variables.missing.size() == 0 ? [] : "
    f"(!has({_FIRST}.resources) ? [JSONPatch{{op: 'add', path: '/spec/containers/0/resources', value: {{}}}}] : []) + "
    f"{_empty('requests')} + {_empty('limits')} + {_adds('requests')} + {_adds('limits')}"
)


def wants_rail_requests(model: Platform) -> bool:
    fabric = model.network.fabric
    minor = int(model.target.kubernetes_version.split(".")[1])
    return minor >= FIRST_MINOR and fabric is not None and fabric.sriov is not None and bool(fabric_tenants(model))


def rail_resources(model: Platform) -> dict[str, str]:
    """`<namespace>/<network>` -> the device-plugin resource its NetworkAttachmentDefinition names."""
    fabric = model.network.fabric
    assert fabric is not None and fabric.sriov is not None
    found: dict[str, str] = {}
    for tenant in fabric_tenants(model):
        for i in range(len(fabric.sriov.rails)):
            found[f"{tenant.name}/{rail_network_name(tenant, i)}"] = f"{SRIOV_RESOURCE_PREFIX}/{rail_resource(i)}"
            if fabric.sriov.dpdk is not None:
                found[f"{tenant.name}/{dpdk_network_name(tenant, i)}"] = f"{SRIOV_RESOURCE_PREFIX}/{dpdk_resource(i)}"
    return found


def _cel_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def variables(model: Platform) -> list[k8s.admissionregistration.v1.VariableArgsDict]:
    rails = rail_resources(model)
    pairs = ", ".join(f"{_cel_string(k)}: {_cel_string(v)}" for k, v in sorted(rails.items()))
    resources = ", ".join(_cel_string(r) for r in sorted(set(rails.values())))
    return [
        {"name": "networks", "expression": NETWORKS_VARIABLE},
        {"name": "rails", "expression": "{" + pairs + "}"},
        {"name": "resources", "expression": "[" + resources + "]"},
        {"name": "selections", "expression": SELECTIONS},
        {"name": "requested", "expression": REQUESTED},
        {"name": "missing", "expression": MISSING},
    ]


def requests_policy_name(model: Platform) -> str:
    return f"{prefix(model)}-rail-requests"


def rail_requests(
    parent: pulumi.Resource, name: str, model: Platform, provider: pulumi.ProviderResource,
    depends_on: Sequence[pulumi.Resource],
) -> str:
    policy = requests_policy_name(model)
    map_ = k8s.admissionregistration.v1.MutatingAdmissionPolicy(
        f"{name}-rail-requests-policy",
        metadata=meta(policy),
        spec={
            # Evaluated in the API server: nothing to be down, so a pod never starts without its VFs.
            "failure_policy": "Fail",
            "match_constraints": POD_CREATE,
            "match_conditions": [{"name": "has-networks-annotation", "expression": HAS_NETWORKS}],
            "variables": variables(model),
            "mutations": [{"patch_type": "JSONPatch", "json_patch": {"expression": MUTATION}}],
            # Idempotent (it adds only what no container asks for): safe to run again after a webhook.
            "reinvocation_policy": "IfNeeded",
        },
        opts=child_opts(parent, provider, depends_on),
    )
    k8s.admissionregistration.v1.MutatingAdmissionPolicyBinding(
        f"{name}-rail-requests-binding",
        metadata=meta(policy),
        spec={"policy_name": policy, "match_resources": TENANT_NAMESPACES},
        opts=child_opts(parent, provider, [map_]),
    )
    return policy
