"""`gpuplat verify`: compile the stack, record it offline, follow every tenant's job to a GPU.

Imported only when the command runs: recording drives pulumi through the preview engine.
Exit codes: 0 every journey reaches a GPU, 1 a journey fails (or the spec is invalid, or the
program fails), 2 usage or IO (no Pulumi program here, no such chart directory, helm-python-sdk
missing while charts are given). Charts: `--charts DIR`, else the stack setting
`gpuplat:localCharts`; without either, the steps that read a rendered chart are not checked.
"""

from __future__ import annotations

import argparse
import sys

from gpuplat.preflight.facts import FactsError, account_facts
from gpuplat.verify.journeys import verify
from gpuplat.verify.output import render_json, render_text
from gpuplat.verify.render import RenderError, RenderUnavailable

from .common import ChartsError, chart_directory, compiled_or_report

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def cmd_verify(args: argparse.Namespace) -> int:
    compiled = compiled_or_report(args)
    if compiled is None or compiled.model is None or compiled.plan is None:
        return EXIT_FAILED
    from gpuplat.preview.stack import PreflightStop, PreviewError, record_stack

    try:
        charts = chart_directory(args.stack, args.charts)
    except ChartsError as err:
        sys.stderr.write(f"gpuplat verify: error: {err}\n")
        return EXIT_USAGE
    try:
        resources = record_stack(args.stack, args.spec, args.overlay, facts=account_facts(args))
        journeys = verify(compiled.model, compiled.plan, [r.to_json() for r in resources], charts)
    except PreflightStop as err:
        sys.stderr.write(f"gpuplat verify: {err}\n")
        return EXIT_FAILED
    except FactsError as err:
        sys.stderr.write(f"gpuplat verify: error: {err}\n")
        return EXIT_USAGE
    except (PreviewError, RenderUnavailable) as err:
        sys.stderr.write(f"gpuplat verify: error: {err}\n")
        return EXIT_USAGE
    except RenderError as err:
        sys.stderr.write(f"gpuplat verify: a chart failed to render: {err}\n")
        return EXIT_FAILED
    except Exception as err:  # a bug in a component: say where, without a traceback
        sys.stderr.write(f"gpuplat verify: the program failed: {type(err).__name__}: {err}\n")
        return EXIT_FAILED
    sys.stdout.write(render_json(journeys) if args.format == "json" else render_text(journeys))
    return EXIT_OK if all(j.ok for j in journeys) else EXIT_FAILED
