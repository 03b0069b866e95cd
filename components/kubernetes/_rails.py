"""What a pod needs to attach one RDMA virtual function of each fabric rail (provider kubernetes).

A rail is one fabric NIC of every fabric node (rail i = `network.fabric.sriov.rails[i]`, cabled
to the same leaf plane on every node). Per rail:
- one SriovNetworkNodePolicy: `vfsPerNic` RDMA VFs on that NIC only (`nicSelector.pfNames`, never
  the host's other Mellanox ports), advertised as its own resource `openshift.io/rdma_rail<i>`.
  One resource per rail lets a pod ask for one VF of each rail (or of the rails it needs), and
  the kubelet's topology manager can keep those VFs on the NUMA nodes of the pod's GPUs;
- one NVIDIA IPAM IPPool over the rail's subnet, handing each fabric node a block of
  `max(vfsPerNic, 2)` addresses (nv-ipam's smallest block is 2). nv-ipam, not whereabouts: the
  network operator release the platform pins (26.4.1) installs nv-ipam from the NicClusterPolicy
  and, unlike 25.x, has no whereabouts option there any more (whereabouts would be one more
  release to run); per-node blocks also mean no cluster-wide lock per pod start. Its IPPool
  CRD comes from the operator's nv-ipam state, not from Helm;
- per tenant that may run on a fabric pool, a SriovNetwork (SriovIBNetwork on InfiniBand)
  `<tenant>-rail<i>`: the operator renders it into a NetworkAttachmentDefinition of that name in
  the tenant's namespace. SR-IOV operator 1.6.0 reconciles networks only in its own namespace, so
  the names carry the tenant to stay unique there.

NetworkPolicies do not reach these secondary interfaces: tenants on a rail share its subnet
(fencing them needs per-tenant VLANs / partitions on the switches, which the spec lacks).

A job then sets `k8s.v1.cni.cncf.io/networks: <tenant>-rail0,<tenant>-rail1,...` and requests
`openshift.io/rdma_rail<i>: 1` for each rail (the operator's resource injector is off, so the
request is the pod's own).
"""

from __future__ import annotations

import json
from typing import Any

from components.conventions import FABRIC_LABEL
from gpuplat.model import Fabric, Platform, Rail, Tenant

from ._common import prefix

SRIOV_API = "sriovnetwork.openshift.io/v1"
NV_IPAM_API = "nv-ipam.nvidia.com/v1alpha1"
# The standalone SR-IOV chart's default `operator.resourcePrefix`.
SRIOV_RESOURCE_PREFIX = "openshift.io"
MELLANOX_VENDOR = "15b3"
# nv-ipam refuses an IPPool whose perNodeBlockSize is below 2.
_MIN_BLOCK = 2


def fabric_node_selector() -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchExpressions": [{"key": FABRIC_LABEL, "operator": "In", "values": ["true"]}]}]}


def rail_resource(index: int) -> str:
    # The operator's webhook accepts only [A-Za-z0-9_] in a resource name.
    return f"rdma_rail{index}"


def rail_policy_name(model: Platform, index: int) -> str:
    return f"{prefix(model)}-rail{index}"


def rail_pool_name(model: Platform, index: int) -> str:
    return f"{prefix(model)}-rail{index}"


def rail_network_name(tenant: Tenant, index: int) -> str:
    return f"{tenant.name}-rail{index}"


def rail_network_kind(fabric: Fabric) -> str:
    return "SriovIBNetwork" if fabric.transport == "infiniband" else "SriovNetwork"


def fabric_tenants(model: Platform) -> list[Tenant]:
    """Tenants allowed on at least one fabric pool: their namespaces get the rail networks."""
    fabric = {p.name for p in model.fabric_pools}
    return [t for t in model.tenants if fabric & set(t.pools)]


def block_size(fabric: Fabric) -> int:
    assert fabric.sriov is not None
    return max(fabric.sriov.vfs_per_nic, _MIN_BLOCK)


def sriov_policy_spec(fabric: Fabric, index: int, rail: Rail) -> dict[str, Any]:
    assert fabric.sriov is not None
    return {
        "resourceName": rail_resource(index),
        "nodeSelector": {FABRIC_LABEL: "true"},
        "numVfs": fabric.sriov.vfs_per_nic,
        "nicSelector": {"vendor": MELLANOX_VENDOR, "pfNames": [rail.pf_name]},
        "deviceType": "netdevice",
        "isRdma": True,
        "linkType": "ib" if fabric.transport == "infiniband" else "eth",
        "priority": 50,
    }


def ip_pool_spec(fabric: Fabric, rail: Rail) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "subnet": rail.subnet,
        "perNodeBlockSize": block_size(fabric),
        "nodeSelector": fabric_node_selector(),
    }
    if rail.gateway is not None:
        spec["gateway"] = rail.gateway
    return spec


def rail_network_spec(model: Platform, tenant: Tenant, index: int) -> dict[str, Any]:
    return {
        "networkNamespace": tenant.name,
        "resourceName": rail_resource(index),
        "ipam": json.dumps({"type": "nv-ipam", "poolName": rail_pool_name(model, index)}),
    }


def pod_networks(tenant: Tenant, fabric: Fabric) -> str:
    """The `k8s.v1.cni.cncf.io/networks` value of a pod of `tenant` attaching every rail."""
    assert fabric.sriov is not None
    return ",".join(rail_network_name(tenant, i) for i in range(len(fabric.sriov.rails)))
