"""The plan's rails section: VFs per rail by purpose, and each fabric tenant's segment and shares."""

from __future__ import annotations

from collections.abc import Callable

from gpuplat.plan.rails import RailsPlan

Json = dict[str, object]


def rails_json(rails: RailsPlan | None) -> Json | None:
    if rails is None:
        return None
    return {
        "rails": rails.rails,
        "linkGbps": rails.link_gbps,
        "fabricNodes": rails.fabric_nodes,
        "vfsPerNic": {"rdma": rails.rdma_vfs, "dpdk": rails.dpdk_vfs},
        "hugepagesGiBPerNode": rails.hugepages_gib,
        "guaranteedPercent": round(rails.guaranteed_percent, 3),
        "tenants": [
            {
                "tenant": t.tenant,
                "isolation": t.isolation,
                "vlan": t.vlan,
                "guaranteedGbps": t.guaranteed_gbps,
                "peakGbps": t.peak_gbps,
                "networks": list(t.networks),
            }
            for t in rails.tenants
        ],
    }


def rails_text(rails: RailsPlan | None, table: Callable[..., str]) -> str | None:
    if rails is None:
        return None
    nodes = rails.fabric_nodes
    dpdk = (
        f"; DPDK {rails.dpdk_vfs} ({rails.dpdk_vfs * nodes} on {nodes} nodes), "
        f"{rails.hugepages_gib} GiB hugepages per node ({rails.hugepages_gib * nodes} GiB)"
        if rails.dpdk_vfs
        else ""
    )
    head = (
        f"{rails.rails} rails x {rails.link_gbps} Gbps; VFs per rail NIC: RDMA {rails.rdma_vfs} "
        f"({rails.rdma_vfs * nodes} on {nodes} nodes){dpdk}"
    )
    rows = [
        [
            t.tenant,
            t.isolation,
            "untagged" if t.vlan is None else str(t.vlan),
            f"{t.guaranteed_gbps:g} Gbps",
            f"{t.peak_gbps:g} Gbps",
            ", ".join(t.networks),
        ]
        for t in rails.tenants
    ]
    rows.append(["(all)", "", "", f"{rails.guaranteed_percent:g}% of a link", "", ""])
    body = table(["tenant", "isolation", "vlan", "guaranteed per VF", "peak per VF", "networks per rail"], rows)
    return f"{head}\n{body}"
