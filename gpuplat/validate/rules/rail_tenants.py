"""Rules on the tenants' part of the RoCE rails (segments, bandwidth shares) and on DPDK VFs."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplat.diagnostics import Level
from gpuplat.validate.registry import Finding, rule
from gpuplat.validate.rules._common import (
    Data,
    as_map,
    is_int,
    is_number,
    listing,
    provider,
    section,
    show_number,
    tenants,
)


def _tenant_fabrics(data: Data) -> list[tuple[int, str, Data]]:
    found: list[tuple[int, str, Data]] = []
    for i, tenant in tenants(data):
        fabric = as_map(tenant.get("fabric"))
        if fabric is not None:
            found.append((i, str(tenant.get("name", f"#{i}")), fabric))
    return found


def _roce_rails(data: Data) -> bool:
    fabric = section(data, "network", "fabric")
    return (
        provider(data) == "kubernetes"
        and fabric is not None
        and fabric.get("transport") == "roce"
        and section(data, "network", "fabric", "sriov") is not None
    )


@rule(
    "GP276",
    "fabric-tenant-vlan",
    Level.ERROR,
    "A tenant's VLAN is its own segment of every rail: two tenants on one VLAN share it, unfenced. "
    "VLANs and VF rates are set on SR-IOV VFs of a RoCE fabric; SriovIBNetwork (InfiniBand) has neither field.",
    source="https://github.com/k8snetworkplumbingwg/sriov-network-operator",
    fix="Give each tenant a VLAN of its own, and set `tenants[].fabric` only with RoCE rails "
    "(`network.fabric.transport: roce` with `sriov`).",
)
def fabric_tenant_vlan(data: Data) -> Iterator[Finding]:
    fabrics = _tenant_fabrics(data)
    if fabrics and not _roce_rails(data):
        for i, name, _ in fabrics:
            yield Finding(
                ("tenants", i, "fabric"),
                f"tenant {name} sets fabric, which needs RoCE SR-IOV rails (provider kubernetes, "
                "network.fabric.transport: roce, network.fabric.sriov); InfiniBand networks carry no VLAN or rate",
                at_key=True,
            )
        return
    first: dict[int, str] = {}
    for i, name, fabric in fabrics:
        vlan = fabric.get("vlan")
        if not is_int(vlan):
            continue
        if vlan in first:
            yield Finding(("tenants", i, "fabric", "vlan"), f"VLAN {vlan} is already tenant {first[vlan]}'s")
        else:
            first[vlan] = name


@rule(
    "GP277",
    "fabric-tenant-shares",
    Level.ERROR,
    "A VF's minTxRate is a guarantee the NIC's scheduler keeps: guarantees beyond the link cannot all be met, "
    "and a cap below the guarantee contradicts it.",
    source="https://github.com/k8snetworkplumbingwg/sriov-cni",
    fix="Lower the tenants' `fabric.guaranteedPercent` until they add up to at most 100, and keep each "
    "`peakPercent` at or above its `guaranteedPercent`.",
)
def fabric_tenant_shares(data: Data) -> Iterator[Finding]:
    total = 0.0
    named: list[str] = []
    last: tuple[int, str] | None = None
    for i, name, fabric in _tenant_fabrics(data):
        guaranteed, peak = fabric.get("guaranteedPercent", 0), fabric.get("peakPercent", 100)
        if not is_number(guaranteed) or not is_number(peak):
            continue
        if peak < guaranteed:
            yield Finding(
                ("tenants", i, "fabric", "peakPercent"),
                f"tenant {name} peaks at {show_number(peak)}% of a rail but is guaranteed {show_number(guaranteed)}%",
            )
        if guaranteed > 0:
            total += guaranteed
            named.append(f"{name} {show_number(guaranteed)}%")
            last = (i, name)
    if total > 100 and last is not None:
        yield Finding(
            ("tenants", last[0], "fabric", "guaranteedPercent"),
            f"the tenants' rail guarantees add up to {show_number(total)}% ({listing(named)}); at most 100% of a "
            "link can be guaranteed",
        )


@rule(
    "GP278",
    "sriov-dpdk-support",
    Level.ERROR,
    "The rails' ConnectX NICs run DPDK through the mlx5 poll-mode driver, which drives Ethernet ports only, "
    "and DPDK VFs are carved out of the rail's VFs.",
    source="https://doc.dpdk.org/guides/nics/mlx5.html",
    fix="Use `sriov.dpdk` only with `transport: roce`, with `dpdk.vfsPerNic` below `sriov.vfsPerNic`.",
)
def sriov_dpdk_support(data: Data) -> Iterator[Finding]:
    sriov = section(data, "network", "fabric", "sriov")
    dpdk = as_map(sriov.get("dpdk")) if sriov is not None else None
    if sriov is None or dpdk is None:
        return
    path = ("network", "fabric", "sriov", "dpdk")
    transport = (section(data, "network", "fabric") or {}).get("transport")
    if transport != "roce":
        yield Finding(path, f"DPDK VFs need an Ethernet (roce) fabric; the mlx5 driver has no DPDK on {transport}",
                      at_key=True)
    vfs, dpdk_vfs = sriov.get("vfsPerNic"), dpdk.get("vfsPerNic")
    if is_int(vfs) and is_int(dpdk_vfs) and dpdk_vfs >= vfs:
        yield Finding((*path, "vfsPerNic"), f"{dpdk_vfs} DPDK VFs of {vfs} per NIC leave none for RDMA; use at most "
                      f"{vfs - 1}")


@rule(
    "GP279",
    "sriov-dpdk-hugepages",
    Level.ERROR,
    "Hugepages are reserved at boot and never reclaimed: memory they take is gone for the GPU jobs' pinned "
    "host buffers, page cache and the kubelet, so they may take at most half the node.",
    source="https://kubernetes.io/docs/tasks/manage-hugepages/scheduling-hugepages/",
    fix="Lower `sriov.dpdk.hugepagesGiB` to at most half of `nodeMemoryGiB`.",
)
def sriov_dpdk_hugepages(data: Data) -> Iterator[Finding]:
    dpdk = section(data, "network", "fabric", "sriov", "dpdk")
    pages, memory = (dpdk.get("hugepagesGiB"), dpdk.get("nodeMemoryGiB")) if dpdk is not None else (None, None)
    if is_int(pages) and is_int(memory) and pages * 2 > memory:
        yield Finding(
            ("network", "fabric", "sriov", "dpdk", "hugepagesGiB"),
            f"{pages} GiB of hugepages on a node of {memory} GiB; use at most {memory // 2}",
        )
