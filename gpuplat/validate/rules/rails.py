"""Rules on the fabric as an existing cluster wires it: SR-IOV rails and switch-level labels."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from gpuplat.diagnostics import Level
from gpuplat.validate.registry import Finding, rule
from gpuplat.validate.rules._common import (
    Data,
    as_list,
    as_map,
    as_str,
    is_int,
    listing,
    pool_gpu,
    pool_name,
    pools,
    provider,
    repeats,
    section,
)

HOST_LABEL = "kubernetes.io/hostname"


def _rails(data: Data) -> list[tuple[int, Data]]:
    sriov = section(data, "network", "fabric", "sriov")
    if sriov is None:
        return []
    return [(i, rail) for i, item in enumerate(as_list(sriov.get("rails"))) if (rail := as_map(item)) is not None]


def _rail_path(index: int, key: str) -> tuple[str | int, ...]:
    return ("network", "fabric", "sriov", "rails", index, key)


def _subnet(rail: Data) -> ipaddress.IPv4Network | None:
    cidr = as_str(rail.get("subnet"))
    try:
        return ipaddress.IPv4Network(cidr, strict=False) if cidr is not None else None
    except ValueError:
        return None  # the schema pattern reports it


def _fabric_nodes(data: Data) -> int:
    total = 0
    for _, pool in pools(data):
        nodes = as_map(pool.get("nodes"))
        top = nodes.get("max") if nodes is not None else None
        if pool.get("fabric") is True and is_int(top):
            total += top
    return total


@rule(
    "GP271",
    "sriov-rails-per-node",
    Level.ERROR,
    "The fabric plan counts nicsPerNode ports per node and SR-IOV configures exactly the listed rails, "
    "so both must describe the same NICs.",
    fix=(
        "List one rail per fabric NIC in `network.fabric.sriov.rails`, or set the pool's `nicsPerNode` to their "
        "number."
    ),
)
def sriov_rails_per_node(data: Data) -> Iterator[Finding]:
    rails = _rails(data)
    if provider(data) != "kubernetes" or not rails:
        return
    for i, pool in pools(data):
        if pool.get("fabric") is not True:
            continue
        nics = pool.get("nicsPerNode")
        if nics is None:
            gpu = pool_gpu(data, pool)
            nics = gpu.count if gpu is not None else None
        if is_int(nics) and nics != len(rails):
            yield Finding(
                ("gpuNodePools", i, "nicsPerNode"),
                f"pool {pool_name(pool, i)} has {nics} fabric NICs per node but network.fabric.sriov.rails lists "
                f"{len(rails)}; list one rail per fabric NIC, or set nicsPerNode: {len(rails)}",
            )


@rule(
    "GP272",
    "sriov-rail-nic-unique",
    Level.ERROR,
    "One NIC carries one rail: two rails on one physical function would be two policies setting its VFs.",
    source="https://github.com/k8snetworkplumbingwg/sriov-network-operator",
    fix="Give each rail its own NIC (`network.fabric.sriov.rails[].pfName`).",
)
def sriov_rail_nic_unique(data: Data) -> Iterator[Finding]:
    for i, name, first in repeats(_rails(data), "pfName"):
        yield Finding(_rail_path(i, "pfName"), f"{name} is already rail {first}; each rail is its own NIC")


@rule(
    "GP273",
    "sriov-rail-subnet",
    Level.ERROR,
    "NVIDIA IPAM hands out a rail's addresses from its subnet; overlapping rails would give two pods one "
    "address, and a gateway must be a host address inside the subnet.",
    source="https://github.com/Mellanox/nvidia-k8s-ipam",
    fix="Give each rail a `subnet` of its own, and a `gateway` that is a host address inside it.",
)
def sriov_rail_subnet(data: Data) -> Iterator[Finding]:
    previous: list[tuple[int, ipaddress.IPv4Network]] = []
    for i, rail in _rails(data):
        subnet = _subnet(rail)
        if subnet is None:
            continue
        if str(subnet) != rail.get("subnet"):
            yield Finding(_rail_path(i, "subnet"), f"subnet {rail.get('subnet')} has host bits set; write {subnet}")
        clash = [j for j, other in previous if other.overlaps(subnet)]
        if clash:
            yield Finding(_rail_path(i, "subnet"), f"subnet {subnet} overlaps rail {listing(clash)}")
        previous.append((i, subnet))
        gateway = as_str(rail.get("gateway"))
        if gateway is not None and not _host_of(gateway, subnet):
            yield Finding(
                _rail_path(i, "gateway"),
                f"gateway {gateway} is not a host address of {subnet}",
            )


def _host_of(address: str, subnet: ipaddress.IPv4Network) -> bool:
    try:
        ip = ipaddress.IPv4Address(address)
    except ValueError:
        return True  # the schema pattern reports it
    return ip in subnet and ip not in (subnet.network_address, subnet.broadcast_address)


@rule(
    "GP274",
    "sriov-rail-subnet-size",
    Level.ERROR,
    "Each fabric node takes a block of vfsPerNic (at least 2) addresses of every rail's subnet (NVIDIA IPAM "
    "perNodeBlockSize); "
    "a node left without a block cannot attach pods to the rail.",
    source="https://github.com/Mellanox/nvidia-k8s-ipam",
    fix="Give the rail's `subnet` a shorter prefix (the message names the one that fits).",
)
def sriov_rail_subnet_size(data: Data) -> Iterator[Finding]:
    sriov = section(data, "network", "fabric", "sriov")
    vfs = sriov.get("vfsPerNic") if sriov is not None else None
    nodes = _fabric_nodes(data)
    if not is_int(vfs) or vfs < 1 or nodes == 0:
        return
    block = max(vfs, 2)  # nv-ipam's smallest block
    needed = nodes * block
    for i, rail in _rails(data):
        subnet = _subnet(rail)
        if subnet is None:
            continue
        usable = subnet.num_addresses - 2 - (1 if rail.get("gateway") is not None else 0)
        if usable < needed:
            prefix = max(0, 32 - (needed + 3 - 1).bit_length())
            yield Finding(
                _rail_path(i, "subnet"),
                f"subnet {subnet} has {max(usable, 0)} usable addresses but {nodes} fabric nodes x {block} need "
                f"{needed}; use a /{prefix} or larger",
            )


@rule(
    "GP275",
    "fabric-topology-labels",
    Level.ERROR,
    "Each label names a node's switch at one fabric level above the host, so a fat-tree of `tiers` switch "
    "levels has at most `tiers` of them; on AWS, EKS labels the network nodes itself.",
    source="https://kueue.sigs.k8s.io/docs/concepts/topology_aware_scheduling/",
    fix="On aws remove `network.fabric.topologyLabels`; on kubernetes list at most `tiers` of them, unique.",
)
def fabric_topology_labels(data: Data) -> Iterator[Finding]:
    fabric = section(data, "network", "fabric")
    labels = [label for label in as_list(fabric.get("topologyLabels")) if isinstance(label, str)] if fabric else []
    if fabric is None or not labels:
        return
    if provider(data) == "aws":
        yield Finding(
            ("network", "fabric", "topologyLabels"),
            "network.fabric.topologyLabels applies to provider kubernetes only; on aws the topology uses the "
            "topology.k8s.aws/network-node-layer labels EKS puts on fabric nodes",
            at_key=True,
        )
        return
    tiers = fabric.get("tiers")
    if is_int(tiers) and len(labels) > tiers:
        yield Finding(
            ("network", "fabric", "topologyLabels"),
            f"{len(labels)} topology labels for a {tiers}-tier fabric; name at most {tiers} switch levels, "
            "widest first",
        )
    if HOST_LABEL in labels:
        yield Finding(
            ("network", "fabric", "topologyLabels", labels.index(HOST_LABEL)),
            f"{HOST_LABEL} is always the last level; list only the switch levels above the host",
        )
