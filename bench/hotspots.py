"""Profile one preview (record_program of GpuPlatform) of a generated spec with cProfile.

    .venv/bin/python bench/hotspots.py --size medium --provider aws [--top 30] [--out prof.pstats]
    .venv/bin/python bench/hotspots.py --size medium --bare    # the bare SDK replay instead

Prints where the time goes three ways: per area (our components, the recording engine,
the Pulumi SDK, provider SDKs, asyncio, protobuf ...) by own time; the functions with the
most own time; and our components' constructors by cumulative time. cProfile roughly
doubles the run time and weighs many small calls more heavily, so read shares, not seconds.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
for entry in (str(BENCH), str(ROOT)):
    if entry not in sys.path:
        sys.path.insert(0, entry)

from bare import replay, replay_order  # noqa: E402
from generate import PROVIDERS, SIZES, check_spec, generate, write_spec  # noqa: E402
from run import STACK, record  # noqa: E402

from gpuplat.preview.stack import PROJECT  # noqa: E402

# The worker threads that do the work: gpuplat/preview/engine.py's and bench/bare.py's.
THREADS = frozenset({"gpuplat-preview-record", "bench-bare-replay"})

# (area, substring of the file path); the first match wins.
AREAS: tuple[tuple[str, str], ...] = (
    ("components/ (ours)", str(ROOT / "components")),
    ("gpuplat/preview (engine)", str(ROOT / "gpuplat" / "preview")),
    ("gpuplat/ other", str(ROOT / "gpuplat")),
    ("pulumi_aws", "/pulumi_aws/"),
    ("pulumi_kubernetes", "/pulumi_kubernetes/"),
    ("pulumi SDK", "/pulumi/"),
    ("protobuf", "/google/protobuf/"),
    ("asyncio", "/asyncio/"),
    ("builtins / C", "~"),
)


@contextmanager
def profiling_record_thread(profiler: cProfile.Profile) -> Iterator[None]:
    """cProfile sees one thread; the recording (or replay) runs on its own, so profile that one."""
    original: Callable[[threading.Thread], None] = threading.Thread.run

    def run(self: threading.Thread) -> None:
        if self.name not in THREADS:
            original(self)
            return
        profiler.enable()
        try:
            original(self)
        finally:
            profiler.disable()

    threading.Thread.run = run
    try:
        yield
    finally:
        threading.Thread.run = original


def area_of(filename: str) -> str:
    for name, needle in AREAS:
        if needle in filename:
            return name
    return "other (stdlib ...)"


def report(stats: pstats.Stats, top: int) -> str:
    raw = stats.stats  # type: ignore[attr-defined]  # {(file, line, fn): (cc, nc, tt, ct, callers)}
    total = sum(v[2] for v in raw.values()) or 1.0
    areas: dict[str, float] = defaultdict(float)
    for (filename, _, _), (_, _, tt, _, _) in raw.items():
        areas[area_of(filename)] += tt
    lines = [f"own time by area (profiled total {total:.2f} s):"]
    for name, tt in sorted(areas.items(), key=lambda kv: -kv[1]):
        lines.append(f"  {100 * tt / total:5.1f} %  {tt:7.2f} s  {name}")

    def short(filename: str) -> str:
        for marker in ("site-packages/", str(ROOT) + "/", "/lib/python3"):
            if marker in filename:
                return filename.split(marker, 1)[1]
        return filename

    lines.append(f"\ntop {top} functions by own time:")
    ranked = sorted(raw.items(), key=lambda kv: -kv[1][2])[:top]
    for (filename, line, fn), (_, nc, tt, ct, _) in ranked:
        lines.append(f"  {tt:7.2f} s own {ct:7.2f} s cum {nc:>9} calls  {short(filename)}:{line}({fn})")

    lines.append("\nour components, cumulative (constructors and helpers over 1 % of the total):")
    ours = [
        (key, value) for key, value in raw.items() if str(ROOT / "components") in key[0] and value[3] > 0.01 * total
    ]
    for (filename, line, fn), (_, nc, _, ct, _) in sorted(ours, key=lambda kv: -kv[1][3])[:top]:
        lines.append(f"  {ct:7.2f} s cum {nc:>7} calls  {short(filename)}:{line}({fn})")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="cProfile one preview of a generated spec")
    parser.add_argument("--size", choices=sorted(SIZES), default="medium")
    parser.add_argument("--provider", choices=PROVIDERS, default="aws")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--out", type=Path, help="also save the raw pstats here")
    parser.add_argument("--bare", action="store_true", help="profile the bare SDK replay of the same resources")
    args = parser.parse_args(argv)
    size = SIZES[args.size]
    with tempfile.TemporaryDirectory(prefix="gpuplat-profile-") as tmp:
        compiled = check_spec(write_spec(generate(size.pools, size.tenants, args.provider), Path(tmp) / "spec.yaml"))
    model, plan = compiled.model, compiled.plan
    assert model is not None and plan is not None
    resources = record(model, plan)  # warm: lazy imports of the provider SDKs are not what we look for
    order = replay_order(resources)

    def target() -> object:
        return replay(order, project=PROJECT, stack=STACK) if args.bare else record(model, plan)

    target()
    start = time.perf_counter()
    target()
    plain = time.perf_counter() - start
    profiler = cProfile.Profile()
    with profiling_record_thread(profiler):
        start = time.perf_counter()
        target()
        profiled = time.perf_counter() - start
    what = "bare replay" if args.bare else "preview"
    print(
        f"{args.size} / {args.provider}: {len(resources)} resources, {what} {plain:.2f} s ({profiled:.2f} s profiled)\n"
    )
    stats = pstats.Stats(profiler)
    if args.out:
        stats.dump_stats(str(args.out))
    print(report(stats, args.top), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
