"""Benchmarks: check / plan / preview of generated large specs, against the bare Pulumi SDK.

    .venv/bin/python bench/run.py                       # what `make bench` runs
    .venv/bin/python bench/run.py --sizes small,medium --repeat 1 --providers aws

For each size and provider: generate a valid spec (bench/generate.py), then time, best of
--repeat runs, wall clock (time.perf_counter) and process CPU (time.process_time, every
thread):

* check    load + merge + validate + model (compile_sources without the plan)
* plan     build_plan on the model
* preview  record_program of GpuPlatform(model, plan): the real components on the offline
           recording engine
* bare     the same resources registered with plain pulumi.CustomResource /
           ComponentResource under set_mocks with echo mocks (bench/bare.py)
* parse    the spec file read with libyaml (yaml.CSafeLoader): no positions, no checks

Each stage is reported against its floor, as a ratio: check and plan against `parse` (both
are one pass over what the spec says; reading it at C speed is the least either can cost),
preview against `bare` (registering the resources is the least any Pulumi program pays).

and print the table; unless --results '' it is also written to bench/results.md with the
machine, the versions and the date. See bench/README.md for the columns.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
for entry in (str(BENCH), str(ROOT)):  # this checkout's gpuplat and components, then bench/
    if entry not in sys.path:
        sys.path.insert(0, entry)

from bare import replay, replay_order  # noqa: E402
from commands import command_times  # noqa: E402
from generate import PROVIDERS, SIZES, check_spec, generate, write_spec  # noqa: E402
from timing import Timing, best_of  # noqa: E402

from components import GpuPlatform, GpuPlatformArgs  # noqa: E402
from gpuplat.model import Platform  # noqa: E402
from gpuplat.plan import Plan  # noqa: E402
from gpuplat.preview import RecordedResource, record_program  # noqa: E402
from gpuplat.preview.stack import PROJECT, stack_config  # noqa: E402

STACK = "bench"


@dataclass(frozen=True)
class Row:
    size: str
    provider: str
    pools: int
    tenants: int
    resources: int
    check: Timing
    plan: Timing
    preview: Timing
    bare: Timing
    parse: Timing
    # Each command as a user runs it (bench/commands.py): the process, start to rendered text.
    commands: dict[str, Timing]

    @property
    def ratio(self) -> float:
        return self.preview.wall / self.bare.wall if self.bare.wall > 0 else math.inf

    @property
    def cpu_ratio(self) -> float:
        return self.preview.cpu / self.bare.cpu if self.bare.cpu > 0 else math.inf

    def over_parse(self, stage: Timing) -> float:
        """CPU time of `stage` / CPU time of the libyaml parse of the spec."""
        return stage.cpu / self.parse.cpu if self.parse.cpu > 0 else math.inf


def program_config(model: Platform) -> dict[str, str]:
    """What `pulumi preview` would hand the program: a shipped stack's config, plus a kubeconfig."""
    config = stack_config("dev", ROOT)
    if model.target.region:
        config["aws:region"] = model.target.region
    config.setdefault("gpu-platform:kubeconfig", "{}")
    return config


def record(model: Platform, plan: Plan) -> list[RecordedResource]:
    def program() -> None:
        GpuPlatform(model.metadata.name, GpuPlatformArgs(model, plan))

    return record_program(program, project=PROJECT, stack=STACK, config=program_config(model))


def measure(size: str, provider: str, repeat: int, workdir: Path, log: Callable[[str], None]) -> Row:
    spec_size = SIZES[size]
    path = write_spec(generate(spec_size.pools, spec_size.tenants, provider), workdir / f"{size}-{provider}.yaml")
    # parse, check and plan as the CLI runs them: in a process without Pulumi (stages.py).
    parse, check, plan_t = stage_times(path, repeat)
    log(f"  parse    {parse.cell()}")
    log(f"  check    {check.cell()}")
    log(f"  plan     {plan_t.cell()}")
    compiled = check_spec(path)  # any error stops the run
    model, plan = compiled.model, compiled.plan
    assert model is not None and plan is not None
    preview, resources = best_of(repeat, lambda: record(model, plan))
    log(f"  preview  {preview.cell()}  {len(resources)} resources")
    order = replay_order(resources)
    bare, registered = best_of(repeat, lambda: replay(order, project=PROJECT, stack=STACK))
    log(f"  bare     {bare.cell()}  {registered} registrations")
    if registered != len(order):
        raise RuntimeError(f"bare replay registered {registered} of {len(order)} resources")
    commands = command_times(path, repeat)
    log("  " + ", ".join(f"{name} {t.cell()}" for name, t in commands.items()) + "  (whole processes)")
    return Row(
        size,
        provider,
        spec_size.pools,
        spec_size.tenants,
        len(resources),
        check,
        plan_t,
        preview,
        bare,
        parse,
        commands,
    )


def stage_times(path: Path, repeat: int) -> tuple[Timing, Timing, Timing]:
    out = subprocess.run(
        [sys.executable, str(BENCH / "stages.py"), str(path), str(repeat)], capture_output=True, text=True, check=True
    )
    times = json.loads(out.stdout.strip().splitlines()[-1])
    parse, check, plan = (Timing(*times[name]) for name in ("parse", "check", "plan"))
    return parse, check, plan


def warm_up(workdir: Path) -> None:
    """One untimed tiny run per provider: pulumi_aws / pulumi_kubernetes import their
    modules lazily, and the first recording would otherwise pay for that."""
    for provider in PROVIDERS:
        path = write_spec(generate(4, 4, provider), workdir / f"warm-{provider}.yaml")
        compiled = check_spec(path)
        assert compiled.model is not None and compiled.plan is not None
        replay(replay_order(record(compiled.model, compiled.plan)), project=PROJECT, stack=STACK)


# ---- output -------------------------------------------------------------------------------

HEADER = (
    "size",
    "provider",
    "pools",
    "tenants",
    "resources",
    "parse s",
    "check s",
    "check / parse",
    "plan s",
    "plan / parse",
    "preview s",
    "bare SDK s",
    "preview / bare",
    "preview ms/res",
    "bare ms/res",
)


def table(rows: Sequence[Row]) -> str:
    lines = [
        "| " + " | ".join(HEADER) + " |",
        "|" + "|".join("---:" if i > 1 else "---" for i in range(len(HEADER))) + "|",
    ]
    for r in rows:
        cells = (
            r.size,
            r.provider,
            str(r.pools),
            str(r.tenants),
            str(r.resources),
            r.parse.cell(),
            r.check.cell(),
            f"{r.over_parse(r.check):.1f}",
            r.plan.cell(),
            f"{r.over_parse(r.plan):.1f}",
            r.preview.cell(),
            r.bare.cell(),
            f"{r.ratio:.2f} ({r.cpu_ratio:.2f})",
            f"{1000 * r.preview.wall / r.resources:.2f}",
            f"{1000 * r.bare.wall / r.resources:.2f}",
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


PROCESS_HEADER = ("size", "provider", "pools", "tenants", "start", "check", "plan", "graph", "preview")


def process_table(rows: Sequence[Row]) -> str:
    """Each command as a whole process (start = `gpuplat --version`: interpreter and CLI imports)."""
    lines = [
        "| " + " | ".join(PROCESS_HEADER) + " |",
        "|" + "|".join("---:" if i > 1 else "---" for i in range(len(PROCESS_HEADER))) + "|",
    ]
    for r in rows:
        cells = [r.size, r.provider, str(r.pools), str(r.tenants)]
        cells += [r.commands[name].cell() if name in r.commands else "-" for name in PROCESS_HEADER[4:]]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def scaling(rows: Sequence[Row]) -> list[str]:
    """Growth exponents of CPU time between consecutive sizes of one provider: cpu ~ resources^k."""
    notes: list[str] = []
    for provider in PROVIDERS:
        mine = sorted((r for r in rows if r.provider == provider), key=lambda r: r.resources)
        for a, b in itertools.pairwise(mine):
            grow = math.log(b.resources / a.resources)
            if grow <= 0:
                continue
            parts = ", ".join(
                f"{name} {math.log(getattr(b, name).cpu / getattr(a, name).cpu) / grow:.2f}"
                for name in ("parse", "check", "plan", "preview", "bare")
                if getattr(a, name).cpu > 0 and getattr(b, name).cpu > 0
            )
            notes.append(f"- {provider} {a.size} -> {b.size} (resources x{b.resources / a.resources:.1f}): {parts}")
    return notes


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine() -> list[str]:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    versions = ", ".join(
        f"{p} {_version(p)}" for p in ("pulumi", "pulumi_aws", "pulumi_kubernetes", "protobuf", "grpcio")
    )
    # A run from an export (git archive) has no repository: BENCH_COMMIT names the code then.
    commit = os.environ.get("BENCH_COMMIT") or _git("rev-parse", "--short", "HEAD")
    dirty = ""
    if not os.environ.get("BENCH_COMMIT") and _git("status", "--porcelain", "--", "gpuplat", "components"):
        dirty = " (with uncommitted changes to gpuplat/ or components/)"
    return [
        f"- date: {datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- commit: {commit}{dirty}",
        f"- machine: {platform.machine()}, {cpus} CPUs (nproc), {platform.platform()}",
        f"- python: {platform.python_implementation()} {platform.python_version()}",
        f"- packages: {versions}",
    ]


def results_markdown(rows: Sequence[Row], argv: Sequence[str], repeat: int, load: tuple[str, str]) -> str:
    out = [
        "# Benchmark results",
        "",
        "Generated by `bench/run.py` (`make bench`); see bench/README.md for what each column means.",
        f"Command: `{' '.join(['.venv/bin/python', 'bench/run.py', *argv])}`",
        "",
        *machine(),
        f"- load average (1, 5, 15 min) before: {load[0]}; after: {load[1]}",
        "",
        f"Times in seconds, best of {repeat}: wall clock, with the process CPU time of that run in parentheses.",
        "Each stage against its floor: check / parse and plan / parse of CPU time (parse = the spec read",
        "by libyaml), preview / bare of wall time (and of CPU time).",
        "",
        table(rows),
        "## Each command as a user runs it",
        "",
        "`gpuplat <command> --spec SPEC --overlay ''` as a process of its own (bench/commands.py):",
        "interpreter start, imports, the work and the rendered text, output discarded. Wall clock",
        "around the process, its CPU time (user + system) in parentheses; best of the same runs.",
        "",
        process_table(rows),
        "## Scaling",
        "",
        "Exponent k in cpu ~ resources^k between consecutive sizes (1 = linear; CPU time, as it is",
        "less disturbed by other load than wall time):",
        "",
        *(scaling(rows) or ["- (one size only)"]),
        "",
        "## Noise",
        "",
        "These numbers come from a 2-core shared machine on which other work (editors, test",
        "suites, other benchmarks) runs at the same time; the load average above shows how busy",
        "it was. Best-of-N keeps the least disturbed run, but expect 10-30 % run-to-run spread",
        "on preview and bare, more on the millisecond-scale check and plan of small specs. Wall",
        "time well above CPU time means the run waited for a core (wall = 2 x CPU: it got half",
        "of one); the CPU times and CPU ratios are then the better guide. Compare ratios and",
        "growth exponents rather than absolute seconds across machines.",
        "",
    ]
    return "\n".join(out)


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    args_list = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description="check / plan / preview benchmarks on generated specs")
    parser.add_argument("--sizes", default="small,medium,large", help="comma list of " + ", ".join(SIZES))
    parser.add_argument("--providers", default="aws,kubernetes", help="comma list of " + ", ".join(PROVIDERS))
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best is kept (default 3)")
    parser.add_argument("--results", default=str(BENCH / "results.md"), help="markdown file to write ('' = print only)")
    args = parser.parse_args(args_list)
    sizes = [s for s in args.sizes.split(",") if s]
    providers = [p for p in args.providers.split(",") if p]
    unknown = [s for s in sizes if s not in SIZES] + [p for p in providers if p not in PROVIDERS]
    if unknown or args.repeat < 1:
        parser.error(f"unknown sizes/providers {unknown}" if unknown else "--repeat must be >= 1")

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    before = _load()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="gpuplat-bench-") as tmp:
        workdir = Path(tmp)
        log("warming up (imports, lazy SDK modules) ...")
        warm_up(workdir)
        for size in sizes:
            for provider in providers:
                log(f"{size} / {provider}: {SIZES[size].pools} pools, {SIZES[size].tenants} tenants")
                rows.append(measure(size, provider, args.repeat, workdir, log))
    text = table(rows)
    print(text, end="")
    print(process_table(rows), end="")
    for note in scaling(rows):
        print(note)
    if args.results:
        Path(args.results).write_text(results_markdown(rows, args_list, args.repeat, (before, _load())), "utf-8")
        log(f"wrote {args.results}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
