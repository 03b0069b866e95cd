# pyright: strict
"""A recorded preview read back from a file: what `gpuplat preview --format json` writes.

`verify --recording FILE` follows the journeys over it instead of recording the stack, so a
reviewer can edit a value a controller reads and see whether verify notices. The file is read as
every JSON input is (gpuplat/input_files.py: size, depth and number limits); then the shape
verify reads is checked: `{"resources": [{"type": str, "inputs": {...}}, ...]}`, each `urn` once
(GP035), and every URN of the stack and project verify is asked about (GP036): prod's recording
must not pass for dev's. Other keys (options, changes) are ignored. Each problem is a diagnostic
at the line and column of the value.
"""

from __future__ import annotations

from typing import Any

from gpuplat.diagnostics import Diagnostic, Level, json_path, render_text
from gpuplat.input_files import MAX_RECORDING_BYTES, InputInvalid, InputUnreadable, locate_at, read_json
from gpuplat.project import PULUMI_PROJECT


class RecordingUnreadable(Exception):
    """The file cannot be read at all (missing, a directory, no permission)."""


class RecordingInvalid(Exception):
    """The file is read but is not a recording of the stack: the message says where."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(render_text([diagnostic]).rstrip("\n"))
        self.diagnostic = diagnostic


class _Bad(Exception):
    def __init__(self, code: str, where: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.code, self.where, self.message = code, where, message


def _urn_parts(urn: str) -> tuple[str, str] | None:
    """(stack, project) of `urn:pulumi:<stack>::<project>::<type>::<name>`; None for another form."""
    if not urn.startswith("urn:pulumi:"):
        return None
    parts = urn.removeprefix("urn:pulumi:").split("::")
    return (parts[0], parts[1]) if len(parts) >= 4 else None


def _resources(document: Any, stack: str | None) -> list[dict[str, Any]]:
    listed: Any = document.get("resources") if isinstance(document, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if not isinstance(listed, list):
        raise _Bad("GP035", (), 'expected an object with a "resources" list (preview --format json)')
    resources: list[Any] = listed  # pyright: ignore[reportUnknownVariableType]
    checked: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(resources):
        where: tuple[str | int, ...] = ("resources", index)
        if not isinstance(item, dict):
            raise _Bad("GP035", where, "expected an object")
        resource: dict[str, Any] = item  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(resource.get("type"), str):
            raise _Bad("GP035", (*where, "type"), "expected a string")
        if not isinstance(resource.get("inputs"), dict):
            raise _Bad("GP035", (*where, "inputs"), "expected an object")
        urn: Any = resource.get("urn")
        if urn is not None and not isinstance(urn, str):
            raise _Bad("GP035", (*where, "urn"), "expected a string")
        if isinstance(urn, str):
            if urn in seen:
                raise _Bad(
                    "GP035", (*where, "urn"),
                    f"URN {urn} is also the URN of resources[{seen[urn]}]; each resource has its own",
                )
            seen[urn] = index
            _of_the_stack(urn, (*where, "urn"), stack)
        checked.append(resource)
    return checked


def _of_the_stack(urn: str, where: tuple[str | int, ...], stack: str | None) -> None:
    parts = _urn_parts(urn)
    if parts is None or stack is None:
        return
    of_stack, project = parts
    if of_stack != stack:
        raise _Bad("GP036", where, f"this is a recording of stack {of_stack!r}, not of {stack!r}: "
                   f"pass --stack {of_stack}, or record {stack} with `gpuplat preview --stack {stack} --format json`")
    if project != PULUMI_PROJECT:
        raise _Bad("GP036", where, f"this is a recording of Pulumi project {project!r}, not of a gpuplat "
                   f"project ({PULUMI_PROJECT})")


def load_recording(path: str, stack: str | None = None) -> list[dict[str, Any]]:
    """The resources of the recording at `path`; with `stack`, it must be that stack's."""
    try:
        document, text = read_json(path, "recording", MAX_RECORDING_BYTES)
    except InputUnreadable as err:
        raise RecordingUnreadable(str(err)) from err
    except InputInvalid as err:
        raise RecordingInvalid(err.diagnostic) from None
    try:
        return _resources(document, stack)
    except _Bad as err:
        line, col = locate_at(text, err.where)
        raise RecordingInvalid(
            Diagnostic(err.code, Level.ERROR, err.message, json_path(err.where), path, line, col)
        ) from None
