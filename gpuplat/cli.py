"""`gpuplat check | plan | preview | policy | verify | graph` — a thin shell over the pipeline.

Exit codes (the same for every command): 0 ok (warnings allowed), 1 invalid spec / violations /
refused diff, 2 usage or IO. The commands live in gpuplat/commands/, one module each, imported
when the command runs: nothing here imports pulumi, so `check` and `plan` stay fast and usable
where pulumi is not installed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from gpuplat.commands import EXIT_INVALID, EXIT_OK, EXIT_USAGE
from gpuplat.compile import UnknownStackError, check_stack_name


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


Command = Callable[[argparse.Namespace], int]


def _version() -> str:
    """The installed distribution's version (what pip sees), else the package's own."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gpuplat")
    except PackageNotFoundError:
        from gpuplat import __version__

        return __version__


# Each command is imported when it runs, never at start-up: check, plan and graph stay fast and
# pulumi-free, and preview, policy and verify (which record through gpuplat.preview) load
# pulumi only when asked for.


def _check(args: argparse.Namespace) -> int:
    from gpuplat.commands.check import cmd_check

    return cmd_check(args)


def _plan(args: argparse.Namespace) -> int:
    from gpuplat.commands.plan import cmd_plan

    return cmd_plan(args)


def _preview(args: argparse.Namespace) -> int:
    from gpuplat.commands.preview import cmd_preview

    return cmd_preview(args)


def _policy(args: argparse.Namespace) -> int:
    from gpuplat.commands.policy import cmd_policy

    return cmd_policy(args)


def _verify(args: argparse.Namespace) -> int:
    from gpuplat.commands.verify import cmd_verify

    return cmd_verify(args)


def _graph(args: argparse.Namespace) -> int:
    from gpuplat.commands.graph import cmd_graph

    return cmd_graph(args)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gpuplat", description="Validate, plan and preview a GPU platform spec.")
    parser.add_argument("--version", action="version", version=f"gpuplat {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    check = sub.add_parser("check", help="validate the spec (schema + semantic rules)")
    _common(check, ["text", "json", "github"])
    check.set_defaults(run=_check)
    plan = sub.add_parser("plan", help="print the derived numbers: markets, sharing, fabric, storage, cost")
    _common(plan, ["text", "json"])
    plan.set_defaults(run=_plan)
    preview = sub.add_parser("preview", help="run the Pulumi program offline and print every resource")
    _common(preview, ["text", "json", "markdown"])
    preview.add_argument("--show-inputs", action="store_true", help="text format: print each resource's inputs")
    preview.add_argument("--base", metavar="GIT_REF", help="also compile the stack at GIT_REF and print the diff")
    preview.add_argument(
        "--allow-replace",
        action="store_true",
        help="with --base: do not fail on replacing or deleting stateful resources (changes AWS refuses still fail)",
    )
    preview.set_defaults(run=_preview)
    policy = sub.add_parser("policy", help="run the policy pack offline on the recorded resources")
    _common(policy, ["text", "json"])
    policy.add_argument(
        "--config",
        metavar="FILE",
        help="policy settings, as for pulumi's --policy-pack-config (default policy/config.json if present)",
    )
    policy.set_defaults(run=_policy)
    verify = sub.add_parser("verify", help="follow every tenant's job through the emitted objects to a GPU")
    _common(verify, ["text", "json"])
    verify.add_argument(
        "--recording",
        metavar="FILE",
        help="check this recorded preview (what `preview --format json` writes) instead of recording the stack",
    )
    verify.set_defaults(run=_verify)
    graph = sub.add_parser("graph", help="print a mermaid diagram of the platform")
    _common(graph, ["mermaid", "json"])
    graph.set_defaults(run=_graph)
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
