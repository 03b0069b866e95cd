"""What a recording is made of: the recorded resource and the errors a recording raises.

A module of its own so that the engine (engine.py) and the pieces it loads once a recording
starts (_runtime.py, _monitor.py) all import it, and none of them imports another back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RecordedResource:
    urn: str
    type: str
    name: str
    parent: str | None
    custom: bool
    inputs: dict[str, Any]
    options: dict[str, Any]
    # register_outputs of components and the stack's exports. Not part of to_json(): the
    # preview JSON (docs/cli.md, `gpuplat preview`) lists exactly the seven fields above.
    outputs: dict[str, Any] = field(default_factory=lambda: {})

    def to_json(self) -> dict[str, Any]:
        return {
            "urn": self.urn,
            "type": self.type,
            "name": self.name,
            "parent": self.parent,
            "custom": self.custom,
            "inputs": self.inputs,
            "options": self.options,
        }


class RecordingError(Exception):
    """The program asked for something the engine would refuse or the recorder cannot do."""


class DuplicateUrnError(RecordingError):
    """Two resources with the same type, name and parent type chain, as the engine rejects."""

    def __init__(self, urn: str, type_: str, name: str) -> None:
        super().__init__(
            f"duplicate resource URN {urn}: a {type_} named {name!r} is already registered under "
            "the same parent type; give one of them a unique name"
        )
        self.urn = urn
        self.type = type_
        self.name = name


class UnsupportedFeatureError(RecordingError):
    """The program uses a Pulumi feature the offline recording cannot reproduce faithfully."""
