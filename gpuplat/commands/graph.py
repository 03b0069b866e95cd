"""`gpuplat graph`: the platform as a mermaid diagram or a JSON graph (render/graph.py)."""

from __future__ import annotations

import argparse
import json
import sys

from gpuplat.compile import compile_sources, resolve_sources
from gpuplat.diagnostics import render_json, render_text
from gpuplat.render.graph import platform_graph, render_mermaid


def cmd_graph(args: argparse.Namespace) -> int:
    compiled = compile_sources(resolve_sources(args.stack, args.spec, args.overlay), suppress=args.suppress)
    if not compiled.ok or compiled.model is None or compiled.plan is None:
        if args.format == "json":
            sys.stdout.write(render_json(compiled.diagnostics))
        else:
            sys.stderr.write(render_text(compiled.diagnostics))
        return 1
    sys.stderr.write(render_text(compiled.diagnostics))  # warnings only: the picture is still drawn
    graph = platform_graph(compiled.model, compiled.plan)
    if args.format == "json":
        sys.stdout.write(json.dumps(graph.to_json(), indent=2) + "\n")
    else:
        sys.stdout.write(render_mermaid(graph))
    return 0
