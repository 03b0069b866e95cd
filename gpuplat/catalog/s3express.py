# pyright: strict
"""Where S3 Express One Zone runs: the regions and, in each, the availability-zone IDs.

Source (read 2026-12-03): "S3 Express One Zone Availability Zones and Regions",
https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-express-Endpoints.html (the same table as
the Zonal endpoints of directory buckets). A directory bucket can only be created in one of these
AZ IDs. AZ *names* (us-east-1a) map to IDs differently in every account, so `check` can only refuse
a region without S3 Express, or a spec-named AZ ID outside the list; for a zone *name* the program
resolves its ID at deploy time and stops before creating anything in a zone S3 Express lacks.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

S3_EXPRESS_AS_OF = "2026-12-03"
S3_EXPRESS_SOURCE = "https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-express-Endpoints.html"

S3_EXPRESS_ZONE_IDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "us-east-1": ("use1-az4", "use1-az5", "use1-az6"),
        "us-east-2": ("use2-az1", "use2-az2"),
        "us-west-2": ("usw2-az1", "usw2-az3", "usw2-az4"),
        "ap-south-1": ("aps1-az1", "aps1-az3"),
        "ap-northeast-1": ("apne1-az1", "apne1-az4"),
        "eu-west-1": ("euw1-az1", "euw1-az3"),
        "eu-north-1": ("eun1-az1", "eun1-az2", "eun1-az3"),
    }
)


def s3_express_zone_ids(region: str) -> tuple[str, ...]:
    """The AZ IDs of a region where directory buckets can live; () where S3 Express is not offered."""
    return S3_EXPRESS_ZONE_IDS.get(region, ())


def s3_express_problem(region: str, zone: str, zone_id: str) -> str | None:
    """The sentence that stops a deployment whose warm tier would land outside S3 Express, or None."""
    offered = s3_express_zone_ids(region)
    if zone_id in offered:
        return None
    if not offered:
        return f"S3 Express One Zone is not offered in {region}, so the warm tier cannot be created there"
    return (
        f"the warm tier's zone {zone} is {zone_id} in this AWS account, and S3 Express One Zone runs in "
        f"{region} only in {', '.join(offered)} (catalog as of {S3_EXPRESS_AS_OF}); set storage.warm.zoneId "
        f"to one of them, or set target.fabricZone to a zone that is one of them in this account "
        f"(aws ec2 describe-availability-zones shows each zone's ID)"
    )
