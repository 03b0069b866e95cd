"""`gpuplat docs spec|rules|catalog`: the reference pages, rendered from the installed package.

The same pages as docs/spec.md, docs/rules.md and docs/catalog.md of the repository, from the
schema, the registries and the catalog this gpuplat carries: a project reads the reference of
the gpuplat it installed, wherever it is.
"""

from __future__ import annotations

import argparse
import sys

from . import EXIT_OK

TOPICS = ("spec", "rules", "catalog")


def cmd_docs(args: argparse.Namespace) -> int:
    from gpuplat.docs import render_catalog, render_rules, render_spec

    render = {"spec": render_spec, "rules": render_rules, "catalog": render_catalog}[args.topic]
    sys.stdout.write(render())
    return EXIT_OK
