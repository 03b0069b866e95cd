# pyright: strict
"""List prices of what the platform runs besides GPU nodes, and of the reserved market's kinds.

Every price is us-east-1, USD, as published on the page named next to it on the date given
(`as_of`). They are list prices, not a quote: they move (S3 Express storage fell from $0.16 to
$0.11 per GB-month in April 2025), and an account may pay less. The plan prints each line with
its date and source so nobody mistakes the sum for a bill.

GB here is what AWS bills: 2^30 bytes for S3 and FSx alike, so a TiB of the spec is 1024 GB
on S3, while FSx bills the GiB of its storage capacity (1 TiB of `capacityTiB` = 1000 GiB,
see fsx.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class ListPrice:
    usd: float
    unit: str  # e.g. "GB-month", "hour"
    source: str  # URL
    as_of: str  # YYYY-MM-DD the page was read (or the page's own price date)
    note: str = ""


FSX_PRICING = "https://aws.amazon.com/fsx/lustre/pricing/"
S3_PRICING = "https://aws.amazon.com/s3/pricing/"
VPC_PRICING = "https://aws.amazon.com/vpc/pricing/"
EKS_PRICING = "https://aws.amazon.com/eks/pricing/"
CAPACITY_BLOCK_PRICING = "https://aws.amazon.com/ec2/capacityblocks/pricing/"
SAVINGS_PLANS_PRICING = "https://aws.amazon.com/savingsplans/compute-pricing/"

# FSx for Lustre PERSISTENT_2 SSD storage, by the throughput tier (MB/s per TiB), per GB-month of
# provisioned capacity (throughput is included in the storage price; metadata IOPS in AUTOMATIC
# mode are too). LZ4 compression does not lower it: FSx bills provisioned, not stored, capacity.
FSX_PERSISTENT_2_GB_MONTH: Mapping[int, ListPrice] = MappingProxyType(
    {
        tier: ListPrice(usd, "GB-month", FSX_PRICING, "2026-12-03", "PERSISTENT_2 SSD, us-east-1")
        for tier, usd in ((125, 0.145), (250, 0.210), (500, 0.340), (1000, 0.600))
    }
)
# Backups of any FSx file system: incremental, the first one a full copy of the stored data.
FSX_BACKUP_GB_MONTH = ListPrice(0.05, "GB-month", FSX_PRICING, "2026-12-03", "backup storage, us-east-1")

# S3 Express One Zone storage after the April 2025 reduction (requests are billed on top).
S3_EXPRESS_GB_MONTH = ListPrice(0.11, "GB-month", S3_PRICING, "2026-12-03", "S3 Express One Zone storage")
# S3 Standard, the first 50 TB a month (the cold tier's objects before the lifecycle moves them).
S3_STANDARD_GB_MONTH = ListPrice(0.023, "GB-month", S3_PRICING, "2026-12-03", "S3 Standard, first 50 TB")

# NAT gateway: per hour it exists plus per GB it processes, and its Elastic IP (public IPv4
# addresses are billed per hour since February 2024).
NAT_GATEWAY_HOURLY = ListPrice(0.045, "hour", VPC_PRICING, "2026-12-03", "per NAT gateway")
NAT_GATEWAY_PER_GB = ListPrice(0.045, "GB", VPC_PRICING, "2026-12-03", "data processed, not in the total")
PUBLIC_IPV4_HOURLY = ListPrice(0.005, "hour", VPC_PRICING, "2026-12-03", "per public IPv4 address")

# EKS control plane per cluster-hour: standard support, and extended support (which replaces it).
EKS_STANDARD_HOURLY = ListPrice(0.10, "hour", EKS_PRICING, "2026-12-03", "standard support")
EKS_EXTENDED_HOURLY = ListPrice(0.60, "hour", EKS_PRICING, "2026-12-03", "extended support")

# EC2 Capacity Blocks for ML: the reservation fee per instance-hour, paid up front for the whole
# block when it is bought; AWS reprices it with supply and demand, and a block is charged at the
# rate of the day it was bought. The page read listed these rates for us-east-1 (p5e and p5en
# us-east-2, the region the page lists them in); the Linux operating-system fee is per second on
# top and small. The page said its rates were due for an update, so this catalog is older than
# the on-demand one: override with `procurement.prices.capacityBlockHourly`.
CAPACITY_BLOCK_HOURLY_USD: Mapping[str, ListPrice] = MappingProxyType(
    {
        "p5.48xlarge": ListPrice(39.33, "instance-hour", CAPACITY_BLOCK_PRICING, "2024-12-15", "us-east-1"),
        "p5e.48xlarge": ListPrice(43.26, "instance-hour", CAPACITY_BLOCK_PRICING, "2024-12-15", "us-east-2"),
        "p4d.24xlarge": ListPrice(14.75, "instance-hour", CAPACITY_BLOCK_PRICING, "2024-12-15", "us-east-2"),
    }
)
