"""`gpuplat verify`: compile the stack, record it offline, follow every tenant's job to a GPU.

With `--recording FILE` the recording is read from FILE (a `preview --format json` document,
perhaps edited) instead; the spec still gives the model and the plan the journeys follow.

Imported only when the command runs: recording drives pulumi through the preview engine.
Exit codes: 0 every journey reaches a GPU, 1 a journey fails (or the spec is invalid, or the
program fails), 2 usage or IO (no Pulumi program here, helm-python-sdk missing).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gpuplat.compile import compile_sources, resolve_sources
from gpuplat.diagnostics import render_json as diagnostics_json
from gpuplat.diagnostics import render_text as diagnostics_text
from gpuplat.verify.journeys import verify
from gpuplat.verify.output import render_json, render_text
from gpuplat.verify.recording import RecordingInvalid, RecordingUnreadable, load_recording
from gpuplat.verify.render import RenderError, RenderUnavailable

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class _Unrecordable(Exception):
    """The stack could not be recorded here (no Pulumi program, ...): a usage error."""


def _recorded(args: argparse.Namespace) -> list[dict[str, Any]]:
    if args.recording:
        return load_recording(args.recording)
    # Recording drives pulumi: imported only when the stack is recorded here.
    from gpuplat.preview.stack import PreviewError, record_stack

    try:
        return [r.to_json() for r in record_stack(args.stack, args.spec, args.overlay)]
    except PreviewError as err:
        raise _Unrecordable(str(err)) from err


def cmd_verify(args: argparse.Namespace) -> int:
    compiled = compile_sources(resolve_sources(args.stack, args.spec, args.overlay), suppress=args.suppress)
    if not compiled.ok and args.format == "json":
        sys.stdout.write(diagnostics_json(compiled.diagnostics))
        return EXIT_FAILED
    sys.stderr.write(diagnostics_text(compiled.diagnostics))
    if not compiled.ok or compiled.model is None or compiled.plan is None:
        return EXIT_FAILED
    try:
        journeys = verify(compiled.model, compiled.plan, _recorded(args))
    except RecordingInvalid as err:
        sys.stderr.write(f"{err}\n")
        return EXIT_FAILED
    except (RecordingUnreadable, _Unrecordable, RenderUnavailable) as err:
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
