# pyright: strict
"""On-demand list prices of the catalogued instance types outside us-east-1, per region.

Source: skypilot-org/skypilot-catalog, ``catalogs/v7/aws/vms.csv`` at commit 001367d2 (read
2026-12-04). SkyPilot's AWS fetcher fills its Price column from the AWS Price List bulk offer
file of each region (on demand, Linux, shared tenancy, no pre-installed software, capacity
status "Used") and lists a type in a region only where DescribeInstanceTypeOfferings offers it.
The rows below are that column, one price per (region, type): every zone of a region agrees.

How far to trust it, checked rather than assumed:
- Its us-east-1 rows equal Karpenter's generated table of 2026-07-20 (prices.py) for every g5,
  g6, g6e and m7i type, and AWS's own EC2 offer file version 20260910195514 lists g5.2xlarge in
  eu-west-1 at 1.35296, as here. Those families' regional prices have not moved since.
- Its P-instance rows predate AWS's June 2025 cut (p5.48xlarge is 98.32 in us-east-1 here, 55.04
  since). The cut was one percentage per type in every region: p4d.24xlarge in eu-west-1 is
  35.39655 here and 23.71569 in the 2026-09-10 offer file, the us-east-1 ratio to five digits.
  So `on_demand_price` scales these rows by their type's us-east-1 ratio and marks the result
  estimated, except where the offer file was read (OFFER_FILE_PRICES).
- A region holds only the types offered there when the snapshot was taken; that the offer file
  of 2026-09-10 has no g6 or p5 product in eu-west-1 agrees with it. AWS adds offerings over time,
  so a type missing from a listed region is a warning (GP364), not an error: preflight asks the
  account (DescribeInstanceTypeOfferings) before anything is created.
- p5.4xlarge and p6-b200.48xlarge are not in the snapshot at all, and regions it does not list
  (opt-in regions among them) are unknown: both fall back to the us-east-1 price, marked estimated.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

SNAPSHOT_SOURCE = (
    "AWS Price List on-demand prices (Linux, shared tenancy) as captured in skypilot-org/skypilot-catalog "
    "catalogs/v7/aws/vms.csv at commit 001367d2, checked against AWS's EC2 offer file version 20260910195514"
)
SNAPSHOT_LABEL = "skypilot-catalog catalogs/v7/aws/vms.csv@001367d2"
# The day of the offer file version the snapshot was checked against (20260910195514). The
# snapshot itself carries no date, so a price read from it is "as of" that check.
CHECKED_AS_OF = "2026-09-10"
OFFER_FILE_SOURCE = (
    "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/20260910195514/{region}/index.json"
)

# The types whose snapshot rows predate AWS's June 2025 P-instance price cut.
CUT_IN_JUNE_2025 = frozenset({"p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5en.48xlarge"})

# What AWS's offer file version 20260910195514 lists, read per SKU (on demand, Linux, shared).
OFFER_FILE_PRICES: Mapping[tuple[str, str], float] = MappingProxyType(
    {
        ("eu-west-1", "g5.2xlarge"): 1.35296,
        ("eu-west-1", "p4d.24xlarge"): 23.71569,
        ("us-west-2", "g6.xlarge"): 0.8048,
        ("us-west-2", "p4d.24xlarge"): 21.95764,
        ("us-west-2", "p5.48xlarge"): 55.04,
    }
)


def _r(prices: dict[str, float]) -> Mapping[str, float]:
    return MappingProxyType(prices)


# region -> instance type -> USD per instance-hour, as the snapshot lists them (before the cut for
# CUT_IN_JUNE_2025). Kept one region per block, a few types per line: it is data, read by eye.
# fmt: off
SNAPSHOT_ON_DEMAND_HOURLY_USD: Mapping[str, Mapping[str, float]] = MappingProxyType(
    {
        "ap-northeast-1": _r(
            {
                "g5.xlarge": 1.459, "g5.2xlarge": 1.75776, "g5.4xlarge": 2.35528, "g5.8xlarge": 3.55033,
                "g5.16xlarge": 5.94042, "g5.12xlarge": 8.22609, "g5.24xlarge": 11.81123, "g5.48xlarge": 23.62246,
                "g6.xlarge": 1.1672, "g6.2xlarge": 1.41781, "g6.4xlarge": 1.91903, "g6.8xlarge": 2.92148,
                "g6.16xlarge": 4.92637, "g6.12xlarge": 6.67369, "g6.24xlarge": 9.68103, "g6.48xlarge": 19.36206,
                "g6e.xlarge": 2.699, "g6e.2xlarge": 3.25168, "g6e.4xlarge": 4.35703, "g6e.8xlarge": 6.56775,
                "g6e.16xlarge": 10.98917, "g6e.12xlarge": 15.21742, "g6e.24xlarge": 21.84956,
                "g6e.48xlarge": 43.69912, "p4d.24xlarge": 44.92215, "p5.48xlarge": 123.19496, "p5en.48xlarge": 106.0,
                "m7i.2xlarge": 0.5208,
            }
        ),
        "ap-northeast-2": _r(
            {
                "g5.xlarge": 1.237, "g5.2xlarge": 1.4903, "g5.4xlarge": 1.99691, "g5.8xlarge": 3.01012,
                "g5.16xlarge": 5.03653, "g5.12xlarge": 6.97442, "g5.24xlarge": 10.01404, "g5.48xlarge": 20.02809,
                "g6.xlarge": 0.9896, "g6.2xlarge": 1.20208, "g6.4xlarge": 1.62704, "g6.8xlarge": 2.47695,
                "g6.16xlarge": 4.17678, "g6.12xlarge": 5.65823, "g6.24xlarge": 8.20797, "g6.48xlarge": 16.41595,
                "g6e.xlarge": 2.288, "g6e.2xlarge": 2.75652, "g6e.4xlarge": 3.69355, "g6e.8xlarge": 5.56762,
                "g6e.16xlarge": 9.31575, "g6e.12xlarge": 12.90014, "g6e.24xlarge": 18.52234,
                "g6e.48xlarge": 37.04468, "p4d.24xlarge": 45.38848, "p5en.48xlarge": 117.024, "m7i.2xlarge": 0.4956,
            }
        ),
        "ap-south-1": _r(
            {
                "g5.xlarge": 1.208, "g5.2xlarge": 1.45536, "g5.4xlarge": 1.95009, "g5.8xlarge": 2.93955,
                "g5.16xlarge": 4.91846, "g5.12xlarge": 6.81091, "g5.24xlarge": 9.77928, "g5.48xlarge": 19.55855,
                "g6.xlarge": 0.9664, "g6.2xlarge": 1.1739, "g6.4xlarge": 1.58889, "g6.8xlarge": 2.41888,
                "g6.16xlarge": 4.07886, "g6.12xlarge": 5.52558, "g6.24xlarge": 8.01555, "g6.48xlarge": 16.0311,
                "p4d.24xlarge": 39.32, "p5.48xlarge": 117.984, "p5en.48xlarge": 101.76, "m7i.2xlarge": 0.4242,
            }
        ),
        "ap-southeast-1": _r(
            {
                "m7i.2xlarge": 0.504,
            }
        ),
        "ap-southeast-2": _r(
            {
                "g5.xlarge": 1.308, "g5.2xlarge": 1.57584, "g5.4xlarge": 2.11152, "g5.8xlarge": 3.18289,
                "g5.16xlarge": 5.32561, "g5.12xlarge": 7.37473, "g5.24xlarge": 10.58882, "g5.48xlarge": 21.17764,
                "g6.xlarge": 1.0464, "g6.2xlarge": 1.27107, "g6.4xlarge": 1.72042, "g6.8xlarge": 2.61912,
                "g6.16xlarge": 4.41652, "g6.12xlarge": 5.98299, "g6.24xlarge": 8.67909, "g6.48xlarge": 17.35817,
                "p4d.24xlarge": 42.60438, "p5.48xlarge": 127.816, "m7i.2xlarge": 0.504,
            }
        ),
        "ap-southeast-3": _r(
            {
                "g5.xlarge": 1.408, "g5.2xlarge": 1.69632, "g5.4xlarge": 2.27295, "g5.8xlarge": 3.42623,
                "g5.16xlarge": 5.73277, "g5.12xlarge": 7.93854, "g5.24xlarge": 11.39836, "g5.48xlarge": 22.79672,
                "p5en.48xlarge": 117.024, "m7i.2xlarge": 0.504,
            }
        ),
        "ca-central-1": _r(
            {
                "g5.xlarge": 1.117, "g5.2xlarge": 1.34573, "g5.4xlarge": 1.80319, "g5.8xlarge": 2.71811,
                "g5.16xlarge": 4.54794, "g5.12xlarge": 6.29784, "g5.24xlarge": 9.04259, "g5.48xlarge": 18.08518,
                "g6.xlarge": 0.8936, "g6.2xlarge": 1.08547, "g6.4xlarge": 1.4692, "g6.8xlarge": 2.23666,
                "g6.16xlarge": 3.7716, "g6.12xlarge": 5.10933, "g6.24xlarge": 7.41173, "g6.48xlarge": 14.82346,
                "p5.48xlarge": 113.068, "m7i.2xlarge": 0.4494,
            }
        ),
        "eu-central-1": _r(
            {
                "g5.xlarge": 1.258, "g5.2xlarge": 1.5156, "g5.4xlarge": 2.03081, "g5.8xlarge": 3.06122,
                "g5.16xlarge": 5.12204, "g5.12xlarge": 7.09282, "g5.24xlarge": 10.18405, "g5.48xlarge": 20.3681,
                "g6.xlarge": 1.0064, "g6.2xlarge": 1.22249, "g6.4xlarge": 1.65466, "g6.8xlarge": 2.519,
                "g6.16xlarge": 4.24769, "g6.12xlarge": 5.75429, "g6.24xlarge": 8.34732, "g6.48xlarge": 16.69464,
                "g6e.xlarge": 2.327, "g6e.2xlarge": 2.8035, "g6e.4xlarge": 3.75651, "g6e.8xlarge": 5.66252,
                "g6e.16xlarge": 9.47454, "g6e.12xlarge": 13.12002, "g6e.24xlarge": 18.83806,
                "g6e.48xlarge": 37.67612, "p4d.24xlarge": 40.94475, "m7i.2xlarge": 0.483,
            }
        ),
        "eu-north-1": _r(
            {
                "g5.xlarge": 1.067, "g5.2xlarge": 1.28549, "g5.4xlarge": 1.72247, "g5.8xlarge": 2.59644,
                "g5.16xlarge": 4.34437, "g5.12xlarge": 6.01593, "g5.24xlarge": 8.63782, "g5.48xlarge": 17.27564,
                "g6.xlarge": 0.8536, "g6.2xlarge": 1.03688, "g6.4xlarge": 1.40343, "g6.8xlarge": 2.13655,
                "g6.16xlarge": 3.60277, "g6.12xlarge": 4.88062, "g6.24xlarge": 7.07996, "g6.48xlarge": 14.15992,
                "g6e.xlarge": 1.974, "g6e.2xlarge": 2.37822, "g6e.4xlarge": 3.18666, "g6e.8xlarge": 4.80353,
                "g6e.16xlarge": 8.03728, "g6e.12xlarge": 11.12975, "g6e.24xlarge": 15.98037,
                "g6e.48xlarge": 31.96075, "p5.48xlarge": 105.2024, "m7i.2xlarge": 0.4284,
            }
        ),
        "eu-west-1": _r(
            {
                "g5.xlarge": 1.123, "g5.2xlarge": 1.35296, "g5.4xlarge": 1.81287, "g5.8xlarge": 2.73271,
                "g5.16xlarge": 4.57237, "g5.12xlarge": 6.33167, "g5.24xlarge": 9.09117, "g5.48xlarge": 18.18233,
                "p4d.24xlarge": 35.39655, "m7i.2xlarge": 0.4494,
            }
        ),
        "eu-west-2": _r(
            {
                "g5.xlarge": 1.277, "g5.2xlarge": 1.53849, "g5.4xlarge": 2.06148, "g5.8xlarge": 3.10745,
                "g5.16xlarge": 5.1994, "g5.12xlarge": 7.19994, "g5.24xlarge": 10.33786, "g5.48xlarge": 20.67572,
                "g6.xlarge": 1.0216, "g6.2xlarge": 1.24095, "g6.4xlarge": 1.67965, "g6.8xlarge": 2.55705,
                "g6.16xlarge": 4.31184, "g6.12xlarge": 5.8412, "g6.24xlarge": 8.47339, "g6.48xlarge": 16.94678,
                "p5.48xlarge": 127.816, "m7i.2xlarge": 0.4662,
            }
        ),
        "eu-west-3": _r(
            {
                "g6.xlarge": 1.0216, "g6.2xlarge": 1.24095, "g6.4xlarge": 1.67965, "g6.8xlarge": 2.55705,
                "g6.16xlarge": 4.31184, "g6.12xlarge": 5.8412, "g6.24xlarge": 8.47339, "g6.48xlarge": 16.94678,
                "m7i.2xlarge": 0.4704,
            }
        ),
        "me-central-1": _r(
            {
                "g5.xlarge": 1.234, "g5.2xlarge": 1.48669, "g5.4xlarge": 1.99206, "g5.8xlarge": 3.00282,
                "g5.16xlarge": 5.02432, "g5.12xlarge": 6.9575, "g5.24xlarge": 9.98976, "g5.48xlarge": 19.97951,
            }
        ),
        "us-east-1": _r(
            {
                "g5.xlarge": 1.006, "g5.2xlarge": 1.212, "g5.4xlarge": 1.624, "g5.8xlarge": 2.448,
                "g5.16xlarge": 4.096, "g5.12xlarge": 5.672, "g5.24xlarge": 8.144, "g5.48xlarge": 16.288,
                "g6.xlarge": 0.8048, "g6.2xlarge": 0.9776, "g6.4xlarge": 1.3232, "g6.8xlarge": 2.0144,
                "g6.16xlarge": 3.3968, "g6.12xlarge": 4.6016, "g6.24xlarge": 6.6752, "g6.48xlarge": 13.3504,
                "g6e.xlarge": 1.861, "g6e.2xlarge": 2.24208, "g6e.4xlarge": 3.00424, "g6e.8xlarge": 4.52856,
                "g6e.16xlarge": 7.57719, "g6e.12xlarge": 10.49264, "g6e.24xlarge": 15.06559,
                "g6e.48xlarge": 30.13118, "p4d.24xlarge": 32.7726, "p4de.24xlarge": 40.96575, "p5.48xlarge": 98.32,
                "p5en.48xlarge": 84.8, "m7i.2xlarge": 0.4032,
            }
        ),
        "us-east-2": _r(
            {
                "g5.xlarge": 1.006, "g5.2xlarge": 1.212, "g5.4xlarge": 1.624, "g5.8xlarge": 2.448,
                "g5.16xlarge": 4.096, "g5.12xlarge": 5.672, "g5.24xlarge": 8.144, "g5.48xlarge": 16.288,
                "g6.xlarge": 0.8048, "g6.2xlarge": 0.9776, "g6.4xlarge": 1.3232, "g6.8xlarge": 2.0144,
                "g6.16xlarge": 3.3968, "g6.12xlarge": 4.6016, "g6.24xlarge": 6.6752, "g6.48xlarge": 13.3504,
                "g6e.xlarge": 1.861, "g6e.2xlarge": 2.24208, "g6e.4xlarge": 3.00424, "g6e.8xlarge": 4.52856,
                "g6e.16xlarge": 7.57719, "g6e.12xlarge": 10.49264, "g6e.24xlarge": 15.06559,
                "g6e.48xlarge": 30.13118, "p4d.24xlarge": 32.7726, "p5.48xlarge": 98.32, "p5en.48xlarge": 84.8,
                "m7i.2xlarge": 0.4032,
            }
        ),
        "us-west-1": _r(
            {
                "p5.48xlarge": 122.9, "p5en.48xlarge": 106.0, "m7i.2xlarge": 0.4704,
            }
        ),
        "us-west-2": _r(
            {
                "g5.xlarge": 1.006, "g5.2xlarge": 1.212, "g5.4xlarge": 1.624, "g5.8xlarge": 2.448,
                "g5.16xlarge": 4.096, "g5.12xlarge": 5.672, "g5.24xlarge": 8.144, "g5.48xlarge": 16.288,
                "g6.xlarge": 0.8048, "g6.2xlarge": 0.9776, "g6.4xlarge": 1.3232, "g6.8xlarge": 2.0144,
                "g6.16xlarge": 3.3968, "g6.12xlarge": 4.6016, "g6.24xlarge": 6.6752, "g6.48xlarge": 13.3504,
                "g6e.xlarge": 1.861, "g6e.2xlarge": 2.24208, "g6e.4xlarge": 3.00424, "g6e.8xlarge": 4.52856,
                "g6e.16xlarge": 7.57719, "g6e.12xlarge": 10.49264, "g6e.24xlarge": 15.06559,
                "g6e.48xlarge": 30.13118, "p4d.24xlarge": 32.7726, "p4de.24xlarge": 40.96575, "p5.48xlarge": 98.32,
                "p5en.48xlarge": 84.8, "m7i.2xlarge": 0.4032,
            }
        ),
    }
)
# fmt: on


def listed_elsewhere_only(instance_type: str, region: str) -> bool:
    """Whether the snapshot covers `region` and lists the type in some region but not this one."""
    regional = SNAPSHOT_ON_DEMAND_HOURLY_USD.get(region)
    return regional is not None and instance_type not in regional and bool(regions_listing(instance_type))


def regions_listing(instance_type: str) -> tuple[str, ...]:
    """The regions the snapshot lists the type in, in alphabetical order."""
    return tuple(region for region, prices in SNAPSHOT_ON_DEMAND_HOURLY_USD.items() if instance_type in prices)


def gpu_families(region: str) -> tuple[str, ...]:
    """The GPU instance families the snapshot lists in `region` (m7i, the system nodes', left out)."""
    return tuple(sorted({t.split(".")[0] for t in SNAPSHOT_ON_DEMAND_HOURLY_USD.get(region, {})} - {"m7i"}))
