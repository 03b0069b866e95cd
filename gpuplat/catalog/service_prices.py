# pyright: strict
"""List prices of what the platform runs besides GPU nodes, per region, and of Capacity Blocks.

Every price is USD, as published on the page named next to it on the date given (`as_of`), in the
region it names. They are list prices, not a quote: they move (S3 Express storage fell from $0.16
to $0.11 per GB-month in April 2025), and an account may pay less. The plan prints each line with
its region, date and source so nobody mistakes the sum for a bill.

Regions: `US_EAST_1` holds every line. `REGIONAL` holds what differs elsewhere and was read for
that region; `SAME_EVERYWHERE` names the prices AWS lists once for every commercial region. Any
other (region, line) is priced at us-east-1 and marked estimated (`service_price`), so a plan for
a region the catalog has not read says so instead of passing us-east-1 off as its price.

GB here is what AWS bills: 2^30 bytes for S3, EBS and FSx alike, so a TiB of the spec is 1024 GB
on S3, while FSx bills the GiB of its storage capacity (1 TiB of `capacityTiB` = 1000 GiB,
see fsx.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType


@dataclass(frozen=True)
class ListPrice:
    usd: float
    unit: str  # e.g. "GB-month", "hour"
    source: str  # URL
    as_of: str  # YYYY-MM-DD the page was read (or the page's own price date)
    note: str = ""
    region: str = "us-east-1"  # the region whose list shows this price
    estimated: str = ""  # why this is not the list price of the region it is used for ("" = it is)


FSX_PRICING = "https://aws.amazon.com/fsx/lustre/pricing/"
S3_PRICING = "https://aws.amazon.com/s3/pricing/"
S3_FAQS = "https://aws.amazon.com/s3/faqs/"  # its S3 Express examples spell out the request rates
VPC_PRICING = "https://aws.amazon.com/vpc/pricing/"
PRIVATELINK_PRICING = "https://aws.amazon.com/privatelink/pricing/"
EBS_PRICING = "https://aws.amazon.com/ebs/pricing/"
CLOUDWATCH_PRICING = "https://aws.amazon.com/cloudwatch/pricing/"
KMS_PRICING = "https://aws.amazon.com/kms/pricing/"
EKS_PRICING = "https://aws.amazon.com/eks/pricing/"
CAPACITY_BLOCK_PRICING = "https://aws.amazon.com/ec2/capacityblocks/pricing/"
SAVINGS_PLANS_PRICING = "https://aws.amazon.com/savingsplans/compute-pricing/"

_READ = "2026-12-03"


def _p(usd: float, unit: str, source: str, note: str, region: str = "us-east-1") -> ListPrice:
    return ListPrice(usd, unit, source, _READ, note, region)


# FSx for Lustre PERSISTENT_2 SSD storage by throughput tier (MB/s per TiB), per GB-month of
# provisioned capacity (throughput is included in the storage price; metadata IOPS in AUTOMATIC
# mode are too). LZ4 compression does not lower it: FSx bills provisioned, not stored, capacity.
FSX_TIERS = (125, 250, 500, 1000)

US_EAST_1: Mapping[str, ListPrice] = MappingProxyType(
    {
        **{
            f"fsx-persistent-2-{tier}": _p(usd, "GB-month", FSX_PRICING, f"PERSISTENT_2 SSD {tier} MB/s/TiB")
            for tier, usd in zip(FSX_TIERS, (0.145, 0.210, 0.340, 0.600), strict=True)
        },
        # Backups of any FSx file system: incremental, the first one a full copy of the stored data.
        "fsx-backup": _p(0.05, "GB-month", FSX_PRICING, "backup storage"),
        # S3 Express One Zone after the April 2025 reduction: storage, requests, and a per-GB charge
        # on the part of each request above 512 KB (upload and retrieval).
        "s3-express-storage": _p(0.11, "GB-month", S3_PRICING, "S3 Express One Zone storage"),
        "s3-express-put": _p(0.00113, "1,000 requests", S3_FAQS, "S3 Express PUT/POST/LIST"),
        "s3-express-get": _p(0.00003, "1,000 requests", S3_FAQS, "S3 Express GET/HEAD"),
        "s3-express-upload": _p(0.0032, "GB", S3_FAQS, "S3 Express upload, bytes above 512 KB per request"),
        "s3-express-retrieval": _p(0.0006, "GB", S3_FAQS, "S3 Express retrieval, bytes above 512 KB per request"),
        # S3 Standard, the first 50 TB a month (the cold tier's objects before the lifecycle moves them).
        "s3-standard-storage": _p(0.023, "GB-month", S3_PRICING, "S3 Standard, first 50 TB"),
        # NAT gateway: per hour it exists plus per GB it processes; its Elastic IP is a public IPv4
        # address, billed per hour since February 2024.
        "nat-hour": _p(0.045, "hour", VPC_PRICING, "per NAT gateway"),
        "nat-gb": _p(0.045, "GB", VPC_PRICING, "NAT data processed"),
        "public-ipv4-hour": _p(0.005, "hour", VPC_PRICING, "per public IPv4 address"),
        # Interface endpoints: per endpoint and zone (one ENI each) per hour, plus data processed.
        "endpoint-hour": _p(0.01, "hour", PRIVATELINK_PRICING, "per interface endpoint per zone"),
        "endpoint-gb": _p(0.01, "GB", PRIVATELINK_PRICING, "interface endpoint data processed, first 1 PB"),
        # gp3 at its baseline (3,000 IOPS and 125 MB/s are included; the root volumes ask no more).
        "ebs-gp3": _p(0.08, "GB-month", EBS_PRICING, "EBS gp3 storage"),
        # EKS control-plane logs land in CloudWatch Logs as standard log groups.
        "logs-ingest": _p(0.50, "GB", CLOUDWATCH_PRICING, "CloudWatch Logs standard ingestion"),
        "logs-storage": _p(0.03, "GB-month", CLOUDWATCH_PRICING, "CloudWatch Logs archived storage"),
        # A customer managed key per month; each automatic rotation adds $1 a month for the first two.
        "kms-key": _p(1.00, "key-month", KMS_PRICING, "customer managed KMS key"),
        # EKS control plane per cluster-hour: standard support, and extended support (which replaces it).
        "eks-standard": _p(0.10, "hour", EKS_PRICING, "standard support"),
        "eks-extended": _p(0.60, "hour", EKS_PRICING, "extended support"),
    }
)

# Listed once for every commercial region on their pages (partition aws; China bills in CNY and
# GovCloud lists its own, so neither is covered by this).
SAME_EVERYWHERE = frozenset({"eks-standard", "eks-extended", "public-ipv4-hour", "kms-key"})

# What differs from us-east-1 and was read for that region; the rest of a region's lines are
# estimated (`service_price`). eu-west-1, Europe (Ireland), each line matched to its row of AWS's
# regional offer files (checked 2026-12-04 against those rows as public repositories quote them,
# with SKU and file version; the offer files themselves cannot be fetched from here): NAT gateway hour
# and GB $0.048 (AmazonEC2 20260925174521, EU-NatGateway-Hours/-Bytes), gp3 $0.088 (SKU
# TXACT7E3PV6ZX2NM), interface endpoints $0.011 per hour (SKU H37WJ97MHYGDXG2A), CloudWatch Logs
# ingestion $0.57 and storage $0.03 (AmazonCloudWatch 20260922021715, SKUs KJBTQPDHW2H92B8Y and
# M93YPPU987S2T6U9), S3 Standard $0.023 (AmazonS3 20260928230416, SKU 4AJHPB29ZPVFADXP). Not found
# for eu-west-1, so estimated: FSx for Lustre and S3 Express One Zone (offered there, in euw1-az1
# and euw1-az3). us-west-2 and us-east-2 list the same as us-east-1 for the lines given them below.
REGIONAL: Mapping[str, Mapping[str, ListPrice]] = MappingProxyType(
    {
        "eu-west-1": MappingProxyType(
            {
                "nat-hour": _p(0.048, "hour", VPC_PRICING, "per NAT gateway", "eu-west-1"),
                "nat-gb": _p(0.048, "GB", VPC_PRICING, "NAT data processed", "eu-west-1"),
                "ebs-gp3": _p(0.088, "GB-month", EBS_PRICING, "EBS gp3 storage", "eu-west-1"),
                "endpoint-hour": _p(0.011, "hour", PRIVATELINK_PRICING, "per interface endpoint per zone", "eu-west-1"),
                "endpoint-gb": _p(0.01, "GB", PRIVATELINK_PRICING, "interface endpoint data processed", "eu-west-1"),
                "logs-ingest": _p(0.57, "GB", CLOUDWATCH_PRICING, "CloudWatch Logs standard ingestion", "eu-west-1"),
                "logs-storage": _p(
                    0.03, "GB-month", CLOUDWATCH_PRICING, "CloudWatch Logs archived storage", "eu-west-1"
                ),
                "s3-standard-storage": _p(0.023, "GB-month", S3_PRICING, "S3 Standard, first 50 TB", "eu-west-1"),
            }
        ),
        **{
            region: MappingProxyType(
                {
                    key: replace(US_EAST_1[key], region=region)
                    for key in ("nat-hour", "nat-gb", "ebs-gp3", "endpoint-hour", "endpoint-gb", "s3-standard-storage")
                }
            )
            for region in ("us-east-2", "us-west-2")
        },
    }
)


def service_price(key: str, region: str) -> ListPrice:
    """The list price of one line in `region`; us-east-1's, marked estimated, where none was read."""
    base = US_EAST_1[key]
    if region == "us-east-1":
        return base
    if key in SAME_EVERYWHERE and not region.startswith(("cn-", "us-gov-")):
        return replace(base, region=region)
    listed = REGIONAL.get(region, {}).get(key)
    if listed is not None:
        return listed
    return replace(base, estimated=f"us-east-1 list price; the catalog has no {region} price for this line")


# The us-east-1 lines under the names the plan used before prices had regions.
FSX_PERSISTENT_2_GB_MONTH: Mapping[int, ListPrice] = MappingProxyType(
    {tier: US_EAST_1[f"fsx-persistent-2-{tier}"] for tier in FSX_TIERS}
)
FSX_BACKUP_GB_MONTH = US_EAST_1["fsx-backup"]
S3_EXPRESS_GB_MONTH = US_EAST_1["s3-express-storage"]
S3_STANDARD_GB_MONTH = US_EAST_1["s3-standard-storage"]
NAT_GATEWAY_HOURLY = US_EAST_1["nat-hour"]
NAT_GATEWAY_PER_GB = US_EAST_1["nat-gb"]
PUBLIC_IPV4_HOURLY = US_EAST_1["public-ipv4-hour"]
EKS_STANDARD_HOURLY = US_EAST_1["eks-standard"]
EKS_EXTENDED_HOURLY = US_EAST_1["eks-extended"]

# EC2 Capacity Blocks for ML: the reservation fee per instance-hour, paid up front for the whole
# block when it is bought; AWS reprices it with supply and demand, and a block is charged at the
# rate of the day it was bought. The Linux operating-system fee is per second on top and small.
# The page read (2024-12-15) listed these rates by region and said they would be repriced on
# 2025-01-01, so every rate here is older than the on-demand table and known to be superseded:
# the plan marks it (CAPACITY_BLOCK_RATES_OLD) wherever it prices a block. Override with
# `procurement.prices.capacityBlockHourly`.
CAPACITY_BLOCK_RATES_AS_OF = "2024-12-15"
CAPACITY_BLOCK_RATES_OLD = (
    f"Capacity Block rate from the {CAPACITY_BLOCK_RATES_AS_OF} pricing page, which said AWS would reprice "
    "blocks on 2025-01-01; not the rate a block bought today costs (set procurement.prices.capacityBlockHourly)"
)


def _block(usd: float, region: str) -> ListPrice:
    return ListPrice(usd, "instance-hour", CAPACITY_BLOCK_PRICING, CAPACITY_BLOCK_RATES_AS_OF, "Capacity Block", region)


# instance type -> region -> rate, the regions the page listed for each type.
CAPACITY_BLOCK_RATES: Mapping[str, Mapping[str, ListPrice]] = MappingProxyType(
    {
        "p5.48xlarge": MappingProxyType({r: _block(39.33, r) for r in ("us-east-1", "us-east-2")}),
        "p5e.48xlarge": MappingProxyType({"us-east-2": _block(43.26, "us-east-2")}),
        "p4d.24xlarge": MappingProxyType({r: _block(14.75, r) for r in ("us-east-2", "us-west-2")}),
    }
)
# One rate per type, the first region listed (what the plan used before rates had regions).
CAPACITY_BLOCK_HOURLY_USD: Mapping[str, ListPrice] = MappingProxyType(
    {itype: next(iter(by_region.values())) for itype, by_region in CAPACITY_BLOCK_RATES.items()}
)


def capacity_block_rate(instance_type: str, region: str) -> ListPrice | None:
    """The catalog's block rate of a type in `region`; another region's rate, marked estimated, if
    the page did not list the type there; None for a type it did not list at all."""
    by_region = CAPACITY_BLOCK_RATES.get(instance_type)
    if not by_region:
        return None
    if region in by_region:
        return by_region[region]
    other = next(iter(by_region.values()))
    return replace(other, estimated=f"the {other.region} Capacity Block rate; the page listed none for {region}")
