"""`gpuplat simulate`: replay a GPU job trace against the stack's plan and scaling policy.

The trace is `--trace`, else the stack's own (`gpuplat:simulateTrace` in
`stacks/Pulumi.<stack>.yaml`, a path from the project directory). `--if-configured` prints
nothing when the stack names no trace: the pull-request workflow adds the "what this change does
to waste, waiting and cost" table for the stacks that do.
`--utilization` gives the distribution a job's busy share is drawn from where the trace has no
`utilization` column (gpuplat/simulate/utilization.py; default: Philly's).
`--capacity-blocks FILE` (or `gpuplat:simulateCapacityBlocks`) gives the booked Capacity Block
windows of capacity-block pools (gpuplat/simulate/blocks.py).
`--seeds N` replays seeds `--seed` .. `--seed`+N-1 and gives each headline number its 95 %
interval. With `--base REF` the stack's spec files as they are at REF (git show) are compiled by
this checkout's compiler (the report says so) and replayed on the same trace and seeds: each delta
is paired seed by seed, with its interval, and marked where it is inside the noise.
On a fleet's manager (its `fleet` section names it) the trace is submitted to the fleet queue
and dispatched over the workers (commands/simulate_fleet.py): one report per worker.
`--plot FILE.svg` draws the first seed's replay over time (render/replay_plot.py); `--format
json` then carries the series drawn as `timeline`.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, cast

from gpuplat.commands.base import REQUIREMENTS, running_version, version_note
from gpuplat.compile import compile_sources, resolve_sources
from gpuplat.diagnostics import Diagnostic
from gpuplat.diagnostics import render_json as diagnostics_json
from gpuplat.diagnostics import render_text as diagnostics_text
from gpuplat.input_files import InputUnreadable
from gpuplat.scaling import DRIVING_SIGNALS
from gpuplat.simulate import (
    NoTenantsError,
    Options,
    Result,
    TraceError,
    UnknownTenantError,
    load_distribution,
    load_trace,
    simulate_seeds,
)
from gpuplat.simulate.bands import DEFAULT_SEEDS
from gpuplat.simulate.blocks import Block, block_pools, load_blocks
from gpuplat.simulate.outcomes import PHILLY_OUTCOMES
from gpuplat.simulate.report import render_json, render_markdown, render_text
from gpuplat.simulate.run import GpuPlacementError

from . import EXIT_INVALID, EXIT_OK, EXIT_USAGE
from .simulate_fleet import is_fleet_manager, refused, run_fleet

TRACE_CONFIG_KEY = "gpuplat:simulateTrace"
BLOCKS_CONFIG_KEY = "gpuplat:simulateCapacityBlocks"


class BaseError(Exception):
    pass


def configured_trace(stack: str, root: Path = Path(), key: str = TRACE_CONFIG_KEY) -> str | None:
    """The stack's trace (or another path `key` names) from its Pulumi settings, or None."""
    path = root / "stacks" / f"Pulumi.{stack}.yaml"
    if not path.exists():
        return None
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    yaml: Any = YAML(typ="safe")
    try:
        loaded: Any = yaml.load(path.read_text(encoding="utf-8"))
    except (YAMLError, OSError, UnicodeDecodeError):
        return None  # the stack's settings are Pulumi's to report; here they only name no trace
    settings = cast("dict[str, Any]", loaded) if isinstance(loaded, dict) else {}
    config = settings.get("config")
    value = cast("dict[str, Any]", config).get(key) if isinstance(config, dict) else None
    return str(root / value) if isinstance(value, str) and value else None


def _tenant_map(pairs: list[str]) -> dict[str, str]:
    """`--tenant-map TRACE=SPEC` pairs; a usage error for a malformed pair or a trace tenant mapped twice."""
    out: dict[str, str] = {}
    for pair in pairs:
        trace_tenant, sep, tenant = pair.partition("=")
        if not sep or not trace_tenant or not tenant:
            raise BaseError(f"--tenant-map {pair!r}: expected TRACE_TENANT=SPEC_TENANT")
        if trace_tenant in out:
            raise BaseError(
                f"--tenant-map {pair!r}: trace tenant {trace_tenant!r} is already mapped to {out[trace_tenant]!r}; "
                "map each trace tenant once"
            )
        out[trace_tenant] = tenant  # a tenant the spec lacks: UnknownTenantError, here and at --base
    return out


MAX_SPEEDUP = 100.0  # beyond any two GPU generations' training throughput


def _speedup(values: list[str], pools: list[str]) -> dict[str, float]:
    """`--speedup [POOL=]FACTOR` values; a usage error for an unknown pool, a pool given twice or a
    factor that is not a number in (0, MAX_SPEEDUP]."""
    out: dict[str, float] = {}
    for value in values:
        pool, sep, text = value.rpartition("=")
        if sep and pool not in pools:
            raise BaseError(f"--speedup {value!r}: the spec has no pool {pool!r} (pools: {', '.join(pools)})")
        try:
            factor = float(text)
        except ValueError:
            factor = float("nan")
        if not 0 < factor <= MAX_SPEEDUP:  # NaN and inf fail too
            raise BaseError(
                f"--speedup {value!r}: expected [POOL=]FACTOR with FACTOR a number above 0 and at most {MAX_SPEEDUP:g}"
            )
        if pool in out:
            raise BaseError(f"--speedup {value!r}: {f'pool {pool!r}' if pool else 'every pool'} is given twice")
        out[pool] = factor
    return out


def _report(diagnostics: list[Diagnostic], fmt: str) -> int:
    """Bad input, positioned as the spec's diagnostics are (and as JSON on stdout under --format json)."""
    if fmt == "json":
        sys.stdout.write(diagnostics_json(diagnostics))
    sys.stderr.write(diagnostics_text(diagnostics))
    return EXIT_INVALID


def _signals(text: str) -> frozenset[str]:
    names = frozenset(n.strip() for n in text.split(",") if n.strip())
    unknown = sorted(names - set(DRIVING_SIGNALS))
    if unknown:
        raise BaseError(f"--signals {text!r}: {', '.join(unknown)} is not one of {', '.join(DRIVING_SIGNALS)}")
    return names


def _git_show(ref: str, path: Path, into: Path) -> Path | None:
    rel = path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    done = subprocess.run(["git", "show", f"{ref}:{rel}"], capture_output=True, check=False)
    if done.returncode != 0:
        return None
    target = into / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(done.stdout)
    return target


def _base_result(args: argparse.Namespace, trace_path: str, options: Options) -> tuple[list[Result], str]:
    """The base's replays, and which gpuplat compiled it (this one; and what the base pins if another)."""
    from gpuplat.preview.checkout import BaseRefError, resolve_ref  # git only: no pulumi there

    try:
        resolve_ref(args.base)  # a bad ref, or one a shallow clone lacks, said as preview and plan say it
    except BaseRefError as err:
        raise BaseError(str(err)) from None
    sources = resolve_sources(args.stack, args.spec, args.overlay)
    with tempfile.TemporaryDirectory() as tmp:
        _git_show(args.base, Path(REQUIREMENTS), Path(tmp))
        compiler = f"gpuplat {running_version()}, this change's"
        pinned = version_note(Path(tmp))
        compiler += f" ({pinned})" if pinned else ""
        try:
            spec = _git_show(args.base, sources.spec, Path(tmp))
            overlay = _git_show(args.base, sources.overlay, Path(tmp)) if sources.overlay else None
        except ValueError as err:
            raise BaseError(f"--base {args.base}: the spec is outside this checkout ({err})") from None
        if spec is None:
            raise BaseError(
                f"--base {args.base}: {sources.spec} does not exist at that commit (the spec was added or moved "
                "since), so there is no base to compare with; give a ref that has it"
            )
        compiled = compile_sources(type(sources)(spec, overlay))
        if not compiled.ok or compiled.model is None or compiled.plan is None:
            raise BaseError(f"--base {args.base}: the base spec does not compile")
        # The same windows, for the pools that hold Capacity Blocks at the base too.
        pools = block_pools(compiled.model, compiled.plan)
        blocks = tuple(b for b in options.capacity_blocks if b.pool in pools)
        base_options = dataclasses.replace(options, capacity_blocks=blocks)
        runs = simulate_seeds(
            compiled.model, compiled.plan, load_trace(trace_path), base_options, args.seeds, args.workers
        )
        return runs, compiler


def cmd_simulate(args: argparse.Namespace) -> int:
    seeds_given = args.seeds is not None
    args.seeds = DEFAULT_SEEDS if args.seeds is None else args.seeds
    args.workers = (os.cpu_count() or 1) if args.workers is None else args.workers
    if args.seeds < 1:
        sys.stderr.write(f"gpuplat simulate: error: --seeds {args.seeds}: at least one seed\n")
        return EXIT_USAGE
    if args.plot and args.all_stacks:
        sys.stderr.write("gpuplat simulate: error: --plot draws one stack's replay: give --stack, not --all-stacks\n")
        return EXIT_USAGE
    trace_path: str | None = args.trace or configured_trace(args.stack)
    if trace_path is None:
        if args.if_configured:
            return EXIT_OK
        sys.stderr.write(
            f"gpuplat simulate: error: no --trace, and stack {args.stack} names none ({TRACE_CONFIG_KEY})\n"
        )
        return EXIT_USAGE
    compiled = compile_sources(resolve_sources(args.stack, args.spec, args.overlay), suppress=args.suppress)
    if not compiled.ok or compiled.model is None or compiled.plan is None:
        return _report(compiled.diagnostics, args.format)
    fleet = is_fleet_manager(compiled.model, compiled.sources, args.stack)
    if fleet and (flag := refused(args, seeds_given)):
        sys.stderr.write(f"gpuplat simulate: error: {flag} is not offered for a fleet's manager (a fleet replay)\n")
        return EXIT_USAGE
    blocks_path: str | None = args.capacity_blocks or configured_trace(args.stack, key=BLOCKS_CONFIG_KEY)
    try:
        tenant_map = _tenant_map(args.tenant_map)
        speedup = _speedup(args.speedup, [p.name for p in compiled.model.pools])
        trace = load_trace(trace_path)
        if fleet:
            return run_fleet(args, compiled.model, trace, _options(args, tenant_map, (), speedup))
        blocks = load_blocks(blocks_path, compiled.model, compiled.plan, trace.origin) if blocks_path else ()
        options = _options(args, tenant_map, blocks, speedup)
        result = simulate_seeds(compiled.model, compiled.plan, trace, options, args.seeds, args.workers)
        base, compiler = _base_result(args, trace_path, options) if args.base else (None, "")
    except InputUnreadable as err:
        sys.stderr.write(f"gpuplat simulate: error: {err}\n")
        return EXIT_USAGE
    except OSError as err:
        sys.stderr.write(f"gpuplat simulate: error: cannot read {err.filename or 'the trace'}: {err.strerror or err}\n")
        return EXIT_USAGE
    except TraceError as err:
        return _report(err.diagnostics, args.format)
    except (BaseError, UnknownTenantError, GpuPlacementError) as err:
        sys.stderr.write(f"gpuplat simulate: error: {err}\n")
        return EXIT_USAGE
    except NoTenantsError as err:
        sys.stderr.write(f"gpuplat simulate: error: {err}\n")
        return EXIT_INVALID
    return _write(args, result, base, compiler)


def _options(
    args: argparse.Namespace, tenant_map: dict[str, str], blocks: tuple[Block, ...], speedup: dict[str, float]
) -> Options:
    options = Options(
        seed=args.seed,
        autoscaling=not args.static,
        tenant_map=tenant_map,
        lookahead=1 if args.strict_fifo else Options.lookahead,
        capacity_blocks=blocks,
        node_packing=args.node_packing,
        topology=not args.no_topology,
        gpu_placement=args.gpu_placement,
        outcomes=PHILLY_OUTCOMES if args.outcomes == "philly" else None,
        speedup=speedup,
    )
    if args.utilization:
        options = dataclasses.replace(options, utilization=load_distribution(args.utilization))
    if args.signals is not None:
        options = dataclasses.replace(options, signals=_signals(args.signals))
    return options


def _write(args: argparse.Namespace, result: list[Result], base: list[Result] | None, compiler: str) -> int:
    """The report, and the picture `--plot` asks for (JSON then carries the series drawn)."""
    if args.plot:
        try:
            _plot(result[0], Path(args.plot))
        except OSError as err:
            sys.stderr.write(f"gpuplat simulate: error: cannot write {args.plot}: {err.strerror or err}\n")
            return EXIT_USAGE
    if args.plot and args.format == "json":
        sys.stdout.write(render_json(result, base, compiler, timeline=True))
        return EXIT_OK
    render = {"json": render_json, "markdown": render_markdown}.get(args.format, render_text)
    sys.stdout.write(render(result, base, compiler))
    return EXIT_OK


def _plot(result: Result, path: Path) -> None:
    from gpuplat.render.replay_plot import plot_svg

    assert result.timeline is not None  # simulate() always samples one
    title = f"Replay of {Path(result.trace).name}: {result.jobs:,} jobs, seed {result.seed}"
    path.write_text(plot_svg(result.timeline.as_json(), title), encoding="utf-8")
