"""A tree of source positions parallel to the plain spec data.

The merged document is plain Python data (dict / list / scalars) so the schema pass and the
rules stay simple; beside it, a `Pos` tree remembers where every key and value was written.
Keeping it a tree (not a flat path -> position dict) lets the overlay merge graft whole
subtrees in O(1) when it renumbers list items.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gpuplat.diagnostics import Origin

PathPart = str | int
Path = tuple[PathPart, ...]


@dataclass
class Pos:
    value: Origin
    key: Origin | None = None  # where the mapping key of this value is written, if any
    children: dict[PathPart, Pos] = field(default_factory=lambda: {})

    def child(self, part: PathPart) -> Pos | None:
        return self.children.get(part)

    def locate(self, path: Sequence[PathPart], *, prefer_key: bool = False) -> Origin:
        """Position of `path`, or of its nearest ancestor that has one."""
        node = self
        for part in path:
            nxt = node.children.get(part)
            if nxt is None:
                return node.value
            node = nxt
        if prefer_key and node.key is not None:
            return node.key
        return node.value
