# pyright: strict
"""AWS regions gpuplat can target, and the availability-zone letters it can place subnets in.

Source (read 2026-12-02): the `Region` enum of pulumi-aws 7.51.1 (`pulumi_aws/_enums.py`,
generated from the provider's region list), checked against the AWS General Reference page
"AWS Regions". The commercial partition `aws`, plus China (`aws-cn`) and GovCloud
(`aws-us-gov`), whose partitions the components already handle. The isolated partitions
(us-iso*, eu-isoe, eusc-de-east-1) are left out: nothing here is tested there.

Zones: an AZ name is the region plus one letter, and the largest region, us-east-1, runs
from a to f. The Network component gives every zone letter its own slice of the VPC, so
the letters it can place are a fixed set; the zone rule and the component both read it
here, so `check` never accepts a zone that `preview` cannot build.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class Region:
    name: str
    location: str
    partition: str  # aws | aws-cn | aws-us-gov: the `arn:<partition>:` of its resources


def _regions(partition: str, entries: dict[str, str]) -> dict[str, Region]:
    return {name: Region(name, location, partition) for name, location in entries.items()}


REGIONS: Mapping[str, Region] = MappingProxyType(
    {
        **_regions(
            "aws",
            {
                "us-east-1": "US East (N. Virginia)",
                "us-east-2": "US East (Ohio)",
                "us-west-1": "US West (N. California)",
                "us-west-2": "US West (Oregon)",
                "af-south-1": "Africa (Cape Town)",
                "ap-east-1": "Asia Pacific (Hong Kong)",
                "ap-east-2": "Asia Pacific (Taipei)",
                "ap-northeast-1": "Asia Pacific (Tokyo)",
                "ap-northeast-2": "Asia Pacific (Seoul)",
                "ap-northeast-3": "Asia Pacific (Osaka)",
                "ap-south-1": "Asia Pacific (Mumbai)",
                "ap-south-2": "Asia Pacific (Hyderabad)",
                "ap-southeast-1": "Asia Pacific (Singapore)",
                "ap-southeast-2": "Asia Pacific (Sydney)",
                "ap-southeast-3": "Asia Pacific (Jakarta)",
                "ap-southeast-4": "Asia Pacific (Melbourne)",
                "ap-southeast-5": "Asia Pacific (Malaysia)",
                "ap-southeast-6": "Asia Pacific (New Zealand)",
                "ap-southeast-7": "Asia Pacific (Thailand)",
                "ca-central-1": "Canada (Central)",
                "ca-west-1": "Canada West (Calgary)",
                "eu-central-1": "Europe (Frankfurt)",
                "eu-central-2": "Europe (Zurich)",
                "eu-north-1": "Europe (Stockholm)",
                "eu-south-1": "Europe (Milan)",
                "eu-south-2": "Europe (Spain)",
                "eu-west-1": "Europe (Ireland)",
                "eu-west-2": "Europe (London)",
                "eu-west-3": "Europe (Paris)",
                "il-central-1": "Israel (Tel Aviv)",
                "me-central-1": "Middle East (UAE)",
                "me-south-1": "Middle East (Bahrain)",
                "mx-central-1": "Mexico (Central)",
                "sa-east-1": "South America (Sao Paulo)",
            },
        ),
        **_regions("aws-cn", {"cn-north-1": "China (Beijing)", "cn-northwest-1": "China (Ningxia)"}),
        **_regions(
            "aws-us-gov", {"us-gov-east-1": "AWS GovCloud (US-East)", "us-gov-west-1": "AWS GovCloud (US-West)"}
        ),
    }
)

# Zone letters the Network component can place (components/aws/network.py): seven slices
# of the VPC, one per letter, a to g. Every AWS region's zones fall inside (us-east-1: a-f).
ZONE_LETTERS = "abcdefg"

# The Network component's subnet layout, which GP225 checks the VPC block against. The VPC
# is cut into 2**VPC_SLICE_BITS equal blocks: one private subnet per zone letter, and the
# last block cut into 2**PUBLIC_SLICE_BITS public subnets (one NAT gateway each).
VPC_SLICE_BITS = 3
PUBLIC_SLICE_BITS = 4
SUBNET_PREFIX_MAX = 28  # AWS: the smallest subnet is a /28
# Our floor for a zone's private subnet: /20 = 4,091 usable addresses. The VPC CNI gives every
# pod a VPC address and keeps a warm ENI of spare ones per node (~50-100 per GPU node), and a
# fabric pool puts all its nodes in one zone: a /20 holds a 32-node p5 pool with its pods.
PRIVATE_PREFIX_MAX = 20
# The smallest VPC that layout can hold: /17 (private /20, public /24).
VPC_PREFIX_MAX = min(PRIVATE_PREFIX_MAX - VPC_SLICE_BITS, SUBNET_PREFIX_MAX - VPC_SLICE_BITS - PUBLIC_SLICE_BITS)


def region(name: str) -> Region | None:
    return REGIONS.get(name)


def partition_of(name: str) -> str:
    """The ARN partition of a region; by prefix for regions newer than this table."""
    known = REGIONS.get(name)
    if known is not None:
        return known.partition
    if name.startswith("cn-"):
        return "aws-cn"
    if name.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"
