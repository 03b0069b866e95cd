"""The records of a diff: one resource's change and the input fields it touches
(diff.py computes them, gate.py annotates them, the reports render them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FieldChange:
    path: str  # dot-joined input path ("options.protect" for an option)
    old: Any
    new: Any
    replaces: bool = False
    via: str | None = None  # URN of a replaced resource whose new id/ARN lands here
    note: str | None = None  # where the value comes from, or why it forces replacement (providers.py)


@dataclass(frozen=True)
class Change:
    urn: str
    type: str
    name: str
    op: str  # create | update | replace | delete
    stateful: bool
    fields: tuple[FieldChange, ...] = ()
    delete_before_replace: bool = False
    previous_urn: str | None = None  # matched through an alias
    blocked: tuple[str, ...] = ()  # why AWS would refuse the change (gate.py): never accepted
    drains: str | None = None  # a deleted or replaced NodePool's name: Karpenter drains its nodes
    destroys: tuple[str, ...] = ()  # how this update deletes data (data_loss.py)
    releases: str | None = None  # the capacity a replaced or deleted reservation gives back

    @property
    def refused(self) -> bool:
        """Losing this resource, or data through its update, loses data: only with --allow-replace."""
        return (self.stateful and self.op in ("replace", "delete")) or bool(self.destroys)

    @property
    def cause(self) -> str | None:
        """Why a replacement happens, in one phrase: its first field that forces it."""
        forcing = next((f for f in self.fields if f.replaces), None)
        if forcing is None:
            return None
        replaced = forcing.via.rpartition("::")[2] if forcing.via else None
        if replaced and forcing.path == "provider":
            text = f"its provider {replaced} is replaced"
        elif replaced:
            text = f"{forcing.path} takes the new id of replaced {replaced}"
        else:
            text = f"{forcing.path} {_plain(forcing.old)} -> {_plain(forcing.new)}"
        return f"{text}, {forcing.note}" if forcing.note else text

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "urn": self.urn,
            "op": self.op,
            "stateful": self.stateful,
            "fields": [f.path for f in self.fields],
            "type": self.type,
            "name": self.name,
        }
        if self.op == "replace":
            out["replaceFields"] = [f.path for f in self.fields if f.replaces]
            out["replaceCause"] = self.cause
        if self.previous_urn:
            out["previousUrn"] = self.previous_urn
        if self.blocked:
            out["blocked"] = list(self.blocked)
        if self.drains:
            out["drainsNodePool"] = self.drains
        if self.destroys:
            out["destroysData"] = list(self.destroys)
        if self.releases:
            out["releasesCapacity"] = self.releases
        return out


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)
