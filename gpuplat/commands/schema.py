"""`gpuplat schema`: write the installed gpuplat's JSON Schema where the spec's editor line points.

See gpuplat/editor_schema.py: after an upgrade of gpuplat the project's copy is another version's
schema; this rewrites it (the file is gpuplat's, not the team's), and says when it already is
current.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpuplat import __version__
from gpuplat.editor_schema import NotOurs, named, write

from . import EXIT_OK, EXIT_USAGE


def cmd_schema(args: argparse.Namespace) -> int:
    spec = Path(args.spec or "platform/platform.yaml")
    if not spec.is_file():
        sys.stderr.write(f"gpuplat schema: error: {spec}: no such spec file\n")
        return EXIT_USAGE
    try:
        target, changed = write(spec)
    except (OSError, NotOurs) as err:
        sys.stderr.write(f"gpuplat schema: error: not written: {err}\n")
        return EXIT_USAGE
    said = f"{'wrote' if changed else 'unchanged:'} {target}, the schema of gpuplat {__version__}"
    if named(spec) is None:
        said += f"; to have editors use it, start {spec} with `# yaml-language-server: $schema=...` naming it"
    sys.stdout.write(said + "\n")
    return EXIT_OK
