# pyright: strict
"""Hourly EC2 prices and the market discounts the cost plan assumes.

Source of the on-demand numbers: aws/karpenter-provider-aws
``pkg/providers/pricing/zz_generated.pricing_aws.go``, "generated at 2026-07-20T13:44:30Z
for us-east-1" (commit 6fc13b52, "chore: Update data from AWS APIs (#9435)"; unchanged at
1d927085, the commit instances.py reads). Karpenter generates that table from the
AWS Price List API; it is the EC2 On-Demand list price, us-east-1, Linux, shared tenancy.

These are list prices as published on that date, not what an account pays: enterprise
discounts, Savings Plans and price changes after the date are not in them. A spec
overrides them (``procurement.prices``), and the plan prints PRICES_AS_OF next to every
cost so nobody mistakes them for a quote.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

PRICES_AS_OF = "2026-07-20"
PRICES_REGION = "us-east-1"
PRICES_SOURCE = (
    "AWS EC2 On-Demand list prices, us-east-1, Linux, USD per instance-hour, from the AWS "
    "Price List API as captured in aws/karpenter-provider-aws "
    "pkg/providers/pricing/zz_generated.pricing_aws.go (generated 2026-07-20, commit "
    "6fc13b52), rounded to 4 decimals; in any other region these are estimates, marked as such. "
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

# Instance prices by region, each region's table read from a list of that region. Only us-east-1
# is catalogued (the table Karpenter ships is us-east-1's; it reads other regions live): a spec
# elsewhere gets these prices marked estimated (`on_demand_price`), or sets its own under
# procurement.prices.onDemandHourly.
ON_DEMAND_BY_REGION: Mapping[str, Mapping[str, float]] = MappingProxyType(
    {"us-east-1": MappingProxyType({**ON_DEMAND_HOURLY_USD, **OTHER_ON_DEMAND_HOURLY_USD})}
)

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


def on_demand_price(instance_type: str, region: str) -> tuple[float, str] | None:
    """(USD per hour, why it is an estimate or "") of a type in a region; None: not catalogued."""
    listed = ON_DEMAND_BY_REGION.get(region, {}).get(instance_type)
    if listed is not None:
        return listed, ESTIMATED_PRICES.get(instance_type, "")
    base = ON_DEMAND_BY_REGION["us-east-1"].get(instance_type)
    if base is None:
        return None
    why = [f"us-east-1 list price; the catalog has no {region} price"]
    if instance_type in ESTIMATED_PRICES:
        why.append(ESTIMATED_PRICES[instance_type])
    return base, "; ".join(why)


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
