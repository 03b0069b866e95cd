# pyright: strict
"""Hourly EC2 prices and the market discounts the cost plan assumes.

Source of the on-demand numbers: aws/karpenter-provider-aws
``pkg/providers/pricing/zz_generated.pricing_aws.go``, "generated at 2026-07-20T13:44:30Z
for us-east-1" (commit 6fc13b52, "chore: Update data from AWS APIs (#9435)"; unchanged at
1d927085, the commit instances.py reads). Karpenter generates that table from the
AWS Price List API; it is the EC2 On-Demand list price, us-east-1, Linux, shared tenancy.

Other regions: regional_prices.py, a snapshot of the same list for every region it covers,
checked against this table and AWS's offer files; where a region has no price for a type the
us-east-1 one stands in, marked estimated with the reason.

These are list prices as published on that date, not what an account pays: enterprise
discounts, Savings Plans and price changes after the date are not in them. A spec
overrides them (``procurement.prices``), and the plan prints PRICES_AS_OF next to every
cost so nobody mistakes them for a quote.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from gpuplat.catalog.regional_prices import (
    CHECKED_AS_OF,
    CUT_IN_JUNE_2025,
    OFFER_FILE_PRICES,
    OFFER_FILE_SOURCE,
    SNAPSHOT_LABEL,
    SNAPSHOT_ON_DEMAND_HOURLY_USD,
    SNAPSHOT_SOURCE,
    listed_elsewhere_only,
)

PRICES_AS_OF = "2026-07-20"
KARPENTER_TABLE = "karpenter-provider-aws zz_generated.pricing_aws.go@6fc13b52"
PRICES_REGION = "us-east-1"
PRICES_SOURCE = (
    "AWS EC2 On-Demand list prices, us-east-1, Linux, USD per instance-hour, from the AWS "
    "Price List API as captured in aws/karpenter-provider-aws "
    "pkg/providers/pricing/zz_generated.pricing_aws.go (generated 2026-07-20, commit "
    "6fc13b52), rounded to 4 decimals. "
    "p5e.48xlarge has no us-east-1 on-demand list price "
    "and is estimated at the p5en.48xlarge price (see ESTIMATED_PRICES). Spot and reserved "
    "prices are on-demand times (1 - SPOT_DISCOUNT / RESERVED_DISCOUNT), both assumptions "
    "(Capacity Blocks have their own rate, service_prices.py). "
    "List prices, not a quote: override them in the spec under procurement.prices."
)

HOURS_PER_MONTH: float = 730.0


ON_DEMAND_HOURLY_USD: Mapping[str, float] = MappingProxyType(
    {
        # June 2025 cut: p4d/p4de -33 %, p5 -44 % (98.32 -> 55.04).
        "p4d.24xlarge": 21.9576,
        "p4de.24xlarge": 27.4471,
        "p5.4xlarge": 6.88,
        "p5.48xlarge": 55.04,
        "p5e.48xlarge": 63.296,
        "p5en.48xlarge": 63.296,
        "p6-b200.48xlarge": 113.9328,
        "g5.xlarge": 1.006,
        "g5.2xlarge": 1.212,
        "g5.4xlarge": 1.624,
        "g5.8xlarge": 2.448,
        "g5.16xlarge": 4.096,
        "g5.12xlarge": 5.672,
        "g5.24xlarge": 8.144,
        "g5.48xlarge": 16.288,
        "g6.xlarge": 0.8048,
        "g6.2xlarge": 0.9776,
        "g6.4xlarge": 1.3232,
        "g6.8xlarge": 2.0144,
        "g6.16xlarge": 3.3968,
        "g6.12xlarge": 4.6016,
        "g6.24xlarge": 6.6752,
        "g6.48xlarge": 13.3504,
        "g6e.xlarge": 1.861,
        "g6e.2xlarge": 2.2421,
        "g6e.4xlarge": 3.0042,
        "g6e.8xlarge": 4.5286,
        "g6e.16xlarge": 7.5772,
        "g6e.12xlarge": 10.4926,
        "g6e.24xlarge": 15.0656,
        "g6e.48xlarge": 30.1312,
    }
)
# Not a GPU type: the system node group's (catalog/footprint.py), from the same table.
OTHER_ON_DEMAND_HOURLY_USD: Mapping[str, float] = MappingProxyType({"m7i.2xlarge": 0.4032})

# Instance types whose price above is not a published us-east-1 list price, and why.
ESTIMATED_PRICES: Mapping[str, str] = MappingProxyType(
    {
        "p5e.48xlarge": (
            "AWS publishes no us-east-1 on-demand price for p5e (it is sold mainly as "
            "Capacity Blocks); estimated at the p5en.48xlarge price, the same 8x H200 node "
            "with newer CPUs and networking"
        ),
    }
)


@dataclass(frozen=True)
class InstancePrice:
    usd: float  # per instance-hour, on demand
    region: str  # whose list the number is (us-east-1 where another region has none)
    source: str  # a URL or a short name of the table it was read from
    as_of: str  # YYYY-MM-DD of that table (or of the check that vouches for it)
    estimated: str = ""  # why it is not the list price of the region asked for ("" = it is)


_US_EAST_1: Mapping[str, float] = MappingProxyType({**ON_DEMAND_HOURLY_USD, **OTHER_ON_DEMAND_HOURLY_USD})
_SNAPSHOT_US_EAST_1 = SNAPSHOT_ON_DEMAND_HOURLY_USD["us-east-1"]


def on_demand_price(instance_type: str, region: str) -> InstancePrice | None:
    """The on-demand price of a type in a region, and why it is an estimate where it is one;
    None: the catalog has no price for the type anywhere."""
    base = _US_EAST_1.get(instance_type)
    if region == "us-east-1":
        if base is None:
            return None
        return InstancePrice(base, region, KARPENTER_TABLE, PRICES_AS_OF, ESTIMATED_PRICES.get(instance_type, ""))
    listed = regional_price(instance_type, region)
    if listed is not None:
        return listed
    if base is None:
        return None
    why = [f"us-east-1 list price; {not_listed_reason(instance_type, region)}"]
    if instance_type in ESTIMATED_PRICES:
        why.append(ESTIMATED_PRICES[instance_type])
    return InstancePrice(base, "us-east-1", KARPENTER_TABLE, PRICES_AS_OF, "; ".join(why))


def regional_price(instance_type: str, region: str) -> InstancePrice | None:
    """The price the regional snapshot gives (scaled by the June 2025 cut where it predates it)."""
    if (region, instance_type) in OFFER_FILE_PRICES:
        source = OFFER_FILE_SOURCE.format(region=region)
        return InstancePrice(OFFER_FILE_PRICES[region, instance_type], region, source, CHECKED_AS_OF)
    listed = SNAPSHOT_ON_DEMAND_HOURLY_USD.get(region, {}).get(instance_type)
    if listed is None:
        return None
    if instance_type not in CUT_IN_JUNE_2025:
        return InstancePrice(listed, region, SNAPSHOT_LABEL, CHECKED_AS_OF)
    ratio = _US_EAST_1[instance_type] / _SNAPSHOT_US_EAST_1[instance_type]
    why = (
        f"the {region} list price before AWS's June 2025 cut ({listed:g}), cut by the us-east-1 ratio "
        f"({ratio:.4f}); the catalog has not read {region}'s price since"
    )
    return InstancePrice(round(listed * ratio, 4), region, SNAPSHOT_LABEL, CHECKED_AS_OF, why)


def not_listed_reason(instance_type: str, region: str) -> str:
    """Why the catalog has no price for a type in a region: not offered there, or region unread."""
    if listed_elsewhere_only(instance_type, region):
        return f"{instance_type} was not offered in {region} when the catalog's regional prices were read"
    return f"the catalog has no {region} price"


def prices_as_of(region: str) -> str:
    """The date (YYYY-MM-DD) a plan for `region` gives its instance prices: us-east-1's table's,
    or for another region the day of the offer file the snapshot was checked against (the snapshot
    has no date of its own; `prices_source` says so)."""
    return PRICES_AS_OF if region == PRICES_REGION else CHECKED_AS_OF


def prices_source(region: str) -> str:
    """Where the instance prices of a plan for `region` come from."""
    if region == PRICES_REGION:
        return PRICES_SOURCE
    return (
        f"{region}: {SNAPSHOT_SOURCE} (the snapshot is undated: its prices are as of that check); "
        f"P-instance rows older than AWS's June 2025 cut are scaled by it and "
        f"marked estimated, and a type the snapshot has no {region} price for is priced at us-east-1's, "
        f"marked estimated. us-east-1, the reference: {PRICES_SOURCE}"
    )


# Spot: GPU spot prices in us-east-1 have mostly traded 50-70 % under on-demand for the
# g families and less predictably for p5 since the 2025 cut. 60 % is a planning midpoint;
# it does not price in interruptions or the capacity that is simply unavailable.
SPOT_DISCOUNT: float = 0.60

# Reserved, kind on-demand-reservation: an ODCR itself bills at the on-demand rate, around the
# clock, whether instances run in it or not. The plan prices it as if a 1-year, no-upfront
# Compute Savings Plan covered it, which gpuplat does not buy (a finance decision, made
# outside the platform); for the GPU families that has been roughly 30-40 % off on-demand,
# so 35 %. An assumption, named as such wherever the plan shows a reserved cost.
RESERVED_DISCOUNT: float = 0.35
RESERVED_ASSUMPTION = (
    "reserved (on-demand capacity reservations) priced as covered by a 1-year no-upfront Compute "
    "Savings Plan that the platform does not buy; without one they bill the full on-demand rate"
)
RESERVED_ASSUMPTION_SOURCE = "https://aws.amazon.com/savingsplans/compute-pricing/"
