"""In-place updates that destroy data or give up capacity, which a replace/delete check misses.

The provider applies these as ordinary updates, yet:
- a shorter expiration (or a new one) in a bucket's lifecycle makes S3 delete every object past
  the new age at its next daily run, and a shorter noncurrent-version expiration removes the
  versions that were the only way back; a shorter transition moves objects to an archive class
  early (Glacier Deep Archive: hours to read back, a minimum storage charge);
- versioning suspended: from then on an overwrite or a delete loses the previous object;
- a shorter FSx automatic backup retention deletes the older backups;
- a shorter Prometheus retention drops the metrics older than the new window on its next
  compaction.
Each is refused like the replacement of a stateful resource (only with --allow-replace).

A replaced or deleted On-Demand Capacity Reservation releases capacity EC2 may not grant again
(p5 and other large GPU types are often unavailable on demand): not refused, since growing or
moving a pool needs it, but named in the text, the JSON and the pull-request comment.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, cast

LIFECYCLE = "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration"
LIFECYCLE_TYPES = frozenset({LIFECYCLE, "aws:s3/bucketLifecycleConfigurationV2:BucketLifecycleConfigurationV2"})
VERSIONING_TYPES = frozenset(
    {"aws:s3/bucketVersioning:BucketVersioning", "aws:s3/bucketVersioningV2:BucketVersioningV2"}
)
LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
RESERVATION = "aws:ec2/capacityReservation:CapacityReservation"

_HOURS = {"s": 1 / 3600, "m": 1 / 60, "h": 1, "d": 24, "w": 24 * 7, "y": 24 * 365}
_DURATION = re.compile(r"([0-9]+)([smhdwy])")


def _map(value: Any) -> Mapping[str, Any]:
    return cast("Mapping[str, Any]", value) if isinstance(value, Mapping) else {}


def _days(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _rules(inputs: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    rules = inputs.get("rules")
    items = cast("list[Any]", rules) if isinstance(rules, list) else []
    return {str(_map(r).get("id")): _map(r) for r in items if _map(r).get("status", "Enabled") == "Enabled"}


def _rule_losses(rule_id: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for key, field, what in (
        ("expiration", "days", "deletes objects"),
        ("noncurrentVersionExpiration", "noncurrentDays", "deletes noncurrent versions"),
    ):
        before, after = _days(_map(old.get(key)).get(field)), _days(_map(new.get(key)).get(field))
        if after is not None and (before is None or after < before):
            was = f"{before} days" if before is not None else "never"
            out.append(f"lifecycle rule {rule_id} {what} after {after} days (was {was}): S3 deletes the older ones")
    old_moves = {str(_map(t).get("storageClass")): _days(_map(t).get("days")) for t in _list(old.get("transitions"))}
    for t in _list(new.get("transitions")):
        cls, after = str(_map(t).get("storageClass")), _days(_map(t).get("days"))
        before = old_moves.get(cls)
        if after is not None and before is not None and after < before:
            out.append(f"lifecycle rule {rule_id} moves objects to {cls} after {after} days (was {before})")
    return out


def _list(value: Any) -> list[Any]:
    return cast("list[Any]", value) if isinstance(value, list) else []


def lifecycle_losses(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Losses of the rules in both: a new rule (a new tenant's) covers a prefix with no objects yet."""
    before, after = _rules(old), _rules(new)
    return [
        loss
        for rule_id, rule in after.items()
        if rule_id in before
        for loss in _rule_losses(rule_id, before[rule_id], rule)
    ]


def _hours(value: Any) -> float | None:
    match = _DURATION.fullmatch(value) if isinstance(value, str) else None
    return int(match[1]) * _HOURS[match[2]] if match else None


def _prometheus_retention(inputs: Mapping[str, Any]) -> Any:
    return _map(_map(_map(inputs.get("values")).get("prometheus")).get("prometheusSpec")).get("retention")


def losses(type_: str, op: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> tuple[str, ...]:
    """Why this update (or the deletion of a versioning setting) destroys data, if it does."""
    before, after = old or {}, new or {}
    if type_ in VERSIONING_TYPES and _map(before.get("versioningConfiguration")).get("status") == "Enabled":
        status = _map(after.get("versioningConfiguration")).get("status") if op != "delete" else "deleted"
        if status != "Enabled":
            return (f"bucket versioning goes from Enabled to {status}: overwritten and deleted objects are lost",)
    if op != "update":
        return ()
    if type_ in LIFECYCLE_TYPES:
        return tuple(lifecycle_losses(before, after))
    if type_ == LUSTRE:
        was, now = _days(before.get("automaticBackupRetentionDays")), _days(after.get("automaticBackupRetentionDays"))
        if was and (now or 0) < was:
            return (f"automatic backups kept {now or 0} days (was {was}): FSx deletes the older backups",)
    if type_ == HELM_RELEASE:
        was, now = _prometheus_retention(before), _prometheus_retention(after)
        was_h, now_h = _hours(was), _hours(now)
        if was_h is not None and now_h is not None and now_h < was_h:
            return (f"Prometheus retention {now} (was {was}): the older metrics are dropped",)
    return ()


def released(type_: str, op: str, old: Mapping[str, Any] | None) -> str | None:
    """What capacity a replaced or deleted reservation gives back, or None."""
    if type_ != RESERVATION or op not in ("replace", "delete"):
        return None
    inputs = old or {}
    count, kind, zone = inputs.get("instanceCount"), inputs.get("instanceType"), inputs.get("availabilityZone")
    return f"{count} x {kind} in {zone}"
