"""The parsers of the commands that need no project: `init` (it makes one), `charts` (the chart
cache) and `explain | docs | schema` (the installed package's documentation); and what every
command's parser shares. Kept apart from gpuplat/cli.py, which wires the pipeline's commands."""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

from gpuplat import __version__
from gpuplat.commands import ABOUT, EXIT_CODES, EXIT_USAGE


def command(sub: Any, name: str) -> argparse.ArgumentParser:  # argparse keeps its subparsers type private
    summary, detail = ABOUT[name]
    return sub.add_parser(
        name,
        help=summary,
        description=f"{summary[0].upper()}{summary[1:]}. {detail}",
        epilog=EXIT_CODES,
    )


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"gpuplat: error: {message}\n")


def _init(args: argparse.Namespace) -> int:
    from gpuplat.commands.init import cmd_init

    return cmd_init(args, __version__)


def init_parser(sub: argparse._SubParsersAction[Parser]) -> None:  # pyright: ignore[reportPrivateUsage]
    init = command(sub, "init")
    init.add_argument("dir", nargs="?", default=".", help="directory of the new project (default: .)")
    init.add_argument("--name", help="platform name, prefixes resource names (default: the directory's name)")
    init.add_argument(
        "--provider", choices=["aws", "kubernetes"], help="aws or kubernetes (default: aws; none with --fleet)"
    )
    init.add_argument(
        "--fleet",
        action="store_true",
        help="a fleet project: a manager (hub) and two workers, on-prem (onprem, kubernetes) and cloud (cloud, aws); "
        "docs/fleet.md",
    )
    init.add_argument(
        "--manager-cidr",
        action="append",
        metavar="CIDR",
        help="--fleet: the network the manager reaches the cloud member's public API endpoint from (repeatable)",
    )
    init.add_argument("--region", default="us-east-1", help="aws region (default: us-east-1)")
    init.add_argument("--pool", default="gpu", help="name of the first GPU pool (default: gpu)")
    init.add_argument(
        "--instance-type",
        help="aws: the first pool's instance type (default: the first of g6e.12xlarge, g6.12xlarge, g5.12xlarge "
        "the catalog lists in the region)",
    )
    init.add_argument("--gpu-model", default="L40S-48GB", help="kubernetes: the first pool's GPU (default: L40S-48GB)")
    init.add_argument(
        "--gpus-per-node", type=int, default=8, help="kubernetes: GPUs per node of the first pool (default: 8)"
    )
    init.add_argument("--nodes-max", type=int, default=4, help="the first pool's largest size (default: 4)")
    init.add_argument("--team", default="ml-platform", help="team tag and first tenant (default: ml-platform)")
    init.add_argument("--cost-center", default="0000", help="cost-center tag (default: 0000)")
    init.add_argument(
        "--runner-cidr",
        action="append",
        metavar="CIDR",
        help="aws: the network staging and prod are deployed from, let in to their private API endpoint "
        "(repeatable; default: the VPC's own CIDR, for the self-hosted runner inside it)",
    )
    init.add_argument(
        "--gpuplat-from",
        default="auto",
        metavar="auto|wheel|vcs|index|PATH|URL",
        help="what requirements.txt installs gpuplat from: wheel (a copy in vendor/ of the wheel this gpuplat came "
        "from, or one built from its source tree), vcs (its VCS URL at the installed commit), index "
        "(gpuplat==VERSION), a wheel or source tree to vendor, or a URL; auto: how this gpuplat was installed, in a "
        "form CI can install (default: auto)",
    )
    init.set_defaults(run=_init)


def _charts(args: argparse.Namespace) -> int:
    from gpuplat.commands.charts import cmd_charts

    return cmd_charts(args)


def _add_charts(sub: Any) -> None:  # argparse keeps its subparsers type private
    charts = command(sub, "charts")
    actions = charts.add_subparsers(
        dest="charts_command", parser_class=Parser, metavar="pull", help="pull: fetch the charts into the chart cache"
    )
    pull = actions.add_parser(
        "pull",
        help="fetch the charts",
        epilog=EXIT_CODES,
        description="Fetch the catalog's charts at their pinned versions into the chart cache.",
    )
    pull.add_argument("keys", nargs="*", metavar="KEY", help="catalog chart keys (default: every chart of the catalog)")
    pull.add_argument(
        "--repo",
        metavar="URL",
        help="fetch every chart from this repository instead of its own: an "
        "HTTP chart repository, or oci://HOST/PATH holding each at oci://HOST/PATH/<chart> "
        "(default: $GPUPLAT_CHART_REPO, else each chart's repository)",
    )
    pull.add_argument("--plain-http", action="store_true", help="talk plain HTTP to an OCI registry")
    pull.add_argument(
        "--cache",
        metavar="DIR",
        help="the chart cache, DIR/<key>/<version> (default: "
        "$GPUPLAT_CHART_CACHE, else $XDG_CACHE_HOME/gpuplat/charts or ~/.cache/gpuplat/charts)",
    )
    pull.add_argument(
        "--into",
        metavar="DIR",
        help="also copy each chart to DIR/<key>, the layout of the stack "
        "setting gpuplat:localCharts and verify --charts (never replacing another chart)",
    )
    pull.add_argument("--format", default="text", choices=["text", "json"], help="output format (default: text)")
    charts.set_defaults(run=_charts, charts_command=None)


def _explain(args: argparse.Namespace) -> int:
    from gpuplat.commands.explain import cmd_explain

    return cmd_explain(args)


def _code(text: str) -> str:
    from gpuplat.commands.explain import code_argument

    return code_argument(text)


def _docs(args: argparse.Namespace) -> int:
    from gpuplat.commands.docs import cmd_docs

    return cmd_docs(args)


def _schema(args: argparse.Namespace) -> int:
    from gpuplat.commands.schema import cmd_schema

    return cmd_schema(args)


def _add_reference(sub: Any) -> None:  # argparse keeps its subparsers type private
    explain = command(sub, "explain")
    explain.add_argument("code", metavar="CODE", type=_code, help="a diagnostic code, e.g. GP201")
    explain.add_argument("--format", default="text", choices=["text", "json"], help="output format (default: text)")
    explain.set_defaults(run=_explain)
    docs = command(sub, "docs")
    docs.add_argument("topic", choices=["spec", "rules", "catalog"], help="which page")
    docs.set_defaults(run=_docs)
    schema = command(sub, "schema")
    schema.add_argument(
        "--spec",
        default=None,
        metavar="PATH",
        help="the spec whose editor line names the file (default: platform/platform.yaml of the project)",
    )
    schema.set_defaults(run=_schema)


def add_package_commands(sub: Any) -> None:  # argparse keeps its subparsers type private
    """charts, explain, docs and schema (init comes first in the help, from build_parser)."""
    _add_charts(sub)
    _add_reference(sub)
