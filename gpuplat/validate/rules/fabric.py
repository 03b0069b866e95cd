"""Rules on `network`: the VPC and the fat-tree training fabric (capacity is the planner's)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from gpuplat.catalog import INSTANCE_TYPES, instance_type
from gpuplat.catalog.regions import PRIVATE_PREFIX_MAX, VPC_PREFIX_MAX, VPC_SLICE_BITS
from gpuplat.diagnostics import Level
from gpuplat.validate.registry import Finding, rule
from gpuplat.validate.rules._common import (
    Data,
    as_str,
    is_int,
    is_number,
    listing,
    pool_name,
    pools,
    provider,
    section,
    show_number,
)

# AWS VPC limits: a VPC's IPv4 block is between /16 and /28. The Network component's subnet
# layout needs more than the AWS minimum (gpuplat/catalog/regions.py): /16 or /17.
_VPC_PREFIX_MIN, _VPC_PREFIX_MAX = 16, 28


def _fabric_pools(data: Data) -> Iterator[tuple[int, Data]]:
    for i, pool in pools(data):
        if pool.get("fabric") is True:
            yield i, pool


@rule(
    "GP220",
    "fabric-section-required",
    Level.ERROR,
    "A fabric pool joins the fat-tree that network.fabric describes (tiers, radix, links); without it there is none.",
    fix=(
        "Add `network.fabric` (topology, tiers, switchRadix, linkGbps, transport), or remove `fabric: true` from "
        "the pool."
    ),
)
def fabric_section_required(data: Data) -> Iterator[Finding]:
    if section(data, "network", "fabric") is not None:
        return
    network = section(data, "network")
    if network is not None and "fabric" in network:
        return  # present but malformed: the schema pass reports it
    for i, pool in _fabric_pools(data):
        yield Finding(
            ("gpuNodePools", i, "fabric"),
            f"pool {pool_name(pool, i)} sets fabric: true but network.fabric is missing; describe the fabric "
            f"(topology, tiers, switchRadix, linkGbps, transport) or set fabric: false",
        )


@rule(
    "GP221",
    "fabric-efa-instance",
    Level.ERROR,
    "On AWS the training fabric is EFA; an instance type without EFA interfaces cannot join it (EC2 EFA limits).",
    source="https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html",
    fix=(
        "Use an EFA-capable instance type for the fabric pool (`gpuplat docs catalog` lists EFA cards per type), or"
        " remove `fabric: true`."
    ),
)
def fabric_efa_instance(data: Data) -> Iterator[Finding]:
    if provider(data) != "aws":
        return
    for i, pool in _fabric_pools(data):
        name = as_str(pool.get("instanceType"))
        itype = instance_type(name) if name is not None else None
        if itype is None or itype.efa_capable:
            continue
        same_gpu = [t.name for t in INSTANCE_TYPES.values() if t.efa_capable and t.gpu_model == itype.gpu_model]
        yield Finding(
            ("gpuNodePools", i, "fabric"),
            f"pool {pool_name(pool, i)} joins the fabric but {name} has no EFA interface "
            f"(EFA-capable with {itype.gpu_model}: {listing(same_gpu)})",
        )


@rule(
    "GP222",
    "fabric-transport-provider",
    Level.ERROR,
    "EFA is the only RDMA transport EC2 offers, and exists only on EC2.",
    source="https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html",
    fix="Use `transport: efa` on aws; roce and infiniband are for provider kubernetes.",
)
def fabric_transport_provider(data: Data) -> Iterator[Finding]:
    fabric = section(data, "network", "fabric")
    transport = as_str(fabric.get("transport")) if fabric is not None else None
    kind = provider(data)
    if kind == "aws" and transport in ("roce", "infiniband"):
        yield Finding(
            ("network", "fabric", "transport"),
            f"transport {transport} is not available on AWS; an aws fabric uses efa",
        )
    elif kind == "kubernetes" and transport == "efa":
        yield Finding(
            ("network", "fabric", "transport"),
            "transport efa exists only on AWS; a fabric on provider kubernetes uses roce or infiniband",
        )


@rule(
    "GP223",
    "sriov-kubernetes-only",
    Level.ERROR,
    "EC2 exposes EFA interfaces, not SR-IOV virtual functions the SR-IOV network operator could configure.",
    source="https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html",
    fix="Remove `network.fabric.sriov` on aws: EFA needs no SR-IOV configuration.",
)
def sriov_kubernetes_only(data: Data) -> Iterator[Finding]:
    fabric = section(data, "network", "fabric")
    if provider(data) == "aws" and fabric is not None and "sriov" in fabric:
        yield Finding(
            ("network", "fabric", "sriov"),
            "network.fabric.sriov applies to provider kubernetes only; on aws the fabric uses EFA interfaces",
            at_key=True,
        )


@rule(
    "GP224",
    "switch-radix-even",
    Level.ERROR,
    "A fat-tree switch splits its ports between down- and up-links; the leaf/spine arithmetic needs an even radix.",
    source="https://en.wikipedia.org/wiki/Fat_tree",
    fix="Use an even `network.fabric.switchRadix` (e.g. 32, 64, 128).",
)
def switch_radix_even(data: Data) -> Iterator[Finding]:
    fabric = section(data, "network", "fabric")
    radix = fabric.get("switchRadix") if fabric is not None else None
    if is_int(radix) and radix % 2:
        yield Finding(
            ("network", "fabric", "switchRadix"),
            f"switchRadix {radix} is odd; a fat-tree switch needs an even number of ports (e.g. {radix - 1} "
            f"or {radix + 1})",
        )


@rule(
    "GP227",
    "fabric-oversubscription-fits-radix",
    Level.ERROR,
    "A leaf of radix k keeps at least one uplink, so its down:up ratio is at most (k - 1):1.",
    source="https://en.wikipedia.org/wiki/Fat_tree",
    fix="Lower `network.fabric.oversubscription` to at most switchRadix - 1.",
)
def fabric_oversubscription_fits_radix(data: Data) -> Iterator[Finding]:
    fabric = section(data, "network", "fabric")
    if fabric is None:
        return
    radix, ratio = fabric.get("switchRadix"), fabric.get("oversubscription")
    if is_int(radix) and radix >= 2 and is_number(ratio) and ratio > radix - 1:
        yield Finding(
            ("network", "fabric", "oversubscription"),
            f"oversubscription {show_number(ratio)} cannot be built from radix-{radix} switches: a leaf keeps at "
            f"least one uplink, so the most it can have is {radix - 1} (= {radix - 1} down : 1 up)",
        )


@rule(
    "GP225",
    "vpc-cidr-valid",
    Level.ERROR,
    f"AWS accepts a VPC IPv4 block between /{_VPC_PREFIX_MIN} and /{_VPC_PREFIX_MAX}, written as a network address; "
    f"the subnet layout (a /{PRIVATE_PREFIX_MAX} or larger private subnet per zone, 1/8 of the VPC) needs "
    f"/{VPC_PREFIX_MAX} or larger.",
    source="https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html",
    fix="Use a /17 or larger network address as `network.vpcCidr`, e.g. 10.40.0.0/16.",
)
def vpc_cidr_valid(data: Data) -> Iterator[Finding]:
    network = section(data, "network")
    cidr = as_str(network.get("vpcCidr")) if network is not None else None
    if provider(data) != "aws" or cidr is None:
        return
    try:
        block = ipaddress.IPv4Network(cidr, strict=False)
    except ValueError:
        return  # not CIDR notation at all: the schema pattern reports it
    if not _VPC_PREFIX_MIN <= block.prefixlen <= _VPC_PREFIX_MAX:
        yield Finding(
            ("network", "vpcCidr"),
            f"vpcCidr {cidr} has a /{block.prefixlen} prefix; an AWS VPC is /{_VPC_PREFIX_MIN} to "
            f"/{_VPC_PREFIX_MAX}, e.g. {block.network_address}/{_VPC_PREFIX_MIN}",
        )
    elif block.prefixlen > VPC_PREFIX_MAX:
        private = block.prefixlen + VPC_SLICE_BITS
        yield Finding(
            ("network", "vpcCidr"),
            f"vpcCidr {cidr} is too small: each zone's private subnet is 1/8 of the VPC, a /{private} here, and "
            f"GPU nodes need at least a /{PRIVATE_PREFIX_MAX} (the VPC CNI gives every pod an address); the "
            f"largest prefix allowed is /{VPC_PREFIX_MAX}, e.g. {block.supernet(new_prefix=VPC_PREFIX_MAX)}",
        )
    elif str(block) != cidr:
        yield Finding(
            ("network", "vpcCidr"),
            f"vpcCidr {cidr} has host bits set; the network address of that block is {block}",
        )


@rule(
    "GP303",
    "fabric-unused",
    Level.WARNING,
    "The fabric section only takes effect through pools with fabric: true.",
    fix="Set `fabric: true` on the pools that join the fabric, or remove `network.fabric`.",
)
def fabric_unused(data: Data) -> Iterator[Finding]:
    if section(data, "network", "fabric") is None:
        return
    if any(True for _ in _fabric_pools(data)):
        return
    if not any(True for _ in pools(data)):
        return
    yield Finding(
        ("network", "fabric"),
        "network.fabric is described but no pool sets fabric: true, so no fabric will be built",
        at_key=True,
    )
