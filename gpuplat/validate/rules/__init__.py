"""Semantic rules, one module per spec section; importing this package registers them all."""

from gpuplat.validate.rules import (
    autoscaling,
    cluster_hygiene,
    fabric,
    metadata,
    pools,
    procurement,
    rails,
    reservations,
    s3express,
    scheduling,
    sharing,
    stack_settings,
    storage,
    target,
    tenants,
    workloads,
)

__all__ = [
    "autoscaling",
    "cluster_hygiene",
    "fabric",
    "metadata",
    "pools",
    "procurement",
    "rails",
    "reservations",
    "s3express",
    "scheduling",
    "sharing",
    "stack_settings",
    "storage",
    "target",
    "tenants",
    "workloads",
]
