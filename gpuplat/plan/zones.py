"""The fabric zone: where the fabric pools, their reservations, the hot tier and the warm tier live.

One zone holds everything a training job touches, so it never crosses a zone: the fabric
pools' cluster placement groups and capacity reservations, the FSx for Lustre file systems and
(unless `storage.warm.zoneId` names another place) the S3 Express One Zone directory bucket.
FSx and the bucket are stateful and cannot move, so the choice must be deliberate and stable:

- `target.fabricZone` when the spec names it (rule GP248: one of `target.zones`);
- otherwise the first of `target.zones` by name. Sorting makes the choice a function of the
  *set* of zones: reordering `target.zones` changes nothing, and adding a zone that sorts
  after the chosen one changes nothing either. A zone that sorts first does move the default,
  and with it FSx and the bucket (a replacement the preview's stateful gate refuses): pin
  `target.fabricZone` before adding such a zone.

Why no smarter default (the first zone that offers every fabric pool's instance type and S3
Express): in the regions AWS maps zone names to places per account (us-east-1 among them:
gpuplat/catalog/zones.py) a zone *name* says nothing about the place until the deploying
account is asked, and AWS publishes no per-zone offering table. So the planner cannot know
which names qualify; the Pulumi program asks AWS at deploy time and stops, naming the pool,
the instance type and the zone, before anything is created (gpuplat/preflight/offerings.py).
A default that depended on account data would also move when AWS adds offerings.
"""

from __future__ import annotations

from gpuplat.model import Platform, Provider


def fabric_zone(model: Platform) -> str | None:
    """The zone of the fabric and the single-zone storage tiers; None off aws or without zones."""
    target = model.target
    if target.provider is not Provider.AWS or not target.zones:
        return None
    if target.fabric_zone is not None:
        return target.fabric_zone
    return min(target.zones)
