"""Rules on where the warm tier (S3 Express One Zone directory bucket) can live on aws."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplat.catalog.regions import REGIONS
from gpuplat.catalog.s3express import S3_EXPRESS_AS_OF, S3_EXPRESS_ZONE_IDS, s3_express_zone_ids
from gpuplat.diagnostics import Level
from gpuplat.validate.registry import Finding, rule
from gpuplat.validate.rules._common import Data, as_str, provider, section


def _region(data: Data) -> str | None:
    target = section(data, "target")
    region = as_str(target.get("region")) if target is not None else None
    return region if provider(data) == "aws" and region in REGIONS else None


@rule(
    "GP246",
    "warm-tier-needs-s3-express",
    Level.ERROR,
    "The aws warm tier is an S3 Express One Zone directory bucket, offered only in some regions "
    "(gpuplat/catalog/s3express.py, with its source and date).",
    source="https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-express-Endpoints.html",
    fix="Use a region that offers S3 Express One Zone (the message lists them), or remove `storage.warm`.",
)
def warm_tier_needs_s3_express(data: Data) -> Iterator[Finding]:
    region = _region(data)
    if region is None or section(data, "storage", "warm") is None or s3_express_zone_ids(region):
        return
    yield Finding(
        ("storage", "warm"),
        f"S3 Express One Zone, which holds the warm tier on aws, is not offered in {region} (it runs in "
        f"{', '.join(S3_EXPRESS_ZONE_IDS)} as of {S3_EXPRESS_AS_OF}); drop storage.warm or choose one of those regions",
        at_key=True,
    )


@rule(
    "GP247",
    "warm-zone-id-s3-express",
    Level.ERROR,
    "A directory bucket can only be created in an AZ ID where S3 Express One Zone runs "
    "(gpuplat/catalog/s3express.py, with its source and date).",
    source="https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-express-Endpoints.html",
    fix="Set `storage.warm.zoneId` to an AZ ID where S3 Express One Zone runs in the region (the message lists them).",
)
def warm_zone_id_s3_express(data: Data) -> Iterator[Finding]:
    region = _region(data)
    warm = section(data, "storage", "warm")
    zone_id = as_str(warm.get("zoneId")) if warm is not None else None
    offered = s3_express_zone_ids(region) if region is not None else ()
    if zone_id is None or not offered or zone_id in offered:
        return
    yield Finding(
        ("storage", "warm", "zoneId"),
        f"{zone_id} is not an availability zone where S3 Express One Zone runs in {region}: "
        f"choose one of {', '.join(offered)} (as of {S3_EXPRESS_AS_OF})",
    )
