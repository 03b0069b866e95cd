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


def _tags(data: Data) -> dict[str, object]:
    """Tags that reach AWS: on provider kubernetes there is no AWS object to put them on."""
    tags = section(data, "metadata", "tags") if provider(data) == "aws" else None
    return dict(tags) if tags is not None else {}


@rule(
    "GP290",
    "tag-key-reserved",
    Level.ERROR,
    "AWS reserves the aws: tag prefix; Karpenter's EC2NodeClass rejects the tags it sets itself.",
)
def tag_key_reserved(data: Data) -> Iterator[Finding]:
    for key in _tags(data):
        if key.lower().startswith("aws:"):
            why = "the aws: prefix is reserved for AWS"
        elif key in _KARPENTER_TAGS or key.startswith("kubernetes.io/cluster"):
            why = "Karpenter sets this tag itself and rejects node classes that carry it"
        else:
            continue
        yield Finding(("metadata", "tags", key), f"tag key {key} cannot be used: {why}", at_key=True)


@rule(
    "GP291",
    "tag-characters",
    Level.ERROR,
    "AWS tag keys and values allow only letters, digits, spaces and _ . : / = + - @.",
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
