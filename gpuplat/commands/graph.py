"""`gpuplat graph`: the platform as a mermaid diagram or a JSON graph (render/graph.py)."""

from __future__ import annotations

import argparse
import json
import sys

from gpuplat.render.graph import platform_graph, render_mermaid

from . import EXIT_INVALID, EXIT_OK
from .common import compiled_or_report


def cmd_graph(args: argparse.Namespace) -> int:
    compiled = compiled_or_report(args)
    if compiled is None or compiled.model is None or compiled.plan is None:
        return EXIT_INVALID
    graph = platform_graph(compiled.model, compiled.plan)
    if args.format == "json":
        sys.stdout.write(json.dumps(graph.to_json(), indent=2) + "\n")
    else:
        sys.stdout.write(render_mermaid(graph))
    return EXIT_OK
