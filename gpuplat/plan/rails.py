"""Rails: what each RoCE / InfiniBand SR-IOV rail gives the tenants (provider kubernetes).

Per rail NIC: `vfsPerNic` VFs, the last `dpdk.vfsPerNic` of them DPDK VFs, the rest RDMA VFs
(components/kubernetes/_rails.py emits both). VFs are a per-rail resource any fabric tenant's pod
may take; what is the tenant's own is its segment (VLAN) and its VF's rates: guaranteed =
guaranteedPercent and peak = peakPercent of the rail's link, per VF (the SR-IOV minTxRate /
maxTxRate, in Mbps). GP277 keeps the guarantees within one link: a tenant's pods on one node
sharing one rail each get the rate, so the guarantee holds for one pod per tenant, rail and node,
the shape of a training job (one pod per node).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplat.model import Platform


@dataclass(frozen=True)
class RailTenantPlan:
    tenant: str
    isolation: str
    vlan: int | None  # None: untagged, shared with the other untagged tenants
    guaranteed_gbps: float  # per VF on each rail
    peak_gbps: float
    networks: tuple[str, ...]  # per rail: <tenant>-rail<i> (and <tenant>-dpdk-rail<i>)


@dataclass(frozen=True)
class RailsPlan:
    rails: int
    link_gbps: int
    fabric_nodes: int  # at every fabric pool's max size
    vfs_per_nic: int
    rdma_vfs: int  # per rail NIC
    dpdk_vfs: int  # per rail NIC
    hugepages_gib: int  # per fabric node, for DPDK pods
    tenants: tuple[RailTenantPlan, ...]

    @property
    def guaranteed_percent(self) -> float:
        return sum(t.guaranteed_gbps for t in self.tenants) / self.link_gbps * 100


def plan_rails(model: Platform) -> RailsPlan | None:
    fabric = model.network.fabric
    if not model.rdma_fabric or fabric is None or fabric.sriov is None:
        return None
    sriov, link = fabric.sriov, fabric.link_gbps
    fabric_pools = {p.name for p in model.fabric_pools}
    tenants: list[RailTenantPlan] = []
    for tenant in model.tenants:
        if not fabric_pools & set(tenant.pools):
            continue
        suffixes = ("rail", "dpdk-rail") if sriov.dpdk is not None else ("rail",)
        tenants.append(
            RailTenantPlan(
                tenant=tenant.name,
                isolation=tenant.isolation,
                vlan=tenant.fabric.vlan,
                guaranteed_gbps=link * tenant.fabric.guaranteed_percent / 100,
                peak_gbps=link * tenant.fabric.peak_percent / 100,
                networks=tuple(f"{tenant.name}-{s}<i>" for s in suffixes),
            )
        )
    return RailsPlan(
        rails=len(sriov.rails),
        link_gbps=link,
        fabric_nodes=sum(p.nodes.max for p in model.fabric_pools),
        vfs_per_nic=sriov.vfs_per_nic,
        rdma_vfs=sriov.rdma_vfs,
        dpdk_vfs=sriov.dpdk.vfs_per_nic if sriov.dpdk else 0,
        hugepages_gib=sriov.dpdk.hugepages_gib if sriov.dpdk else 0,
        tenants=tuple(tenants),
    )
