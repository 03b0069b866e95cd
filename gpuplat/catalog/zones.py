# pyright: strict
"""What can be known offline about availability zones: how names map to places, and what is offered.

Source (read 2026-12-03): AWS Regions and Availability Zones, "AZ IDs",
https://docs.aws.amazon.com/global-infrastructure/latest/regions/az-ids.html, and "AWS
Availability Zones", https://docs.aws.amazon.com/global-infrastructure/latest/regions/aws-availability-zones.html.

Zone names. In the regions below AWS maps zone *names* (us-east-1a) to physical zones
independently for every account created before November 2025: one account's us-east-1a is
another's us-east-1c. Every other region (all introduced after November 2012) maps names
uniformly. The AZ ID (use1-az1) names the same place in every account. So in these regions
nothing offline can say where a zone name is; the Pulumi program asks the deploying account
(`aws ec2 describe-availability-zones`).

Instance offerings per zone: NOT in this catalog, on purpose. AWS publishes no table of which
zones offer an instance type; its documentation sends you to the EC2 API
(DescribeInstanceTypeOfferings, `--location-type availability-zone`), whose answer also
changes as capacity is added, and p5e / p5en / p6 capacity is sold largely through Capacity
Blocks, which that API does not list. A snapshot of one account's answer would refuse valid
specs and accept invalid ones. Instead the program asks that API at deploy time for every
pool's instance type in the zones the pool must launch in (the fabric zone for a fabric pool,
every zone holding a reservation, at least one zone otherwise) and stops with a sentence naming
the pool, the instance type and the zone before anything is created
(gpuplat/preflight/offerings.py). `check` cannot know it, so it does not pretend to.
"""

from __future__ import annotations

ZONES_AS_OF = "2026-12-03"
ZONES_SOURCE = "https://docs.aws.amazon.com/global-infrastructure/latest/regions/az-ids.html"

# Regions whose zone names are mapped per account (accounts created before November 2025).
INDEPENDENTLY_MAPPED_REGIONS: frozenset[str] = frozenset(
    {
        "us-east-1",  # US East (N. Virginia)
        "us-west-1",  # US West (N. California)
        "us-west-2",  # US West (Oregon)
        "ap-southeast-1",  # Asia Pacific (Singapore)
        "ap-southeast-2",  # Asia Pacific (Sydney)
        "ap-northeast-1",  # Asia Pacific (Tokyo)
        "eu-west-1",  # Europe (Ireland)
        "sa-east-1",  # South America (Sao Paulo)
        "us-gov-west-1",  # AWS GovCloud (US-West)
    }
)

OFFERINGS_API = "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstanceTypeOfferings.html"


def names_are_per_account(region: str) -> bool:
    """Whether a zone name of `region` may be a different place in another account."""
    return region in INDEPENDENTLY_MAPPED_REGIONS
