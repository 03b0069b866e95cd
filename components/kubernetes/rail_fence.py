"""The rail fence: a tenant's pods attach only the secondary networks of their own namespace.

Each fabric tenant's rail networks are NetworkAttachmentDefinitions in its own namespace (the SR-IOV
operator renders them there, _rails.py), and a tenant with a `vlan` has only tagged ones. Multus
also resolves `<namespace>/<name>` in a pod's `k8s.v1.cni.cncf.io/networks`, so without this a
pod could name another tenant's network and join its VLAN. A ValidatingAdmissionPolicy bound to
the tenant namespaces admits a pod whose every entry names no namespace or its own. The JSON form
of the annotation cannot be parsed in CEL: it is admitted only when it names no namespace at all.
The network-resources injector (a mutating webhook) runs before this, so it cannot add a network.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi

from gpuplat.model import Platform

from ._common import deny_tenant_pods, prefix

NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"

NETWORKS_VARIABLE = (
    f"has(object.metadata.annotations) && '{NETWORKS_ANNOTATION}' in object.metadata.annotations ? "
    f"object.metadata.annotations['{NETWORKS_ANNOTATION}'] : ''"
)
FENCE_EXPRESSION = (
    "variables.networks.trim().startsWith('[') ? !variables.networks.contains('\"namespace\"') : "
    "variables.networks.split(',').all(entry, !entry.contains('/') || "
    "entry.trim().startsWith(request.namespace + '/'))"
)


def fence_policy_name(model: Platform) -> str:
    return f"{prefix(model)}-tenant-networks"


def fence_message(model: Platform) -> str:
    return (
        f"a tenant's pods may attach only the networks of their own namespace ({NETWORKS_ANNOTATION} "
        "entries without a namespace, or naming their own)"
    )


def rail_fence(
    parent: pulumi.Resource, name: str, model: Platform, provider: pulumi.ProviderResource,
    depends_on: Sequence[pulumi.Resource],
) -> str:
    policy = fence_policy_name(model)
    deny_tenant_pods(
        parent, f"{name}-fence", policy, provider, depends_on,
        variables=[{"name": "networks", "expression": NETWORKS_VARIABLE}],
        validations=[{"expression": FENCE_EXPRESSION, "message": fence_message(model)}],
    )
    return policy
