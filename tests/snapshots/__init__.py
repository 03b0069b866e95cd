"""Committed previews of the shipped stacks: a pull request shows its infrastructure diff.

Regenerate after an intended change with `make snapshots` (python -m tests.snapshots).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from gpuplat.preview.stack import record_stack

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = Path(__file__).resolve().parent
STACKS = ("dev", "staging", "prod")


def snapshot_path(stack: str) -> Path:
    return SNAPSHOTS / f"{stack}.json"


def render(stack: str) -> str:
    """Exactly what `gpuplat preview --stack <stack> --format json` prints."""
    cwd = Path.cwd()
    os.chdir(ROOT)
    try:
        resources = record_stack(stack)
    finally:
        os.chdir(cwd)
    return json.dumps({"resources": [r.to_json() for r in resources]}, indent=2) + "\n"
