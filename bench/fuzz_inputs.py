"""Fuzz the inputs beside the spec with 10^5 inputs: traces, account facts, recordings, init arguments.

    .venv/bin/python bench/fuzz_inputs.py                     # 100,000 inputs, 2 processes, seed 0
    .venv/bin/python bench/fuzz_inputs.py --inputs 2000 --jobs 1 --cli-every 50
    .venv/bin/python bench/fuzz_inputs.py --first 90000 --inputs 100000  # inputs 90,000 to 99,999

bench/fuzz.py does this for the spec. Input i is surface SURFACES[i % 10], drawn from
`random.Random(seed * 10**7 + i)`, so any input can be made again from its index. Each runs
through what the commands that read it do, in process:

- trace (4/10): a CSV (canonical, Philly, Helios shapes) of hostile cells (inf, nan, 1e308,
  +-1e18, 400-digit numbers, fractions, far dates), a Prometheus text or JSON export of hostile
  times and values or deep nesting, or a valid trace with its bytes edited: `load_trace`, and for
  an accepted one the replay on prod and its strict-JSON result, as `gpuplat simulate` does.
- facts (2/10): the facts preflight saves, mutated by structure (bench/fuzz.py's mutations), with
  NaN / Infinity / huge numbers, or as text and bytes edited: `load_facts` and preflight's checks.
- recording (2/10): dev's `preview --format json`, mutated by structure (a resource copied, its
  stack changed, a value of another type) or as text and bytes edited: `load_recording` for
  stack dev and, accepted, verify's journeys.
- init (2/10): `gpuplat init` choices of hostile text: the rendered files must read back each
  value as given, and the spec compile to positioned diagnostics or none.

Every `--cli-every`-th input also runs through the CLI in process (`simulate`, `preflight` and
`verify --account-facts`, `verify --recording`, `init` into a target that may be under a file,
too long, or hold links): exit 0, 1 or 2, no internal error, no "the program failed". Counted per
surface as bench/fuzz.py counts: accepted, rejected with a position, unpositioned, crashes, hangs
(over 60 s), over 5 s; and the workers' peak memory. Not part of the test run.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import os
import random
import re
import resource
import signal
import sys
import tempfile
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.fuzz import _edit_bytes, _edit_text, _mutate  # noqa: E402
from gpuplat.cli import main as cli  # noqa: E402
from gpuplat.compile import Sources, compile_sources, load_for_stack  # noqa: E402
from gpuplat.preflight.checks import preflight_problems  # noqa: E402
from gpuplat.preflight.facts import FactsError, load_facts  # noqa: E402
from gpuplat.scaffold import Choices, render  # noqa: E402
from gpuplat.scaffold.source import Source  # noqa: E402
from gpuplat.simulate import TraceError, load_trace, simulate  # noqa: E402
from gpuplat.simulate.report import render_json  # noqa: E402
from gpuplat.verify.journeys import verify  # noqa: E402
from gpuplat.verify.recording import RecordingInvalid, load_recording  # noqa: E402

SURFACES = ["trace"] * 4 + ["facts"] * 2 + ["recording"] * 2 + ["init"] * 2
SLOW_SECONDS, HANG_SECONDS = 5.0, 60
POSITIONED = re.compile(r"^.+?:[1-9]\d*:[1-9]\d*: error GP\d{3} ", re.MULTILINE)
_HOSTILE = ["inf", "-inf", "nan", "NaN", "1e308", "-1e308", "1e12", "1e18", "-1e18", "1" + "0" * 400, "9" * 5000,
            "0.5", "1e-320", "", " ", "0x10", "1_0", "31622401", "-1", "9999-12-31", "0001-01-01", "2017-13-40",
            '"', "'", "a,b", "\\", "\u2028", "\ufeff", "x" * 300]  # fmt: skip
_GOOD = ["0", "1", "8", "60", "600", "3600", "86400", "2017-10-03 14:05", "2017-10-04T01:00:00+08:00", "a", "b"]
_HEADERS = ["submit,duration,gpus", "submit,duration,gpus,fraction,tenant,priority,utilization",
            "timestamp,duration,num_gpus,cluster", "submit_time,duration,gpu_num,vc", "\ufeffsubmit,duration,gpus",
            "submit time,duration,gpus", " submit , duration , gpus "]  # fmt: skip
_VALID_TRACE = "submit,duration,gpus,tenant\n0,600,1,a\n30,1200,8,b\n3600,60,2,a\n"


def _cell(rng: random.Random) -> str:
    return rng.choice(_HOSTILE) if rng.random() < 0.3 else rng.choice(_GOOD)


def _prometheus(rng: random.Random) -> tuple[str, bytes]:
    stamps = ["1506816000000", "1506816060000", "1506816120000", "1e18", "1" + "0" * 400, "1e400.0", "nan", "-5", "1.5"]
    values = ["50", "0", "100", "101", "nan", "inf", "x"]
    if rng.random() < 0.5:
        lines = [f'DCGM_FI_DEV_GPU_UTIL{{UUID="GPU-{rng.randrange(3)}",pod="{rng.choice("pq")}",namespace="ns"}} '
                 f"{rng.choice(values)} {rng.choice(stamps[:3] * 4 + stamps)}"
                 for _ in range(rng.randint(1, 8))]  # fmt: skip
        return ".txt", ("\n".join(lines) + "\n").encode()
    times = ["1506816000", "1506816060", "1506816120.0", "1e18", "1" + "0" * 400, "1e400", "NaN", "Infinity", "true"]
    pairs = ",".join(f'[{rng.choice(times[:3] * 4 + times)}, "{rng.choice(values)}"]' for _ in range(rng.randint(1, 6)))
    series = f'{{"metric": {{"__name__": "DCGM_FI_DEV_GPU_UTIL", "UUID": "g", "pod": "p"}}, "values": [{pairs}]}}'
    text = f'{{"status": "success", "data": {{"resultType": "matrix", "result": [{series}]}}}}'
    if rng.random() < 0.1:
        depth = rng.choice([70, 1000, 200_000])
        text = f'{{"status": {"[" * depth}{"]" * depth}}}'
    return ".json", text.encode()


def make_trace(rng: random.Random) -> tuple[str, bytes]:
    kind = rng.random()
    if kind < 0.3:  # a valid canonical trace, perhaps one cell hostile: the replay runs
        rows = [f"{rng.randint(0, 86400 * 2)},{rng.randint(1, 86400)},{rng.choice([0, 1, 2, 4, 8])},"
                f"{rng.choice('abc')}" for _ in range(rng.randint(1, 12))]  # fmt: skip
        if rng.random() < 0.5:
            cells = rows[0].split(",")
            cells[rng.randrange(4)] = rng.choice(_HOSTILE)
            rows[0] = ",".join(cells)
        return ".csv", ("submit,duration,gpus,tenant\n" + "\n".join(rows) + "\n").encode("utf-8", "surrogatepass")
    if kind < 0.55:
        rows = [",".join(_cell(rng) for _ in range(rng.randint(1, 7))) for _ in range(rng.randint(1, 6))]
        return ".csv", (rng.choice(_HEADERS) + "\n" + "\n".join(rows) + "\n").encode("utf-8", "surrogatepass")
    if kind < 0.8:
        return _prometheus(rng)
    if kind < 0.9:
        return ".csv", _edit_text(_VALID_TRACE, rng).encode("utf-8", "surrogatepass")
    return ".csv", _edit_bytes(_VALID_TRACE.encode(), rng)


def good_facts() -> dict[str, Any]:
    return {
        "region": "us-east-1", "readAt": "2026-12-03T12:00:00Z", "zones": {"us-east-1a": "use1-az4"},
        "offerings": {"p5.48xlarge": ["us-east-1a"], "g6e.12xlarge": ["us-east-1a", "us-east-1b"]},
        "eksVersions": ["1.33", "1.34"],
        "capacityBlocks": [{"id": "cr-1", "instanceType": "p5e.48xlarge", "zone": "us-east-1a", "instances": 4,
                            "state": "active", "tags": {"team": "ml"}}],
        "quotas": {"ec2/L-417A185B": 2304, "ec2/L-DB2E81BA": 1024},
    }  # fmt: skip


def _structured(document: Any, rng: random.Random, numbers: dict[str, str]) -> bytes:
    for _ in range(rng.randint(1, 3)):
        document = _mutate(document, rng)
    text = json.dumps(document, indent=1)
    for old, new in numbers.items():
        if rng.random() < 0.15:
            text = text.replace(old, new, 1)
    return text.encode("utf-8", "surrogatepass")


def make_facts(rng: random.Random) -> bytes:
    kind = rng.random()
    if kind < 0.7:
        bad = rng.choice(["NaN", "Infinity", "-Infinity", "1e400", "1" + "0" * 30, "2.5", "-4", "1e19"])
        return _structured(good_facts(), rng, {"2304": bad, ": 4,": f": {bad},"})
    text = json.dumps(good_facts(), indent=1)
    return _edit_text(text, rng).encode("utf-8", "surrogatepass") if kind < 0.9 else _edit_bytes(text.encode(), rng)


def make_recording(rng: random.Random, recording: dict[str, Any]) -> bytes:
    document = json.loads(json.dumps(recording))
    resources = document["resources"]
    kind = rng.random()
    if kind < 0.25:
        resources.append(json.loads(json.dumps(rng.choice(resources))))  # a resource copied, URN and all
    elif kind < 0.35:
        victim = rng.choice(resources)
        other = f"urn:pulumi:{rng.choice(['prod', 'x'])}::"
        victim["urn"] = str(victim.get("urn", "")).replace("urn:pulumi:dev::", other)
    elif kind < 0.75:
        at = rng.randrange(len(resources))
        resources[at] = _mutate(resources[at], rng)  # a resource, or what replaced it
    elif kind < 0.9:
        return _edit_text(json.dumps(document, indent=1), rng).encode("utf-8", "surrogatepass")
    else:
        return _edit_bytes(json.dumps(document).encode(), rng)
    return json.dumps(document, indent=1).encode("utf-8", "surrogatepass")


def make_init(rng: random.Random) -> dict[str, Any]:
    def text(sensible: str) -> str:
        if rng.random() < 0.7:
            return sensible
        return rng.choice([*_HOSTILE, "ml-platform", "atlas", "gpu", 'x", owner: "evil', "a: b", "- x", "?0",
                           "{a}", "#c", "yes", "0000", "\x1b", "\x85", "é", "a\nb: 1"])  # fmt: skip

    return {"name": text("atlas"), "team": text("ml-platform"), "cost_center": text("0000"), "pool": text("gpu"),
            "region": text("us-east-1")}  # fmt: skip


def _choices(values: dict[str, Any]) -> Choices:
    return Choices(provider="aws", instance_type="g6e.12xlarge", gpu_model="L40S-48GB", gpus_per_node=4, nodes_max=4,
                   version="0.0.0", source=Source("index", "gpuplat", ""), **values)  # fmt: skip


# ---- one input ------------------------------------------------------------------------------


class _Hang(Exception):
    pass


def _alarm(*_: Any) -> None:
    raise _Hang


def _strict_json(text: str) -> None:
    def refuse(token: str) -> Any:
        raise ValueError(f"{token} in the result's JSON")

    json.loads(text, parse_constant=refuse)


def _readback(files: dict[str, str], values: dict[str, Any]) -> None:
    from ruamel.yaml import YAML

    spec: Any = YAML(typ="safe").load(files["platform/platform.yaml"])
    got = {"name": spec["metadata"]["name"], "team": spec["metadata"]["tags"]["team"],
           "cost_center": spec["metadata"]["tags"]["cost-center"], "pool": spec["gpuNodePools"][0]["name"],
           "region": spec["target"]["region"]}  # fmt: skip
    if got != values:
        raise AssertionError(f"init wrote {got!r} for {values!r}")


def _cli(argv: list[str], cwd: Path) -> str:
    out, err = io.StringIO(), io.StringIO()
    previous = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli(argv)
            except SystemExit as stop:  # argparse's usage errors: exit 2 and a sentence, as the process does
                code = stop.code if isinstance(stop.code, int) else 1
    finally:
        os.chdir(previous)
    said = err.getvalue()
    if code not in (0, 1, 2) or any(s in said for s in ("internal error", "program failed", "Traceback")):
        raise AssertionError(f"gpuplat {argv[0]} exit {code}: {said[-300:]}")
    if code != 0 and not said.strip() and not out.getvalue().strip():
        raise AssertionError(f"gpuplat {argv[0]} exit {code} and said nothing")
    return said


def run_one(seed: int, index: int, ctx: dict[str, Any], tmp: Path, cli_every: int) -> dict[str, Any]:
    rng = random.Random(seed * 10**7 + index)
    surface = SURFACES[index % len(SURFACES)]
    outcome: dict[str, Any] = {"index": index, "surface": surface, "outcome": "accepted"}
    through_cli = cli_every > 0 and index % cli_every < len(SURFACES)
    start = time.perf_counter()
    signal.alarm(HANG_SECONDS)
    path = tmp / "input"
    try:
        if surface == "trace":
            suffix, data = make_trace(rng)
            path = tmp / f"trace{suffix}"
            path.write_bytes(data)
            try:
                trace = load_trace(path)
                model, plan = ctx["prod"]
                _strict_json(render_json(simulate(model, plan, trace)))
            except TraceError as err:
                positioned = err.problems and all(line >= 1 for line, _ in err.problems) and err.code.startswith("GP03")
                outcome["outcome"] = "rejected" if positioned else "unpositioned"
            if through_cli:
                _cli(["simulate", "--stack", "prod", "--trace", str(path), "--format", "json", "--workers", "1"], ROOT)
        elif surface == "facts":
            path.write_bytes(make_facts(rng))
            try:
                model, plan = ctx["prod"]
                preflight_problems(model, plan, load_facts(path))
            except FactsError as err:
                outcome["outcome"] = "rejected" if POSITIONED.match(str(err)) else "unpositioned"
            if through_cli:
                _cli(["preflight", "--stack", "prod", "--account-facts", str(path)], ROOT)
                _cli(["verify", "--stack", "dev", "--recording", ctx["recording_path"], "--account-facts", str(path)],
                     ROOT)  # fmt: skip
        elif surface == "recording":
            path.write_bytes(make_recording(rng, ctx["recording"]))
            try:
                model, plan = ctx["dev"]
                verify(model, plan, load_recording(str(path), "dev"))
            except RecordingInvalid as err:
                outcome["outcome"] = "rejected" if err.diagnostic.line >= 1 else "unpositioned"
            if through_cli:
                _cli(["verify", "--stack", "dev", "--recording", str(path)], ROOT)
        else:
            values = make_init(rng)
            files = render(_choices(values))
            _readback(files, values)
            spec, overlay = tmp / "platform.yaml", tmp / "dev.yaml"
            spec.write_text(files["platform/platform.yaml"], encoding="utf-8")
            overlay.write_text(files["stacks/dev.yaml"], encoding="utf-8")
            compiled = compile_sources(Sources(spec, overlay))
            errors = [d for d in compiled.diagnostics if d.is_error]
            if errors:
                outcome["outcome"] = "rejected" if all(d.line >= 1 and d.col >= 1 for d in errors) else "unpositioned"
            if through_cli:
                _init_cli(rng, values, tmp)
    except _Hang:
        outcome["outcome"] = "hang"
    except Exception as err:  # the defect this run looks for: keep the input and the traceback
        outcome["outcome"] = "crash"
        outcome["error"] = f"{type(err).__name__}: {str(err)[:200]}"
        crashes = ctx["crash_dir"]
        crashes.mkdir(parents=True, exist_ok=True)
        if path.exists():
            (crashes / f"{index}.{surface}").write_bytes(path.read_bytes())
        (crashes / f"{index}.txt").write_text(traceback.format_exc())
    finally:
        signal.alarm(0)
    outcome["seconds"] = time.perf_counter() - start
    return outcome


def _init_cli(rng: random.Random, values: dict[str, Any], tmp: Path) -> None:
    """`gpuplat init` of these values into a target of one of the awkward kinds; what was there stays."""
    import shutil

    where = tmp / "init"
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir()
    (where / "afile").write_text("mine\n")
    (where / "outside").mkdir()
    target = rng.choice(["p", "afile", "afile/p", "a" * 300, "linked", "dangling"])
    if target == "linked":
        (where / "linked").mkdir()
        (where / "linked" / "stacks").symlink_to(where / "outside", target_is_directory=True)
    elif target == "dangling":
        (where / "dangling" / "platform").mkdir(parents=True)
        (where / "dangling" / "platform" / "platform.yaml").symlink_to(where / "outside" / "spec.yaml")
    argv = ["init", target, "--gpuplat-from", "index", "--region", "us-east-1"]
    for key in ("name", "team", "cost_center", "pool"):
        if rng.random() < 0.5 and "\x00" not in values[key]:
            argv += [f"--{key.replace('_', '-')}", values[key]]
    _cli(argv, where)
    if os.listdir(where / "outside") or (where / "afile").read_text() != "mine\n":
        raise AssertionError(f"init {target} wrote outside its directory or over a file")


def _worker(args: tuple[int, list[int], str, str, int]) -> tuple[list[dict[str, Any]], int]:
    seed, indices, crash_dir, recording_path, cli_every = args
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGALRM, _alarm)
    recording = json.loads(Path(recording_path).read_text())
    ctx = {"prod": load_for_stack("prod"), "dev": load_for_stack("dev"), "recording": recording,
           "recording_path": recording_path, "crash_dir": Path(crash_dir)}  # fmt: skip
    with tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as tmp:
        results = [run_one(seed, index, ctx, Path(tmp), cli_every) for index in indices]
    return results, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=100_000, help="run inputs up to this index (exclusive)")
    parser.add_argument("--first", type=int, default=0, help="the first input's index (default 0)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--cli-every", type=int, default=500, help="every N-th input also through the CLI (0: none)")
    parser.add_argument("--crash-dir", type=Path, default=Path(tempfile.gettempdir()) / "gpuplat-fuzz-input-crashes")
    args = parser.parse_args(argv)
    started = time.time()
    recording = Path(tempfile.mkdtemp()) / "dev.json"
    recording.write_text(_cli_out(["preview", "--stack", "dev", "--format", "json"]))
    chunks = [list(range(i, min(i + 500, args.inputs))) for i in range(args.first, args.inputs, 500)]
    work = [(args.seed, chunk, str(args.crash_dir), str(recording), args.cli_every) for chunk in chunks]
    results: list[dict[str, Any]] = []
    peak, interrupted, lost = 0, False, []
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    # An executor, not multiprocessing.Pool: a worker that dies (a signal, the OOM killer) breaks
    # the executor and its chunks are reported lost; a Pool waits for their results for ever.
    with ProcessPoolExecutor(args.jobs, max_tasks_per_child=20) as pool:
        futures = {pool.submit(_worker, w): w[1] for w in work}
        try:
            for future in as_completed(futures):
                try:
                    done, rss = future.result()
                except BrokenProcessPool:
                    lost.append(futures[future][0])
                    continue
                results.extend(done)
                peak = max(peak, rss)
                sys.stderr.write(f"\r{len(results)} / {args.inputs - args.first}")
        except KeyboardInterrupt:
            pool.shutdown(wait=False, cancel_futures=True)
            interrupted = True
    sys.stderr.write("\n")
    if interrupted:
        print(f"INTERRUPTED after {len(results)} of {args.inputs - args.first} inputs")
    if lost:
        print(f"LOST: the chunks of 500 from inputs {', '.join(map(str, sorted(lost)))} (a worker died)")
    report(results, args, time.time() - started, peak)
    return 1 if lost or any(r["outcome"] in ("crash", "unpositioned", "hang") for r in results) else 0


def _cli_out(argv: list[str]) -> str:
    """A command's output from a process of its own: a fork after pulumi's gRPC threads started in
    this one would leave the workers waiting on a lock forever."""
    import subprocess

    command = [sys.executable, "-c", "import sys; from gpuplat.cli import main; sys.exit(main(sys.argv[1:]))", *argv]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True).stdout


def report(results: list[dict[str, Any]], args: argparse.Namespace, wall: float, peak_mib: int) -> None:
    outcomes = ("accepted", "rejected", "unpositioned", "crash", "hang")
    by: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for r in results:
        by[r["surface"]][r["outcome"]] += 1
        by[r["surface"]]["slow"] += r["seconds"] > SLOW_SECONDS
    through = sum(1 for r in results if args.cli_every and r["index"] % args.cli_every < len(SURFACES))
    print(f"input fuzz run: {len(results)} inputs (from index {args.first}), seed {args.seed}, {args.jobs} processes, "
          f"{wall:.0f} s wall, {through} of them also through the CLI; peak memory of a worker {peak_mib} MiB")
    print()
    print("| surface | inputs | accepted | rejected, positioned | rejected, unpositioned | crashes | hangs | over 5 s "
          "| slowest s |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    total: collections.Counter[str] = collections.Counter()
    for surface in [*dict.fromkeys(SURFACES), "all"]:
        mine = [r for r in results if surface in ("all", r["surface"])]
        counts = total if surface == "all" else by[surface]
        if surface != "all":
            total.update(counts)
        cells = " | ".join(str(counts[o]) for o in outcomes)
        slowest = max((r["seconds"] for r in mine), default=0.0)
        print(f"| {surface} | {len(mine)} | {cells} | {counts['slow']} | {slowest:.2f} |")
    for r in results:
        if r["outcome"] in ("crash", "hang", "unpositioned"):
            print(f"  input {r['index']} ({r['surface']}): {r['outcome']} {r.get('error', '')}")
    print(f"crashes kept in {args.crash_dir}")


if __name__ == "__main__":
    raise SystemExit(main())
