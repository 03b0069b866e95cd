"""`gpuplat charts pull`: the catalog's Helm charts at their pinned versions, into the chart cache
`gpuplat verify` renders from (and, with --into, into a directory for gpuplat:localCharts).

Needs no project: the versions are the installed gpuplat's. Every chart asked for is tried; then
the exit code: 0 all there, 1 a repository gave another chart or version than the pin (or --into
names a directory holding another one), 2 usage or IO (an unknown key, a repository unreachable or
without the chart or version, helm-python-sdk missing).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from gpuplat.catalog import CHARTS, Chart
from gpuplat.charts.cache import cache_root
from gpuplat.charts.pull import PullError, PullRefused, PullUnavailable, describe, place, pull

from . import EXIT_INVALID, EXIT_OK, EXIT_USAGE

REPO_ENV = "GPUPLAT_CHART_REPO"


def _charts(keys: list[str]) -> list[Chart] | str:
    unknown = [k for k in keys if k not in CHARTS]
    if unknown:
        return f"no chart {', '.join(unknown)} in the catalog (charts: {', '.join(sorted(CHARTS))})"
    return [CHARTS[k] for k in (keys or CHARTS)]


def _one(chart: Chart, args: argparse.Namespace, cache: Path, repo: str | None) -> dict[str, Any]:
    row: dict[str, Any] = {"key": chart.key, "chart": chart.chart, "version": chart.version,
                           "from": describe(chart, repo), "path": None}
    try:
        pulled = pull(chart, cache, repo, plain_http=args.plain_http)
        row.update(path=str(pulled.path), status="pulled" if pulled.fresh else "cached")
        if args.into:
            row["placed"] = place(pulled, Path(args.into))
    except PullError as err:
        row.update(status="failed", detail=str(err))
    except PullRefused as err:
        row.update(status="refused", detail=str(err))
    return row


def _text(rows: list[dict[str, Any]], cache: Path, into: str | None) -> str:
    out: list[str] = []
    for row in rows:
        what = f"{row['key']} {row['version']}"
        if row["status"] == "pulled":
            out.append(f"pulled  {what} from {row['from']}\n")
        elif row["status"] == "cached":
            out.append(f"cached  {what}\n")
    good = [r for r in rows if r["status"] in ("pulled", "cached")]
    fresh = sum(r["status"] == "pulled" for r in good)
    out.append(f"{len(good)} of {len(rows)} chart(s) in {cache} ({fresh} pulled, {len(good) - fresh} already there); "
               "gpuplat verify renders from there\n")
    if into and good:
        out.append(f"copied into {into}: name it in the stack setting gpuplat:localCharts, or pass verify --charts "
                   f"{into}\n")
    return "".join(out)


def cmd_charts(args: argparse.Namespace) -> int:
    if args.charts_command != "pull":
        sys.stderr.write("gpuplat charts: error: name a subcommand: pull\n")
        return EXIT_USAGE
    charts = _charts(args.keys)
    if isinstance(charts, str):
        sys.stderr.write(f"gpuplat charts pull: error: {charts}\n")
        return EXIT_USAGE
    cache = Path(args.cache) if args.cache else cache_root()
    repo = args.repo or os.environ.get(REPO_ENV) or None
    try:
        rows = [_one(chart, args, cache, repo) for chart in charts]
    except PullUnavailable as err:
        sys.stderr.write(f"gpuplat charts pull: error: {err}\n")
        return EXIT_USAGE
    except OSError as err:
        sys.stderr.write(f"gpuplat charts pull: error: {err}\n")
        return EXIT_USAGE
    for row in rows:
        if row["status"] in ("failed", "refused"):
            sys.stderr.write(f"gpuplat charts pull: {'error' if row['status'] == 'failed' else 'refused'}: "
                             f"{row['detail']}\n")
    if args.format == "json":
        sys.stdout.write(json.dumps({"cache": str(cache), "into": args.into, "charts": rows}, indent=2) + "\n")
    else:
        sys.stdout.write(_text(rows, cache, args.into))
    statuses = {row["status"] for row in rows}
    return EXIT_INVALID if "refused" in statuses else EXIT_USAGE if "failed" in statuses else EXIT_OK
