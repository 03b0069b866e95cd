# pyright: strict
"""A recorded preview read back from a file: what `gpuplat preview --format json` writes.

`verify --recording FILE` follows the journeys over it instead of recording the stack, so a
reviewer can edit a value a controller reads and see whether verify notices. Only the shape
verify reads is checked: `{"resources": [{"type": str, "inputs": {...}}, ...]}`; every other
key (urn, options, changes) is ignored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class RecordingUnreadable(Exception):
    """The file cannot be read at all (missing, a directory, no permission)."""


class RecordingInvalid(Exception):
    """The file is read but is not a recording: the message says where."""


def _problem(path: str, position: str, message: str) -> RecordingInvalid:
    """`FILE:LINE:COL: error $.json.path: message`; the position is omitted where the JSON
    parser gives none (a wrong shape is named by its JSON path)."""
    return RecordingInvalid(f"{path}{':' + position if position else ''}: error {message}")


def _resources(document: Any, path: str) -> list[dict[str, Any]]:
    listed: Any = document.get("resources") if isinstance(document, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if not isinstance(listed, list):
        raise _problem(path, "", '$: expected an object with a "resources" list (preview --format json)')
    resources: list[Any] = listed  # pyright: ignore[reportUnknownVariableType]
    checked: list[dict[str, Any]] = []
    for index, item in enumerate(resources):
        where = f"$.resources[{index}]"
        if not isinstance(item, dict):
            raise _problem(path, "", f"{where}: expected an object")
        resource: dict[str, Any] = item  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(resource.get("type"), str):
            raise _problem(path, "", f"{where}.type: expected a string")
        if not isinstance(resource.get("inputs"), dict):
            raise _problem(path, "", f"{where}.inputs: expected an object")
        checked.append(resource)
    return checked


def load_recording(path: str) -> list[dict[str, Any]]:
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise RecordingUnreadable(f"cannot read {path}: {err}") from err
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _problem(path, "", f"$: not UTF-8 text (byte {err.start})") from err
    try:
        document = json.loads(text)
    except json.JSONDecodeError as err:
        raise _problem(path, f"{err.lineno}:{err.colno}", f"$: not JSON: {err.msg}") from err
    except RecursionError as err:
        raise _problem(path, "", "$: nested too deeply to read") from err
    return _resources(document, path)
