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

Per tenant on every rail (`tenants[].fabric`, RoCE): its VFs' `minTxRate` / `maxTxRate` (the
tenant's guaranteed / peak percent of the rail's link, in Mbps), and with a `vlan` its own
segment: the VFs tagged by the PF (the pod cannot change it), its own IPPool (the rail's subnet
again: another VLAN is another broadcast domain, so the addresses do not meet). NetworkPolicies
do not reach these interfaces; the fence is the VLAN on the switches, and the admission policy
(rail_fence.py) that keeps every tenant's pods to the networks of its own namespace.

`sriov.dpdk`: the last `dpdk.vfsPerNic` VFs of each rail (`pfNames: [<pf>#first-last]`, the
operator's VF partitioning; both policies keep the PF's `numVfs`) are a resource of their own,
`dpdk_rail<i>`, with per-tenant networks `<tenant>-dpdk-rail<i>` (same VLAN and rates, no IPAM:
a DPDK application owns its addressing). The NICs are ConnectX (mlx5), whose DPDK poll-mode
driver runs over the kernel driver (bifurcated): the VFs stay `netdevice` with RDMA; vfio-pci
would leave the mlx5 PMD nothing to drive.

The operator's network-resources injector is on: a job sets only
`k8s.v1.cni.cncf.io/networks: <tenant>-rail0,<tenant>-rail1,...` and the injector adds the
`openshift.io/rdma_rail<i>` requests the NetworkAttachmentDefinitions name; on Kubernetes 1.36+
the API server adds the same requests itself (rail_requests.py).
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


def dpdk_resource(index: int) -> str:
    return f"dpdk_rail{index}"


def dpdk_policy_name(model: Platform, index: int) -> str:
    return f"{prefix(model)}-dpdk-rail{index}"


def dpdk_network_name(tenant: Tenant, index: int) -> str:
    return f"{tenant.name}-dpdk-rail{index}"


def tenant_pool_name(model: Platform, tenant: Tenant, index: int) -> str:
    return f"{prefix(model)}-{tenant.name}-rail{index}"


def segmented_tenants(model: Platform) -> list[Tenant]:
    """Fabric tenants with a VLAN of their own: their IP pools are their own too."""
    return [t for t in fabric_tenants(model) if t.fabric.vlan is not None]


def block_size(fabric: Fabric) -> int:
    assert fabric.sriov is not None
    return max(fabric.sriov.rdma_vfs, _MIN_BLOCK)


def _policy(fabric: Fabric, resource: str, pf_names: list[str]) -> dict[str, Any]:
    assert fabric.sriov is not None
    return {
        "resourceName": resource,
        "nodeSelector": {FABRIC_LABEL: "true"},
        "numVfs": fabric.sriov.vfs_per_nic,
        "nicSelector": {"vendor": MELLANOX_VENDOR, "pfNames": pf_names},
        "deviceType": "netdevice",
        "isRdma": True,
        "linkType": "ib" if fabric.transport == "infiniband" else "eth",
        "priority": 50,
    }


def sriov_policy_spec(fabric: Fabric, index: int, rail: Rail) -> dict[str, Any]:
    assert fabric.sriov is not None
    rdma = fabric.sriov.rdma_vfs
    # With DPDK VFs the RDMA policy takes the first VFs only (`<pf>#0-<last>`, VF partitioning).
    pf = rail.pf_name if fabric.sriov.dpdk is None else f"{rail.pf_name}#0-{rdma - 1}"
    return _policy(fabric, rail_resource(index), [pf])


def dpdk_policy_spec(fabric: Fabric, index: int, rail: Rail) -> dict[str, Any]:
    assert fabric.sriov is not None and fabric.sriov.dpdk is not None
    first, last = fabric.sriov.rdma_vfs, fabric.sriov.vfs_per_nic - 1
    return _policy(fabric, dpdk_resource(index), [f"{rail.pf_name}#{first}-{last}"])


def tx_rates(tenant: Tenant, fabric: Fabric) -> dict[str, int]:
    """The VF's SriovNetwork rate fields (Mbps) from the tenant's shares of the rail's link."""
    link_mbps = fabric.link_gbps * 1000
    rates: dict[str, int] = {}
    if tenant.fabric.guaranteed_percent > 0:
        rates["minTxRate"] = round(link_mbps * tenant.fabric.guaranteed_percent / 100)
    if tenant.fabric.peak_percent < 100:
        rates["maxTxRate"] = round(link_mbps * tenant.fabric.peak_percent / 100)
    return rates


def ip_pool_spec(fabric: Fabric, rail: Rail, routed: bool = True) -> dict[str, Any]:
    """`routed=False` for a tenant VLAN's pool: the rail's gateway is on the untagged segment."""
    spec: dict[str, Any] = {
        "subnet": rail.subnet,
        "perNodeBlockSize": block_size(fabric),
        "nodeSelector": fabric_node_selector(),
    }
    if routed and rail.gateway is not None:
        spec["gateway"] = rail.gateway
    return spec


def _segment(tenant: Tenant, fabric: Fabric) -> dict[str, Any]:
    if fabric.transport == "infiniband":
        return {}  # SriovIBNetwork has neither VLAN nor rates (validation keeps them off IB)
    vlan = {"vlan": tenant.fabric.vlan} if tenant.fabric.vlan is not None else {}
    return {**vlan, **tx_rates(tenant, fabric)}


def rail_network_spec(model: Platform, tenant: Tenant, index: int) -> dict[str, Any]:
    fabric = model.network.fabric
    assert fabric is not None
    pool = tenant_pool_name(model, tenant, index) if tenant.fabric.vlan is not None else rail_pool_name(model, index)
    return {
        "networkNamespace": tenant.name,
        "resourceName": rail_resource(index),
        "ipam": json.dumps({"type": "nv-ipam", "poolName": pool}),
        **_segment(tenant, fabric),
    }


def dpdk_network_spec(model: Platform, tenant: Tenant, index: int) -> dict[str, Any]:
    fabric = model.network.fabric
    assert fabric is not None
    return {"networkNamespace": tenant.name, "resourceName": dpdk_resource(index), **_segment(tenant, fabric)}


def pod_networks(tenant: Tenant, fabric: Fabric) -> str:
    """The `k8s.v1.cni.cncf.io/networks` value of a pod of `tenant` attaching every rail."""
    assert fabric.sriov is not None
    return ",".join(rail_network_name(tenant, i) for i in range(len(fabric.sriov.rails)))
