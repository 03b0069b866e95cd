"""Network: the VPC the cluster, the GPU nodes and the file system live in.

Per zone: a large private subnet (nodes and pods: the VPC CNI gives every pod a VPC
address), a small public subnet that only holds that zone's NAT gateway, and a private
route table through that NAT. One NAT per zone costs a little more than a shared one but a
zone outage then never cuts the other zones off the internet.

Subnet CIDRs are derived from the zone's letter, not its position in `target.zones`, so
adding, removing or reordering zones never moves (and so never replaces) an existing subnet.
The layout (1/8 of the VPC per private subnet, 1/128 per public one, letters a..g) lives in
gpuplat.catalog.regions, which GP212 and GP225 check the spec against: /16 gives /19
private and /23 public subnets, /17 (the smallest VPC allowed) /20 and /24.

VPC endpoints keep image pulls, STS, EC2 and SQS calls (nodes, Karpenter, Pod Identity) off
the NAT: cheaper for multi-GB GPU images, and they keep working if a NAT fails. The storage
tiers' traffic goes through gateway endpoints on the private route tables: `s3` for the cold
bucket (and image layers ECR keeps in S3), `s3express` for the warm tier's directory bucket.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from gpuplat.catalog.footprint import INTERFACE_ENDPOINTS
from gpuplat.catalog.regions import (
    PRIVATE_PREFIX_MAX,
    PUBLIC_SLICE_BITS,
    VPC_PREFIX_MAX,
    VPC_SLICE_BITS,
    ZONE_LETTERS,
)
from gpuplat.model import Platform

from .._common import child_opts
from ._common import DISCOVERY_TAG, ZONE_TAG, region_of, tags

_PUBLIC_BLOCK = 2**VPC_SLICE_BITS - 1  # the last block holds the public subnets
assert len(ZONE_LETTERS) <= _PUBLIC_BLOCK, "every zone letter needs a private block of its own"


def zone_slot(zone: str) -> int:
    """Index of a zone's subnets inside the VPC CIDR: its letter (us-east-1c -> 2)."""
    slot = ZONE_LETTERS.find(zone[-1]) if zone else -1
    if slot < 0:
        raise ValueError(
            f"cannot place subnets for zone {zone!r}: zone names must end in one of the letters {ZONE_LETTERS}"
        )
    return slot


def subnet_cidrs(vpc_cidr: str, zone: str) -> tuple[str, str]:
    """(private, public) CIDR of `zone`: private = 1/8 of the VPC, public = 1/16 of the last 1/8."""
    vpc = ipaddress.ip_network(vpc_cidr)
    if vpc.prefixlen > VPC_PREFIX_MAX:
        # GP225 rejects these; the sentence is for callers that skipped validation.
        raise ValueError(
            f"VPC {vpc_cidr} is too small for the subnet layout: each zone's private subnet is 1/8 of the "
            f"VPC and must be a /{PRIVATE_PREFIX_MAX} or larger, so the VPC must be a /{VPC_PREFIX_MAX} or "
            f"larger, e.g. {vpc.supernet(new_prefix=VPC_PREFIX_MAX)}"
        )
    slot = zone_slot(zone)
    blocks = list(vpc.subnets(prefixlen_diff=VPC_SLICE_BITS))
    public = list(blocks[_PUBLIC_BLOCK].subnets(prefixlen_diff=PUBLIC_SLICE_BITS))[slot]
    return str(blocks[slot]), str(public)


@dataclass(frozen=True)
class NetworkArgs:
    model: Platform
    cluster_name: str


def private_subnet_tags(model: Platform, cluster: str, zone: str) -> dict[str, str]:
    """Karpenter discovers node subnets by these; internal load balancers land here."""
    extra = {
        DISCOVERY_TAG: cluster,
        "kubernetes.io/role/internal-elb": "1",
        f"kubernetes.io/cluster/{cluster}": "shared",
        ZONE_TAG: zone,
    }
    return tags(model, f"{cluster}-private-{zone}", extra)


def gateway_endpoint_services(model: Platform) -> list[str]:
    """S3 always (the cold bucket, ECR's layers); s3express with a warm tier.

    The warm tier's directory bucket answers on s3express endpoints (the Regional
    s3express-control and the Zonal s3express-<az id>), which the s3 endpoint does not cover:
    without that one every warm-tier byte would go through the NAT, billed per GB. Gateway
    endpoints are free.
    """
    return ["s3", *(["s3express"] if model.storage.warm is not None else [])]


class Network(pulumi.ComponentResource):
    vpc_id: pulumi.Output[str]
    vpc_cidr: str
    private_subnet_ids: dict[str, pulumi.Output[str]]  # by zone name
    public_subnet_ids: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:Network", name, None, opts)
        self._name, self._model, self._cluster = name, args.model, args.cluster_name
        model, cluster = args.model, args.cluster_name
        self.vpc_cidr = model.network.vpc_cidr
        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=self.vpc_cidr,
            enable_dns_support=True,
            enable_dns_hostnames=True,  # required by interface endpoints with private DNS
            tags=tags(model, f"{cluster}-vpc"),
            opts=child_opts(self),
        )
        igw = aws.ec2.InternetGateway(
            f"{name}-igw", vpc_id=vpc.id, tags=tags(model, f"{cluster}-igw"), opts=child_opts(self)
        )
        public_rt = aws.ec2.RouteTable(
            f"{name}-public",
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
            tags=tags(model, f"{cluster}-public"),
            opts=child_opts(self),
        )
        self.private_subnet_ids, self.public_subnet_ids = {}, {}
        private_route_tables: list[pulumi.Output[str]] = []
        for zone in model.target.zones:
            private_cidr, public_cidr = subnet_cidrs(self.vpc_cidr, zone)
            public, nat = self._public_subnet(zone, public_cidr, vpc, public_rt, igw)
            private, private_rt = self._private_subnet(zone, private_cidr, vpc, nat)
            self.private_subnet_ids[zone] = private.id
            self.public_subnet_ids[zone] = public.id
            private_route_tables.append(private_rt.id)
        self._endpoints(vpc, private_route_tables)
        self.vpc_id = vpc.id
        self.register_outputs(
            {
                "vpcId": self.vpc_id,
                "vpcCidr": self.vpc_cidr,
                "privateSubnetIds": self.private_subnet_ids,
                "publicSubnetIds": self.public_subnet_ids,
            }
        )

    def _public_subnet(
        self, zone: str, cidr: str, vpc: aws.ec2.Vpc, route_table: aws.ec2.RouteTable, igw: aws.ec2.InternetGateway
    ) -> tuple[aws.ec2.Subnet, aws.ec2.NatGateway]:
        """The zone's public subnet and the NAT gateway in it."""
        name, model, cluster = self._name, self._model, self._cluster
        public = aws.ec2.Subnet(
            f"{name}-public-{zone}",
            vpc_id=vpc.id,
            cidr_block=cidr,
            availability_zone=zone,
            tags=tags(model, f"{cluster}-public-{zone}", {"kubernetes.io/role/elb": "1", ZONE_TAG: zone}),
            opts=child_opts(self),
        )
        aws.ec2.RouteTableAssociation(
            f"{name}-public-{zone}", subnet_id=public.id, route_table_id=route_table.id, opts=child_opts(self)
        )
        eip = aws.ec2.Eip(
            f"{name}-nat-{zone}", domain="vpc", tags=tags(model, f"{cluster}-nat-{zone}"), opts=child_opts(self)
        )
        nat = aws.ec2.NatGateway(
            f"{name}-nat-{zone}",
            allocation_id=eip.id,
            subnet_id=public.id,
            tags=tags(model, f"{cluster}-nat-{zone}"),
            opts=child_opts(self, depends_on=[igw]),
        )
        return public, nat

    def _private_subnet(
        self, zone: str, cidr: str, vpc: aws.ec2.Vpc, nat: aws.ec2.NatGateway
    ) -> tuple[aws.ec2.Subnet, aws.ec2.RouteTable]:
        """The zone's private subnet (nodes, pods) and its route table through the zone's NAT."""
        name, model, cluster = self._name, self._model, self._cluster
        private = aws.ec2.Subnet(
            f"{name}-private-{zone}",
            vpc_id=vpc.id,
            cidr_block=cidr,
            availability_zone=zone,
            tags=private_subnet_tags(model, cluster, zone),
            opts=child_opts(self),
        )
        route_table = aws.ec2.RouteTable(
            f"{name}-private-{zone}",
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id)],
            tags=tags(model, f"{cluster}-private-{zone}"),
            opts=child_opts(self),
        )
        aws.ec2.RouteTableAssociation(
            f"{name}-private-{zone}", subnet_id=private.id, route_table_id=route_table.id, opts=child_opts(self)
        )
        return private, route_table

    def _endpoints(self, vpc: aws.ec2.Vpc, private_route_tables: list[pulumi.Output[str]]) -> None:
        """Gateway endpoints on the private route tables, interface endpoints in the private subnets."""
        name, model, cluster = self._name, self._model, self._cluster
        region = region_of(model)
        for service in gateway_endpoint_services(model):
            aws.ec2.VpcEndpoint(
                f"{name}-endpoint-{service}",
                vpc_id=vpc.id,
                service_name=f"com.amazonaws.{region}.{service}",
                vpc_endpoint_type="Gateway",
                route_table_ids=private_route_tables,
                tags=tags(model, f"{cluster}-{service}"),
                opts=child_opts(self),
            )
        endpoint_sg = aws.ec2.SecurityGroup(
            f"{name}-endpoints",
            vpc_id=vpc.id,
            description="HTTPS from the VPC to its interface endpoints",
            tags=tags(model, f"{cluster}-endpoints"),
            opts=child_opts(self),
        )
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-endpoints-https",
            security_group_id=endpoint_sg.id,
            cidr_ipv4=self.vpc_cidr,
            ip_protocol="tcp",
            from_port=443,
            to_port=443,
            description="HTTPS from the VPC",
            tags=tags(model, f"{cluster}-endpoints-https"),
            opts=child_opts(self),
        )
        for service in INTERFACE_ENDPOINTS:
            aws.ec2.VpcEndpoint(
                f"{name}-endpoint-{service.replace('.', '-')}",
                vpc_id=vpc.id,
                service_name=f"com.amazonaws.{region}.{service}",
                vpc_endpoint_type="Interface",
                private_dns_enabled=True,
                subnet_ids=list(self.private_subnet_ids.values()),
                security_group_ids=[endpoint_sg.id],
                tags=tags(model, f"{cluster}-{service}"),
                opts=child_opts(self),
            )
