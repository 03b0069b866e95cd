"""`gpuplat verify`: compile the stack, record it offline, follow every tenant's job to a GPU.

With `--recording FILE` the recording is read from FILE (a `preview --format json` document,
perhaps edited) instead; the spec still gives the model and the plan the journeys follow.

Imported only when the command runs: recording drives pulumi through the preview engine.
Exit codes: 0 every journey reaches a GPU, 1 a journey fails (or the spec is invalid, or the
program fails), 2 usage or IO (no Pulumi program here, no such chart directory, helm-python-sdk
missing while charts are given). What a deploy would first need (a stack setting, an account's
refusal) is listed beside the verdict, not a failure of it (commands/prerequisites.py).
Charts: `--charts DIR`, else the stack setting `gpuplat:localCharts`, else the chart cache
`gpuplat charts pull` fills; without a chart, the steps that read it are not checked.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gpuplat.preflight.facts import AccountFacts, FactsError, account_facts
from gpuplat.verify.journeys import verify
from gpuplat.verify.output import render_json, render_text
from gpuplat.verify.recording import RecordingInvalid, RecordingUnreadable, load_recording
from gpuplat.verify.render import RenderError, RenderUnavailable

from .common import ChartsError, chart_directory, compiled_or_report
from .prerequisites import deploy_prerequisites, report_prerequisites

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class _Unrecordable(Exception):
    """The stack could not be recorded here (no Pulumi program, ...): a usage error."""


def _recorded(args: argparse.Namespace, facts: AccountFacts | None) -> list[dict[str, Any]]:
    if args.recording:
        return load_recording(args.recording, args.stack)
    # Recording drives pulumi: imported only when the stack is recorded here.
    from gpuplat.preview.stack import PreviewError, record_stack

    try:
        # Judged, not deployed: what preflight would refuse is reported beside the verdict.
        return [r.to_json() for r in record_stack(args.stack, args.spec, args.overlay, facts=facts, judge=True)]
    except PreviewError as err:
        raise _Unrecordable(str(err)) from err


def cmd_verify(args: argparse.Namespace) -> int:
    compiled = compiled_or_report(args)
    if compiled is None or compiled.model is None or compiled.plan is None:
        return EXIT_FAILED
    try:
        facts = account_facts(args)
        charts = chart_directory(args.stack, args.charts)
        journeys = verify(compiled.model, compiled.plan, _recorded(args, facts), charts)
        prerequisites = deploy_prerequisites(args, compiled, facts)
    except RecordingInvalid as err:
        sys.stderr.write(f"gpuplat verify: {err}\n")
        return EXIT_FAILED
    except (ChartsError, FactsError, RecordingUnreadable, _Unrecordable, RenderUnavailable) as err:
        sys.stderr.write(f"gpuplat verify: error: {err}\n")
        return EXIT_USAGE
    except RenderError as err:
        sys.stderr.write(f"gpuplat verify: a chart failed to render: {err}\n")
        return EXIT_FAILED
    except Exception as err:  # a bug in a component: say where, without a traceback
        sys.stderr.write(f"gpuplat verify: the program failed: {type(err).__name__}: {err}\n")
        return EXIT_FAILED
    if args.format == "json":
        sys.stdout.write(render_json(journeys, prerequisites))
    else:
        sys.stdout.write(render_text(journeys))
        report_prerequisites("verify", prerequisites)
    return EXIT_OK if all(j.ok for j in journeys) else EXIT_FAILED
