"""`gpuplat simulate` on a fleet's manager: the trace is submitted to the fleet queue and
dispatched over the workers in the fleet's order (gpuplat/simulate/dispatch.py), each worker
replayed from its own spec; the report is per worker (jobs, GPU-hours, waiting, cost). With
`--base` (the pull-request workflow) the report is of this change only, and says so."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpuplat.compile import Sources
from gpuplat.model import Platform
from gpuplat.simulate import Options, Trace
from gpuplat.simulate.dispatch import FleetMemberError, simulate_fleet
from gpuplat.simulate.fleet_report import render_json, render_markdown, render_text

from . import EXIT_INVALID, EXIT_OK, EXIT_USAGE

# What the single-platform replay offers and the fleet replay does not (yet): refused, not ignored.
_NOT_FOR_A_FLEET = {
    "plot": "--plot",
    "capacity_blocks": "--capacity-blocks",
    "gpu_placement": "--gpu-placement",
    "speedup": "--speedup",  # a factor per pool: the members' pools are not the manager's
}


def is_fleet_manager(model: Platform, sources: Sources, stack: str) -> bool:
    """The spec replayed is its fleet's manager: by the manager's `spec`, or by its stack name."""
    fleet = model.fleet
    if fleet is None:
        return False
    manager = fleet.manager_member
    if manager.spec:
        return Path(manager.spec).resolve() == sources.spec.resolve()
    return manager.project_stack == stack


def refused(args: argparse.Namespace, seeds_given: bool) -> str | None:
    """The option given that a fleet replay does not take, or None."""
    for attr, flag in _NOT_FOR_A_FLEET.items():
        if getattr(args, attr, None):
            return flag
    return "--seeds" if seeds_given and args.seeds > 1 else None


def run_fleet(args: argparse.Namespace, model: Platform, trace: Trace, options: Options) -> int:
    assert model.fleet is not None
    try:
        result = simulate_fleet(model.fleet, [t.name for t in model.tenants], trace, options)
    except FleetMemberError as err:
        sys.stderr.write(f"gpuplat simulate: error: {err}\n")
        return EXIT_INVALID
    except ValueError as err:  # UnknownTenantError: --tenant-map names no tenant of the fleet
        sys.stderr.write(f"gpuplat simulate: error: {err}\n")
        return EXIT_USAGE
    # The pull-request comment asks every stack with a trace for a delta against the base; a fleet's
    # members at the base are not replayed, and the report says so rather than failing the workflow.
    note = (
        f"this change only: the fleet is not replayed as it is at {args.base} (no delta for a fleet yet)"
        if args.base
        else ""
    )
    render = {"json": render_json, "markdown": render_markdown}.get(args.format, render_text)
    sys.stdout.write(render(result, note))
    return EXIT_OK
