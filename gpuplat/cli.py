"""`gpuplat check | plan | preview | policy | verify | graph` — a thin shell over the pipeline.

Exit codes (the same for every command): 0 ok (warnings allowed), 1 invalid spec / violations /
refused diff, 2 usage or IO. Nothing here imports pulumi at module level: `check` and `plan`
must stay fast and usable where pulumi is not installed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from gpuplat.compile import Compiled, UnknownStackError, check_stack_name, compile_stack
from gpuplat.diagnostics import has_errors, printable, render_github, render_json, render_text

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"gpuplat: error: {message}\n")


def _stack_name(text: str) -> str:
    try:
        return check_stack_name(text)
    except UnknownStackError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _common(p: argparse.ArgumentParser, formats: Sequence[str]) -> None:
    p.add_argument(
        "--stack", default="dev", type=_stack_name, help="stack (environment) name; overlay stacks/<stack>.yaml"
    )
    p.add_argument("--spec", default=None, help="platform spec (default platform/platform.yaml)")
    p.add_argument("--overlay", default=None, help="overlay file (default: the stack's, when it exists)")
    p.add_argument("--format", default="text", choices=formats)
    p.add_argument("--suppress", action="append", default=[], metavar="CODE", help="suppress a warning by code")


def _print_diagnostics(compiled: Compiled, fmt: str, *, only_if_any: bool = False) -> None:
    diags = compiled.diagnostics
    if only_if_any and not diags:
        return
    if fmt == "json":
        sys.stdout.write(render_json(diags))
    elif fmt == "github":
        sys.stdout.write(render_github(diags))
    else:
        (sys.stderr if only_if_any else sys.stdout).write(render_text(diags))


def _compile(args: argparse.Namespace, *, with_plan: bool = True) -> Compiled:
    from gpuplat.compile import compile_sources, resolve_sources

    if args.suppress or not with_plan:
        return compile_sources(
            resolve_sources(args.stack, args.spec, args.overlay), suppress=args.suppress, with_plan=with_plan
        )
    return compile_stack(args.stack, args.spec, args.overlay)


def cmd_check(args: argparse.Namespace) -> int:
    compiled = _compile(args)
    _print_diagnostics(compiled, args.format)
    if args.format == "text":
        errors = sum(d.is_error for d in compiled.diagnostics)
        warnings = len(compiled.diagnostics) - errors
        files = str(compiled.sources.spec) + (f" + {compiled.sources.overlay}" if compiled.sources.overlay else "")
        verdict = "invalid" if errors else "valid"
        sys.stdout.write(printable(f"{files}: {verdict} ({errors} error(s), {warnings} warning(s))\n"))
    return EXIT_INVALID if has_errors(compiled.diagnostics) else EXIT_OK


def cmd_plan(args: argparse.Namespace) -> int:
    from gpuplat.plan.report import plan_json, plan_text

    compiled = _compile(args)
    if not compiled.ok or compiled.plan is None or compiled.model is None:
        _print_diagnostics(compiled, "json" if args.format == "json" else "text")
        return EXIT_INVALID
    _print_diagnostics(compiled, "text", only_if_any=True)  # warnings go to stderr
    if args.format == "json":
        sys.stdout.write(json.dumps(plan_json(compiled.model, compiled.plan), indent=2) + "\n")
    else:
        sys.stdout.write(plan_text(compiled.model, compiled.plan))
    return EXIT_OK


Command = Callable[[argparse.Namespace], int]


def _version() -> str:
    """The installed distribution's version (what pip sees), else the package's own."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gpuplat")
    except PackageNotFoundError:
        from gpuplat import __version__

        return __version__


def _lazy(module: str, name: str) -> Command:
    """Commands that drive pulumi live in gpuplat.preview and are imported only when run."""

    def run(args: argparse.Namespace) -> int:
        import importlib

        fn: Command = getattr(importlib.import_module(module), name)
        return fn(args)

    return run


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gpuplat", description="Validate, plan and preview a GPU platform spec.")
    parser.add_argument("--version", action="version", version=f"gpuplat {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    check = sub.add_parser("check", help="validate the spec (schema + semantic rules)")
    _common(check, ["text", "json", "github"])
    check.set_defaults(run=cmd_check)
    plan = sub.add_parser("plan", help="print the derived numbers: markets, sharing, fabric, storage, cost")
    _common(plan, ["text", "json"])
    plan.set_defaults(run=cmd_plan)
    preview = sub.add_parser("preview", help="run the Pulumi program offline and print every resource")
    _common(preview, ["text", "json", "markdown"])
    preview.add_argument("--show-inputs", action="store_true", help="text format: print each resource's inputs")
    preview.add_argument("--base", metavar="GIT_REF", help="also compile the stack at GIT_REF and print the diff")
    preview.add_argument(
        "--allow-replace",
        action="store_true",
        help="with --base: do not fail on replacing or deleting stateful resources (changes AWS refuses still fail)",
    )
    preview.set_defaults(run=_lazy("gpuplat.preview.command", "cmd_preview"))
    policy = sub.add_parser("policy", help="run the policy pack offline on the recorded resources")
    _common(policy, ["text", "json"])
    policy.add_argument(
        "--config",
        metavar="FILE",
        help="policy settings, as for pulumi's --policy-pack-config (default policy/config.json if present)",
    )
    policy.set_defaults(run=_lazy("gpuplat.preview.policy_command", "cmd_policy"))
    verify = sub.add_parser("verify", help="follow every tenant's job through the emitted objects to a GPU")
    _common(verify, ["text", "json"])
    verify.set_defaults(run=_lazy("gpuplat.verify.command", "cmd_verify"))
    graph = sub.add_parser("graph", help="print a mermaid diagram of the platform")
    _common(graph, ["mermaid", "json"])
    graph.set_defaults(run=_lazy("gpuplat.graph", "cmd_graph"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    run: Command = args.run
    try:
        return run(args)
    except UnknownStackError as err:
        sys.stderr.write(f"gpuplat: error: {err}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_OK
    except Exception as err:  # a bug of ours, never the user's input: say so in one line, no traceback
        sys.stderr.write(f"gpuplat: internal error ({type(err).__name__}: {err}); please report it with the spec\n")
        return EXIT_INVALID


if __name__ == "__main__":
    sys.exit(main())
