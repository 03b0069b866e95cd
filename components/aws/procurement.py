"""Procurement: on-demand capacity reservations (ODCRs) for the plan's reserved nodes.

One reservation per plan entry (pool and zone). `targeted` matching keeps them out of reach
of anything but the pool's reserved NodePool: Karpenter finds them through the node class's
capacityReservationSelectorTerms (the tags set here) and launches into them explicitly, so
an unrelated on-demand instance of the same type cannot eat the capacity. Fabric pools'
reservations sit in the pool's cluster placement group.

Spot and on-demand need no AWS object: their NodePools are the whole of it (GpuNodePool).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.conventions import TAG_POOL
from gpuplat.model import Platform
from gpuplat.plan.types import Reservation

from .._common import child_opts
from ._common import DISCOVERY_TAG, tags


def reservation_selector(cluster: str, pool: str) -> dict[str, str]:
    """The tags that tie a reservation to one pool of one cluster (node class selector terms)."""
    return {DISCOVERY_TAG: cluster, TAG_POOL: pool}


@dataclass(frozen=True)
class ProcurementArgs:
    model: Platform
    reservations: Sequence[Reservation]  # Plan.reservations
    cluster_name: str
    placement_group_arns: Mapping[str, pulumi.Input[str]]  # fabric pools, by pool name


class Procurement(pulumi.ComponentResource):
    reservation_ids: dict[str, list[pulumi.Output[str]]]  # by pool name

    def __init__(self, name: str, args: ProcurementArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:Procurement", name, None, opts)
        model, cluster = args.model, args.cluster_name
        self.reservation_ids = {}
        for reservation in args.reservations:
            pool, zone = reservation.pool, reservation.zone
            if reservation.placement_group and pool not in args.placement_group_arns:
                raise ValueError(f"reservation of pool {pool!r} needs its placement group")
            odcr = aws.ec2.CapacityReservation(
                f"{name}-odcr-{pool}-{zone}",
                availability_zone=zone,
                instance_type=reservation.instance_type,
                instance_count=reservation.count,
                instance_platform="Linux/UNIX",
                instance_match_criteria="targeted",
                end_date_type="unlimited",
                placement_group_arn=args.placement_group_arns[pool] if reservation.placement_group else None,
                tags=tags(model, f"{cluster}-{pool}-{zone}", reservation_selector(cluster, pool)),
                opts=child_opts(self),
            )
            self.reservation_ids.setdefault(pool, []).append(odcr.id)
        self.register_outputs({"reservationIds": self.reservation_ids})
