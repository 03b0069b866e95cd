"""Semantic rules, one module per spec section; importing this package registers them all."""

from gpuplat.validate.rules import (
    autoscaling,
    fabric,
    metadata,
    pools,
    procurement,
    rails,
    s3express,
    scheduling,
    sharing,
    storage,
    target,
    tenants,
    workloads,
)

__all__ = [
    "autoscaling",
    "fabric",
    "metadata",
    "pools",
    "procurement",
    "rails",
    "s3express",
    "scheduling",
    "sharing",
    "storage",
    "target",
    "tenants",
    "workloads",
]
