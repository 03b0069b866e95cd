"""`gpuplat init | check | plan | preview | policy | verify | graph | preflight | simulate | charts`,
and `explain | docs | schema` (the installed package's documentation): the CLI, a thin shell over the pipeline.

Exit codes (the same for every command): 0 ok (warnings allowed), 1 invalid spec / violations /
refused diff, 2 usage or IO. The commands live in gpuplat/commands/, one module each, imported
when the command runs: nothing here imports pulumi, so `check` and `plan` stay fast and usable
where pulumi is not installed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gpuplat import __version__
from gpuplat.cli_package import Parser, add_package_commands, command, init_parser
from gpuplat.commands import EXIT_CODES, EXIT_INVALID, EXIT_OK, EXIT_USAGE
from gpuplat.compile import UnknownStackError, check_stack_name
from gpuplat.project import enter, find_project
from gpuplat.vocabulary import GPU_PLACEMENTS

DEFAULT_STACK = "dev"
# Commands that run the project's Pulumi program: they need a project, and its stack's settings.
_PROGRAM_COMMANDS = ("preview", "policy", "verify")
# Commands that read only the installed package, make a project or fill the chart cache: no
# project, no stack.
_PACKAGE_COMMANDS = ("init", "explain", "docs", "charts")
_PATH_ARGS = ("spec", "overlay", "config")


def _stack_name(text: str) -> str:
    try:
        return check_stack_name(text)
    except UnknownStackError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _common(p: argparse.ArgumentParser, formats: Sequence[str], *, every_stack: bool = False) -> None:
    p.add_argument(
        "--stack",
        default=None,
        type=_stack_name,
        help=f"stack (environment) name; overlay stacks/<stack>.yaml (default: {DEFAULT_STACK})",
    )
    p.add_argument(
        "--spec", default=None, metavar="PATH", help="platform spec (default: platform/platform.yaml of the project)"
    )
    p.add_argument(
        "--overlay",
        default=None,
        metavar="PATH",
        help="overlay file; '' for none (default: stacks/<stack>.yaml when it exists; none with --spec)",
    )
    p.add_argument(
        "--format",
        default=formats[0],
        choices=formats,
        help=f"output format: {', '.join(formats)} (default: {formats[0]})",
    )
    p.add_argument(
        "--suppress",
        action="append",
        default=[],
        metavar="CODE[,CODE]",
        help="do not report these warnings (codes, comma-separated or repeated; errors cannot be suppressed)",
    )
    if every_stack:
        _all_stacks(p)


Command = Callable[[argparse.Namespace], int]


def _all_stacks(p: argparse.ArgumentParser) -> None:
    """check, plan, preview, policy, verify, simulate: every stack at once (gpuplat/commands/all_stacks.py)."""
    p.add_argument(
        "--all-stacks",
        action="store_true",
        help="run for every stack of the project (stacks/), each stack's result in turn, one exit code "
        '(the worst); JSON: {"stacks": [{"stack", "exitCode", "result"}]}',
    )


# Each command is imported when it runs, never at start-up: check, plan and graph stay fast and
# pulumi-free, and preview, policy and verify (which record through gpuplat.preview) load
# pulumi only when asked for.


def _check(args: argparse.Namespace) -> int:
    from gpuplat.commands.check import cmd_check

    return cmd_check(args)


def _plan(args: argparse.Namespace) -> int:
    from gpuplat.commands.plan import cmd_plan

    return cmd_plan(args)


def _plan_parser(sub: Any) -> None:  # argparse keeps its subparsers type private
    plan = command(sub, "plan")
    _common(plan, ["text", "json"], every_stack=True)
    plan.add_argument(
        "--base", metavar="GIT_REF", help="compare with the plan of the stack at GIT_REF: what changed, and why"
    )
    plan.set_defaults(run=_plan)


def _preview(args: argparse.Namespace) -> int:
    from gpuplat.commands.preview import cmd_preview

    return cmd_preview(args)


def _policy(args: argparse.Namespace) -> int:
    from gpuplat.commands.policy import cmd_policy

    return cmd_policy(args)


def _verify(args: argparse.Namespace) -> int:
    from gpuplat.commands.verify import cmd_verify

    return cmd_verify(args)


def _preflight(args: argparse.Namespace) -> int:
    from gpuplat.commands.preflight import cmd_preflight

    return cmd_preflight(args)


def _account_facts(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--account-facts",
        metavar="FILE",
        help="answer the program's account lookups from facts `gpuplat preflight --save` wrote",
    )


def _graph(args: argparse.Namespace) -> int:
    from gpuplat.commands.graph import cmd_graph

    return cmd_graph(args)


def _simulate(args: argparse.Namespace) -> int:
    from gpuplat.commands.simulate import cmd_simulate

    return cmd_simulate(args)


def _add_simulate(sub: Any) -> None:  # argparse keeps its subparsers type private
    simulate = command(sub, "simulate")
    _common(simulate, ["text", "json", "markdown"], every_stack=True)
    simulate.add_argument(
        "--trace",
        metavar="FILE",
        help="job trace (CSV: canonical, Philly, Helios; or a Prometheus / DCGM export); "
        "default: the stack's gpuplat:simulateTrace",
    )
    simulate.add_argument(
        "--capacity-blocks",
        metavar="FILE",
        help="booked Capacity Block windows (CSV pool,start,days,instances); "
        "default: the stack's gpuplat:simulateCapacityBlocks",
    )
    simulate.add_argument(
        "--utilization",
        metavar="FILE|SHARE",
        help="distribution of a job's busy share where the trace gives none: a CDF CSV "
        "(cumulative_percent,gpu_util_percent), a DCGM / Prometheus export, or one share 0..1; "
        "default: Philly's per-minute GPU utilisation",
    )
    simulate.add_argument(
        "--workers", type=int, metavar="N", help="replay the seeds in N processes (default: one per CPU)"
    )
    simulate.add_argument(
        "--signals",
        metavar="LIST",
        help="what-if: the floor's pressure from these signals only (utilization, memory; empty: none); "
        "default: both, as the emitted rule",
    )
    simulate.add_argument("--if-configured", action="store_true", help="print nothing when the stack names no trace")
    simulate.add_argument(
        "--seed", type=int, default=0, help="first seed of the spot interruptions and busy-share draws (default: 0)"
    )
    simulate.add_argument(
        "--seeds",
        type=int,
        metavar="N",
        help="replay N seeds for the intervals of every number and delta (default: 5, gpuplat.simulate.bands)",
    )
    simulate.add_argument("--base", metavar="GIT_REF", help="also replay the stack's spec as it is at GIT_REF")
    simulate.add_argument("--static", action="store_true", help="autoscaling off: every pool at nodes.max")
    simulate.add_argument("--plot", metavar="FILE.svg", help="draw the replay over time (GPUs, queue, nodes) as an SVG")
    simulate.add_argument("--strict-fifo", action="store_true", help="Kueue StrictFIFO instead of BestEffortFIFO")
    _add_simulate_fidelity(simulate)
    simulate.add_argument(
        "--tenant-map", action="append", default=[], metavar="TRACE=TENANT", help="map a trace tenant to a spec tenant"
    )
    simulate.set_defaults(run=_simulate)


def _add_simulate_fidelity(simulate: Any) -> None:
    """How closely the replay follows a cluster: pods node by node, jobs that fail."""
    simulate.add_argument(
        "--node-packing",
        action="store_true",
        help="place pods node by node (wider jobs on whole nodes, all pods at once; fragmentation counted; "
        "a node that goes takes its pods; a fractional pool's pods GPU by GPU)",
    )
    simulate.add_argument(
        "--no-topology",
        action="store_true",
        help="with --node-packing, let a multi-node job on a fabric pool span topology domains "
        "(default: within one leaf's nodes, as the spec's fabric gives them; a what-if)",
    )
    simulate.add_argument(
        "--gpu-placement",
        choices=GPU_PLACEMENTS,
        help="with --node-packing, how a fractional pool's pods go on its GPUs: spread (least-used node and GPU "
        "first) or binpack instead of the spec's scheduling.gpuScheduler.policy, or whole: a GPU per job, no "
        "sharing (what-ifs)",
    )
    simulate.add_argument(
        "--speedup",
        action="append",
        default=[],
        metavar="[POOL=]FACTOR",
        help="a pool's GPUs (or every pool's) run the trace's work FACTOR times as fast as the GPUs it was "
        "recorded on (docs/simulate.md: published figures); default: as recorded",
    )
    simulate.add_argument(
        "--outcomes",
        choices=["philly"],
        help="draw each job's outcome (completed, failed, killed) in Philly's published shares; "
        "a failed job frees its GPUs and queues again for the rest of its run",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="gpuplat",
        description="Validate, plan and preview a GPU platform spec. `gpuplat COMMAND --help` describes a command.",
        epilog=EXIT_CODES,
    )
    parser.add_argument("--version", action="version", version=f"gpuplat {__version__}", help="print the version")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    init_parser(sub)
    check = command(sub, "check")
    _common(check, ["text", "json", "github"], every_stack=True)
    check.set_defaults(run=_check)
    _plan_parser(sub)
    preview = command(sub, "preview")
    _common(preview, ["text", "json", "markdown"], every_stack=True)
    preview.add_argument("--show-inputs", action="store_true", help="text format: print each resource's inputs")
    preview.add_argument("--base", metavar="GIT_REF", help="also compile the stack at GIT_REF and print the diff")
    preview.add_argument(
        "--allow-replace",
        action="store_true",
        help="with --base: do not fail on replacing or deleting stateful resources (changes AWS refuses still fail)",
    )
    _account_facts(preview)
    preview.set_defaults(run=_preview)
    policy = command(sub, "policy")
    _common(policy, ["text", "json"], every_stack=True)
    policy.add_argument(
        "--config",
        metavar="FILE",
        help="policy settings, as for pulumi's --policy-pack-config (default policy/config.json if present)",
    )
    policy.set_defaults(run=_policy)
    verify = command(sub, "verify")
    _common(verify, ["text", "json"], every_stack=True)
    verify.add_argument(
        "--charts",
        metavar="DIR",
        help="render the Helm charts from DIR/<chart key> (default: the stack setting gpuplat:localCharts, else "
        "the chart cache `gpuplat charts pull` fills); without a chart the steps that read it are not checked",
    )
    _account_facts(verify)
    verify.add_argument(
        "--recording",
        metavar="FILE",
        help="check this recorded preview (what `preview --format json` writes) instead of recording the stack",
    )
    verify.set_defaults(run=_verify)
    preflight = command(sub, "preflight")
    _common(preflight, ["text", "json"])
    _account_facts(preflight)
    preflight.add_argument("--save", metavar="FILE", help="write the facts read, for preview --account-facts")
    preflight.set_defaults(run=_preflight)
    graph = command(sub, "graph")
    _common(graph, ["mermaid", "json"])
    graph.set_defaults(run=_graph)
    _add_simulate(sub)
    add_package_commands(sub)
    return parser


def _locate(args: argparse.Namespace) -> str | None:
    """Run from the project's directory, found upward from here; a message when there is none."""
    if args.command not in _PROGRAM_COMMANDS and args.spec:
        return None  # a spec of its own: checked where the user stands, its positions relative to here
    here = Path.cwd()
    root = find_project(here)
    if root is None:
        return (
            f"no Pulumi.yaml in {here} or any directory above it: run gpuplat {args.command} inside a "
            "platform project, or start one with `gpuplat init`"
        )
    if root != here:
        paths = enter(root, here, {key: getattr(args, key, None) for key in _PATH_ARGS})
        for key, value in paths.items():
            if hasattr(args, key):
                setattr(args, key, value)
    return None


def _suppressions(args: argparse.Namespace) -> str | None:
    if not getattr(args, "suppress", None):
        return None
    from gpuplat.suppression import problem, split_codes

    args.suppress = split_codes(args.suppress)
    return problem(args.suppress)


def _default_stack(args: argparse.Namespace) -> None:
    if getattr(args, "stack", DEFAULT_STACK) is not None:
        return
    args.stack = DEFAULT_STACK
    if args.spec and args.command in _PROGRAM_COMMANDS:
        # The program runs as some stack, with that stack's Pulumi settings: say which one.
        sys.stderr.write(
            f"gpuplat {args.command}: --spec without --stack: running it as stack {DEFAULT_STACK}, with the "
            f"settings of stacks/Pulumi.{DEFAULT_STACK}.yaml (choose one with --stack)\n"
        )


def _run_all_stacks(run: Command, args: argparse.Namespace) -> int:
    if args.stack is not None or args.spec or args.overlay is not None:
        sys.stderr.write(
            "gpuplat: error: --all-stacks runs each stack's own spec and overlay: drop --stack, --spec, --overlay\n"
        )
        return EXIT_USAGE
    from gpuplat.commands.all_stacks import run_all_stacks

    return run_all_stacks(run, args)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    run: Command = args.run
    if args.command not in _PACKAGE_COMMANDS:
        problem = _suppressions(args) or _locate(args)
        if problem is not None:
            sys.stderr.write(f"gpuplat: error: {problem}\n")
            return EXIT_USAGE
        if getattr(args, "all_stacks", False):
            return _run_all_stacks(run, args)
        _default_stack(args)
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
