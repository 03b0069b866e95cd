"""The policy pack: one set of rules, run offline by `gpuplat policy` (and the pull-request
comment) and inside `pulumi preview` by the CrossGuard pack in policy/.

Pure Python, no pulumi. The rules live by topic (data.py: buckets, file systems, keys and the
stateful resources; cluster.py: EKS, nodes, NodePools, run-time expansion; access.py: security
groups and IAM; tags.py; budget.py); importing this package registers all of them in REGISTRY.
runner.py evaluates them over a recorded stack; config.py reads the organisation's settings.
"""

from __future__ import annotations

from . import access, budget, cluster, data, tags
from ._base import COMPUTED, REGISTRY, Context, Level, Policy, Resource
from .tags import UNTAGGABLE

__all__ = [
    "COMPUTED",
    "REGISTRY",
    "UNTAGGABLE",
    "Context",
    "Level",
    "Policy",
    "Resource",
    "access",
    "budget",
    "cluster",
    "data",
    "tags",
]
