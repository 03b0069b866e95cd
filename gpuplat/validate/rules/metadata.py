"""Rules on `metadata`: the tags put on every cloud object."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpuplat.diagnostics import Level
from gpuplat.validate.registry import Finding, rule
from gpuplat.validate.rules._common import Data, provider, section

# Tag keys Karpenter's EC2NodeClass CRD refuses (karpenter.k8s.aws_ec2nodeclasses.yaml CEL
# rules): it sets them itself to find its instances.
_KARPENTER_TAGS = frozenset(
    {"eks:eks-cluster-name", "karpenter.sh/nodepool", "karpenter.sh/nodeclaim", "karpenter.k8s.aws/ec2nodeclass"}
)
# AWS tagging rules: letters, digits and spaces in UTF-8, and _ . : / = + - @.
_TAG_TEXT = re.compile(r"^[\w\s.:/=+\-@]*$")
# The platform names every object it creates (a readable per-resource Name tag).
_NAME_TAG = "Name"

# AWS allows 50 user tags per resource (aws:-prefixed ones do not count). metadata.tags go on
# every object, next to the tags the platform adds. The most on one object is a GPU
# instance: gpuplat:pool from its node class plus the six Karpenter sets (Name,
# karpenter.sh/nodepool, karpenter.sh/nodeclaim, karpenter.k8s.aws/ec2nodeclass,
# eks:eks-cluster-name, kubernetes.io/cluster/<cluster>); a private subnet has five (Name,
# karpenter.sh/discovery, kubernetes.io/role/internal-elb, kubernetes.io/cluster/<cluster>,
# gpuplat:zone). tests/test_rules_aws.py keeps this in step with the components.
AWS_TAGS_PER_RESOURCE = 50
PLATFORM_TAGS_MAX = 7
# The stack's aws:defaultTags (stacks/Pulumi.<env>.yaml) land on every object too, but
# `check` reads only the spec: this much room is kept for them.
STACK_DEFAULT_TAGS_ROOM = 5
SPEC_TAGS_MAX = AWS_TAGS_PER_RESOURCE - PLATFORM_TAGS_MAX - STACK_DEFAULT_TAGS_ROOM


def _tags(data: Data) -> dict[str, object]:
    """Tags that reach AWS: on provider kubernetes there is no AWS object to put them on."""
    tags = section(data, "metadata", "tags") if provider(data) == "aws" else None
    return dict(tags) if tags is not None else {}


@rule(
    "GP290",
    "tag-key-reserved",
    Level.ERROR,
    "AWS reserves the aws: tag prefix; Karpenter's EC2NodeClass rejects the tags it sets itself; the platform "
    "sets Name.",
    source="https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html#tag-restrictions",
    fix="Rename the tag key: not aws:*, Name, or one Karpenter sets on its nodes.",
)
def tag_key_reserved(data: Data) -> Iterator[Finding]:
    for key in _tags(data):
        if key.lower().startswith("aws:"):
            why = "the aws: prefix is reserved for AWS"
        elif key in _KARPENTER_TAGS or key.startswith("kubernetes.io/cluster"):
            why = "Karpenter sets this tag itself and rejects node classes that carry it"
        elif key == _NAME_TAG:
            why = "the platform sets Name on every object to that object's own name, which would replace this value"
        else:
            continue
        yield Finding(("metadata", "tags", key), f"tag key {key} cannot be used: {why}", at_key=True)


@rule(
    "GP291",
    "tag-characters",
    Level.ERROR,
    "AWS tag keys and values allow only letters, digits, spaces and _ . : / = + - @.",
    source="https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html#tag-restrictions",
    fix="Use only letters, digits, spaces and _ . : / = + - @ in the tag.",
)
def tag_characters(data: Data) -> Iterator[Finding]:
    for key, value in _tags(data).items():
        if not _TAG_TEXT.match(key):
            yield Finding(
                ("metadata", "tags", key),
                f"tag key {key!r} has characters AWS does not allow in tags (allowed: letters, digits, spaces "
                f"and _ . : / = + - @)",
                at_key=True,
            )
        elif isinstance(value, str) and not _TAG_TEXT.match(value):
            yield Finding(
                ("metadata", "tags", key),
                f"value {value!r} of tag {key} has characters AWS does not allow in tags (allowed: letters, "
                f"digits, spaces and _ . : / = + - @)",
            )


@rule(
    "GP292",
    "tags-per-resource",
    Level.ERROR,
    f"AWS allows {AWS_TAGS_PER_RESOURCE} tags per resource; metadata.tags share them with up to "
    f"{PLATFORM_TAGS_MAX} platform tags and the stack's aws:defaultTags.",
    source="https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html#tag-restrictions",
    fix="Use fewer tags in `metadata.tags` (and the stacks' aws:defaultTags).",
)
def tags_per_resource(data: Data) -> Iterator[Finding]:
    count = len(_tags(data))
    if count > SPEC_TAGS_MAX:
        yield Finding(
            ("metadata", "tags"),
            f"metadata.tags has {count} tags but at most {SPEC_TAGS_MAX} fit: AWS allows "
            f"{AWS_TAGS_PER_RESOURCE} per resource, the platform adds up to {PLATFORM_TAGS_MAX} of its own "
            f"(Name, karpenter.sh/discovery, kubernetes.io/cluster/..., gpuplat:pool, Karpenter's on GPU "
            f"instances) and {STACK_DEFAULT_TAGS_ROOM} are kept for the stack's aws:defaultTags, which check "
            f"cannot see",
            at_key=True,
        )
