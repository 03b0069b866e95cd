"""The warm tier's S3 Express One Zone directory bucket: where it lives and what it is called.

Where: the spec's `storage.warm.zoneId` (an AZ ID, which `check` verifies), else the AZ ID
the fabric zone's name has in the deploying account, which only AWS knows: the program asks
(GetAvailabilityZones). That the ID has S3 Express was checked at program start, before the
first resource (components/aws/preflight.py).

What it is called: `directory_bucket_name` (the account id in it, unless the stack pins the
name it was created with). The bucket is stateful: protected and retained on delete.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from gpuplat.model import Platform

from .._common import stateful
from ._common import directory_bucket_name, tags


def warm_zone_id(parent: pulumi.Resource, model: Platform, zone: str) -> pulumi.Output[str]:
    """The directory bucket's AZ ID: the spec's (`check` knows it), else the fabric zone's ID in
    this account, which only AWS knows (preflight has checked it is one S3 Express runs in)."""
    spec_zone_id = model.storage.warm.zone_id if model.storage.warm is not None else None
    if spec_zone_id is not None:
        return pulumi.Output.from_input(spec_zone_id)
    # parent: the lookup goes through the component's (the spec region's) provider.
    zones = aws.get_availability_zones_output(opts=pulumi.InvokeOutputOptions(parent=parent))
    return pulumi.Output.all(zones.names, zones.zone_ids).apply(
        lambda v: dict(zip(v[0], v[1], strict=False))[zone]
    )


def warm_bucket(
    parent: pulumi.Resource,
    name: str,
    model: Platform,
    cluster: str,
    zone: str,
    account_id: pulumi.Input[str],
    *,
    legacy_name: bool,
) -> aws.s3.DirectoryBucket:
    """`<name>-warm`, a child of `parent` (the StorageTiers component)."""
    zone_id = warm_zone_id(parent, model, zone)
    return aws.s3.DirectoryBucket(
        f"{name}-warm",
        bucket=pulumi.Output.all(zone_id, account_id).apply(
            lambda v: directory_bucket_name(cluster, "warm", v[0], None if legacy_name else v[1])
        ),
        location=aws.s3.DirectoryBucketLocationArgs(name=zone_id, type="AvailabilityZone"),
        data_redundancy="SingleAvailabilityZone",
        type="Directory",
        tags=tags(model, f"{cluster}-warm"),
        opts=stateful(parent),
    )
