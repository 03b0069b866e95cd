"""Where the project is: the nearest directory holding Pulumi.yaml, from here upward.

The same search the Pulumi CLI makes, so `gpuplat` and `pulumi` agree on the project from any
directory inside it. Commands then run from that directory (the spec, stacks and program are
named relative to it); paths the user typed are taken from where they typed them.
"""

from __future__ import annotations

import os
from pathlib import Path

MARKERS = ("Pulumi.yaml", "Pulumi.yml")
# Pulumi.yaml's `name` in every gpuplat project (the namespace of its stack settings,
# gpu-platform:...): part of every URN a recording holds.
PULUMI_PROJECT = "gpu-platform"


def find_project(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        if any((directory / marker).is_file() for marker in MARKERS):
            return directory
    return None


def enter(root: Path, here: Path, paths: dict[str, str | None]) -> dict[str, str | None]:
    """chdir to `root`; `paths` (relative to `here`) returned absolute. An empty path stays
    empty: `--overlay ''` means no overlay."""
    moved = {key: (str((here / value).resolve()) if value else value) for key, value in paths.items()}
    os.chdir(root)
    return moved
