"""Tag policies: the platform's metadata.tags and the organisation's required tag keys (config.py)."""

from __future__ import annotations

from ._base import COMPUTED, Context, Resource, as_map, resource_rule, type_tokens
from .data import SSE_CONFIGS

# pulumi-aws types without a `tags` input. Listing the exceptions fails closed: a type new to
# the components is checked until it is listed, and a test keeps the list true to pulumi_aws.
UNTAGGABLE = (
    type_tokens(
        "aws:",
        """
    cloudwatch/eventTarget:EventTarget ec2/routeTableAssociation:RouteTableAssociation iam/rolePolicy:RolePolicy
    iam/rolePolicyAttachment:RolePolicyAttachment s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration
    s3/bucketOwnershipControls:BucketOwnershipControls s3/bucketPolicy:BucketPolicy
    s3/bucketPublicAccessBlock:BucketPublicAccessBlock sqs/queuePolicy:QueuePolicy s3/bucketVersioning:BucketVersioning
""",
    )
    + SSE_CONFIGS
)


@resource_rule("aws-platform-tags", "advisory", "Taggable AWS resources carry the platform's metadata.tags")
def _tags(r: Resource, ctx: Context) -> list[str]:
    tags = r.props.get("tags")
    if not r.type.startswith("aws:") or r.type in UNTAGGABLE or tags == COMPUTED:
        return []
    if ctx.tag_keys is None:
        return [] if as_map(tags) else ["no tags"]
    missing = sorted(ctx.tag_keys - set(as_map(tags)))
    return [f"missing tags: {', '.join(missing)}"] if missing else []


@resource_rule("aws-required-tags", "mandatory", "Taggable AWS resources carry the organisation's required tag keys")
def _required_tags(r: Resource, ctx: Context) -> list[str]:
    tags = r.props.get("tags")
    if not r.type.startswith("aws:") or r.type in UNTAGGABLE or tags == COMPUTED:
        return []
    present = {k for k, v in as_map(tags).items() if v not in (None, "")}
    missing = [k for k in ctx.config.required_tags if k not in present]
    return [f"missing required tags: {', '.join(missing)}"] if missing else []
