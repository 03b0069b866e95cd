"""`gpuplat simulate`: replay a GPU job trace against the stack's plan and scaling policy.

With `--base REF` the stack's spec files as they are at REF (git show) are compiled by this
checkout's compiler and replayed on the same trace and seed: the deltas are the spec change's.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from gpuplat.compile import compile_sources, resolve_sources
from gpuplat.diagnostics import render_json as diagnostics_json
from gpuplat.diagnostics import render_text as diagnostics_text
from gpuplat.simulate import Options, Result, TraceError, load_trace, simulate
from gpuplat.simulate.render import render_json, render_markdown, render_text

from . import EXIT_INVALID, EXIT_OK, EXIT_USAGE


class BaseError(Exception):
    pass


def _tenant_map(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        trace_tenant, sep, tenant = pair.partition("=")
        if not sep or not trace_tenant or not tenant:
            raise BaseError(f"--tenant-map {pair!r}: expected TRACE_TENANT=SPEC_TENANT")
        out[trace_tenant] = tenant
    return out


def _git_show(ref: str, path: Path, into: Path) -> Path | None:
    rel = path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    done = subprocess.run(["git", "show", f"{ref}:{rel}"], capture_output=True, check=False)
    if done.returncode != 0:
        return None
    target = into / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(done.stdout)
    return target


def _base_result(args: argparse.Namespace, trace_path: str, options: Options) -> Result:
    sources = resolve_sources(args.stack, args.spec, args.overlay)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            spec = _git_show(args.base, sources.spec, Path(tmp))
            overlay = _git_show(args.base, sources.overlay, Path(tmp)) if sources.overlay else None
        except ValueError as err:
            raise BaseError(f"--base {args.base}: the spec is outside this checkout ({err})") from None
        if spec is None:
            raise BaseError(f"--base {args.base}: no {sources.spec} at that ref (or not a git ref)")
        compiled = compile_sources(type(sources)(spec, overlay))
        if not compiled.ok or compiled.model is None or compiled.plan is None:
            raise BaseError(f"--base {args.base}: the base spec does not compile")
        return simulate(compiled.model, compiled.plan, load_trace(trace_path), options)


def cmd_simulate(args: argparse.Namespace) -> int:
    compiled = compile_sources(resolve_sources(args.stack, args.spec, args.overlay), suppress=args.suppress)
    if not compiled.ok or compiled.model is None or compiled.plan is None:
        sys.stdout.write(diagnostics_json(compiled.diagnostics)) if args.format == "json" else None
        sys.stderr.write(diagnostics_text(compiled.diagnostics))
        return EXIT_INVALID
    try:
        options = Options(
            seed=args.seed,
            autoscaling=not args.static,
            tenant_map=_tenant_map(args.tenant_map),
            lookahead=1 if args.strict_fifo else Options.lookahead,
        )
        trace = load_trace(args.trace)
        result = simulate(compiled.model, compiled.plan, trace, options)
        base = _base_result(args, args.trace, options) if args.base else None
    except OSError as err:
        sys.stderr.write(f"gpuplat simulate: error: cannot read the trace: {err}\n")
        return EXIT_USAGE
    except TraceError as err:
        sys.stderr.write("".join(f"{err.path}:{line}: error: {msg}\n" for line, msg in err.problems))
        return EXIT_INVALID
    except BaseError as err:
        sys.stderr.write(f"gpuplat simulate: error: {err}\n")
        return EXIT_USAGE
    render = {"json": render_json, "markdown": render_markdown}.get(args.format, render_text)
    sys.stdout.write(render(result, base))
    return EXIT_OK
