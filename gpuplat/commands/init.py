"""`gpuplat init [DIR]`: write a new platform project (gpuplat/scaffold) from a few choices.

The spec is compiled before anything is written; a choice the catalog rejects prints the
validator's diagnostics and writes nothing (exit 2: the flags, not a spec, were wrong).
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
import tempfile
from pathlib import Path

from gpuplat.catalog.instances import instance_type
from gpuplat.catalog.regional_prices import listed_elsewhere_only
from gpuplat.commands import EXIT_OK, EXIT_USAGE
from gpuplat.compile import Sources, compile_sources
from gpuplat.diagnostics import render_text
from gpuplat.preflight.runner import ApiAccessError, cidrs
from gpuplat.scaffold import Choices, UnsafeTarget, existing, linked, render, write
from gpuplat.scaffold.source import Source, SourceError, installed_origin, source

# Four GPUs a node, newest first: the default pool of a new project, in a type its region offers.
DEFAULT_INSTANCE_TYPES = ("g6e.12xlarge", "g6.12xlarge", "g5.12xlarge")


def default_instance_type(region: str) -> str:
    offered = [t for t in DEFAULT_INSTANCE_TYPES if not listed_elsewhere_only(t, region)]
    return (offered or DEFAULT_INSTANCE_TYPES)[0]


def _cidrs(flag: str, given: list[str] | None) -> tuple[str, ...]:
    try:
        return cidrs(",".join(given or []))
    except ApiAccessError as err:
        raise ApiAccessError(f"{flag}: {err}") from None


def _manager_cidrs(given: list[str] | None) -> tuple[str, ...]:
    """The cloud member's publicAccessCidrs: IPv4 blocks without host bits, as the spec takes them."""
    for block in given or []:
        try:
            ipaddress.IPv4Network(block, strict=True)
        except ValueError as err:
            raise ApiAccessError(f"--manager-cidr: {block} is not an IPv4 CIDR block ({err})") from None
    return tuple(given or [])


def _choices(args: argparse.Namespace, version: str, gpuplat: Source) -> Choices:
    name: str = args.name or Path(args.dir).resolve().name
    gpus = args.gpus_per_node
    itype: str = args.instance_type or default_instance_type(args.region)
    known = instance_type(itype)
    if args.provider == "aws" and not args.fleet:
        gpus = known.gpu_count if known is not None else gpus
    return Choices(
        name=name,
        provider=args.provider,
        region=args.region,
        pool=args.pool,
        instance_type=itype,
        gpu_model=args.gpu_model,
        gpus_per_node=gpus,
        nodes_max=args.nodes_max,
        team=args.team,
        cost_center=args.cost_center,
        version=version,
        runner_cidrs=_cidrs("--runner-cidr", args.runner_cidr),
        source=gpuplat,
        fleet=args.fleet,
        manager_cidrs=_manager_cidrs(args.manager_cidr),
        cloud_gpus=known.gpu_count if known is not None else gpus,
    )


def _problems(rendered: dict[str, str], stacks: tuple[str, ...]) -> str:
    """The diagnostics of every stack of the rendered project, checked in a scratch copy (from its
    root: a fleet's members read each other's stack files, as `gpuplat check` does there)."""
    with tempfile.TemporaryDirectory(prefix="gpuplat-init-") as scratch:
        root = Path(scratch)
        write(root, rendered)
        text = ""
        here = Path.cwd()
        os.chdir(root)
        try:
            for stack in stacks:
                compiled = compile_sources(Sources(Path("platform/platform.yaml"), Path("stacks") / f"{stack}.yaml"))
                if compiled.diagnostics:
                    text += render_text(compiled.diagnostics)
        finally:
            os.chdir(here)
        return "".join(dict.fromkeys(text.splitlines(keepends=True)))  # the base spec's, once for all stacks


def _target_problem(root: Path) -> str | None:
    """Why `root` cannot hold a new project, or None: a name no file system takes, a file where
    the directory or one of its parents would be."""
    for part in root.parts:
        if len(os.fsencode(part)) > 255:
            return f"the name {part[:40]}... is {len(os.fsencode(part))} bytes; a file name is at most 255"
    for above in (root, *root.parents):
        if os.path.lexists(above):
            if not above.is_dir():
                return (
                    f"{above} is a file, not a directory"
                    if above == root
                    else f"{above} is a file: no directory can be made under it"
                )
            return None
    return None


def _fleet_usage(args: argparse.Namespace) -> str | None:
    """What is wrong with the fleet flags, or None: a fleet's members fix their providers, and the
    cloud member's API is public to the manager's network only, which must be given."""
    if not args.fleet:
        return (
            "--manager-cidr is for --fleet (the network the fleet's manager reaches the cloud member from)"
            if (args.manager_cidr)
            else None
        )
    if args.provider:
        return "--fleet makes its members' providers (hub and onprem kubernetes, cloud aws); no --provider"
    if not args.manager_cidr:
        return (
            "--fleet needs --manager-cidr CIDR: the network the manager (hub) reaches the cloud member's "
            "public API endpoint from (its egress); nothing else is let in there"
        )
    return None


def _where(gpuplat: Source) -> str:
    if gpuplat.kind == "vendored":
        return f"{gpuplat.where} (commit it: CI installs it from there)"
    return gpuplat.where or f"a package index that serves it ({gpuplat.requirement})"


def cmd_init(args: argparse.Namespace, version: str) -> int:
    root = Path(args.dir)
    unfit = _target_problem(root)
    if unfit is not None:
        sys.stderr.write(f"gpuplat init: error: {unfit}; nothing written\n")
        return EXIT_USAGE
    usage = _fleet_usage(args)
    if usage:
        sys.stderr.write(f"gpuplat init: error: {usage}\n")
        return EXIT_USAGE
    args.provider = args.provider or "aws"
    if args.runner_cidr and args.provider != "aws":
        sys.stderr.write("gpuplat init: error: --runner-cidr is for provider aws (kubernetes uses a kubeconfig)\n")
        return EXIT_USAGE
    try:
        gpuplat = source(args.gpuplat_from, version, installed_origin())
    except SourceError as err:
        sys.stderr.write(f"gpuplat init: error: --gpuplat-from {args.gpuplat_from}: {err}; nothing written\n")
        return EXIT_USAGE
    try:
        choices = _choices(args, version, gpuplat)
    except ApiAccessError as err:
        sys.stderr.write(f"gpuplat init: error: {err}\n")
        return EXIT_USAGE
    rendered = render(choices)
    binary = {gpuplat.where: gpuplat.vendored} if gpuplat.kind == "vendored" else {}
    clashes = existing(root, [*rendered, *binary])
    if clashes:
        sys.stderr.write(f"gpuplat init: error: {root} already has {', '.join(clashes)}; init never overwrites\n")
        return EXIT_USAGE
    links = linked(root, [*rendered, *binary])
    if links:
        sys.stderr.write(
            f"gpuplat init: error: {', '.join(links)} in {root} is a link or a file; init writes only inside "
            "the directory and follows no link out of it; nothing written\n"
        )
        return EXIT_USAGE
    problems = _problems(rendered, choices.stacks)
    if problems:
        sys.stderr.write(problems)
        sys.stderr.write(
            "gpuplat init: error: the spec these options make is not valid without warnings; nothing written\n"
        )
        return EXIT_USAGE
    try:
        write(root, rendered, binary)
    except (UnsafeTarget, OSError) as err:  # a race with another writer, or the file system's refusal
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        where = f" ({err.filename})" if isinstance(err, OSError) and err.filename else ""
        sys.stderr.write(f"gpuplat init: error: cannot write the project in {root}: {reason}{where}\n")
        return EXIT_USAGE
    sys.stdout.write(f"wrote {'fleet' if choices.fleet else 'platform'} {choices.name} in {root}:\n")
    for path in sorted([*rendered, *binary]):
        sys.stdout.write(f"  {path}\n")
    sys.stdout.write(f"requirements.txt installs gpuplat {version} from {_where(gpuplat)}\n")
    sys.stdout.write(f"next: cd {root} && gpuplat check --stack {choices.stacks[0]}\n")
    return EXIT_OK
