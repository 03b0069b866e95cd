"""Fuzz `check` (and the plan it runs) with 10^5 inputs: structure-aware and byte-level.

    .venv/bin/python bench/fuzz.py                       # 100,000 inputs, 2 processes, seed 0
    .venv/bin/python bench/fuzz.py --inputs 2000 --jobs 1 --program-every 200

Every input is a file, compiled as `gpuplat check` compiles it (load with positions, overlay
merge, schema, rules, model, plan); an accepted one is also rendered as the plan's text and
strict JSON, and every `--program-every`-th accepted one is recorded by the real Pulumi program
and checked by verify and the policy pack, as `gpuplat preview | verify | policy` would. Families
(input i is family i % 20, drawn from `random.Random(seed * 10**7 + i)`, so any input can be made
again from its index):

- generated (6/20): a spec of tests/valid_specs.py (both providers, every sharing mode, markets,
  tenants, tiers, workloads, hostile free-form text)
- mutated (5/20): one of those with 1 to 3 structural mutations: a value of another type, a key
  renamed, deleted or added, a list emptied, a number at or past a bound, a hostile string
- text (4/20): its YAML text with 1 or 2 edits: a span deleted, junk or a YAML indicator
  inserted, a line duplicated, swapped or re-indented
- bytes (3/20): its bytes flipped, cut, or spliced with invalid UTF-8, NUL, BOMs, encoded
  surrogates and line separators; or random bytes
- overlay (2/20): a generated base with an overlay of (mutated) parts of another generated spec,
  items merged by name or removed with `remove: true`

Counted: accepted (valid, warnings allowed), rejected with every diagnostic positioned (file,
line >= 1, col >= 1, a JSON path), rejected without a position (a defect), crashes (an exception
out of compile or the renderers: a defect, each written to --crash-dir with its traceback), and
inputs over 5 s. Prints a markdown table for bench/results.md. Not part of the test run.
The inputs beside the spec (traces, account facts, recordings, init arguments) have their own
run, bench/fuzz_inputs.py, which reuses this file's mutations.
"""

from __future__ import annotations

import argparse
import collections
import copy
import json
import multiprocessing
import random
import re
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from gpuplat.compile import Sources, compile_sources  # noqa: E402
from gpuplat.render.plan import plan_json, plan_text  # noqa: E402
from tests.valid_specs import HOSTILE, RandomDraw, generate_spec  # noqa: E402

FAMILIES = ["generated"] * 6 + ["mutated"] * 5 + ["text"] * 4 + ["bytes"] * 3 + ["overlay"] * 2
SLOW_SECONDS = 5.0
HANG_SECONDS = 60


def _dump(data: Any) -> str:
    return yaml.dump(data, Dumper=yaml.CSafeDumper, allow_unicode=True, sort_keys=False)


# ---- structure-aware mutations --------------------------------------------------------------


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*prefix, index))
    return found


def _value(rng: random.Random) -> Any:
    return rng.choice(
        [
            None, True, False, 0, -1, 1, 2**31, 2**63, 10**30, -(10**30), 1e308, -1e308, 0.5, float("inf"),
            "", " ", "x", "mig", "on-demand", "p5.48xlarge", "1.33", "5m", "train", "hard", rng.choice(HOSTILE),
            [], {}, [1, "a"], {"a": 1}, {"name": "x"}, [{"name": "train", "remove": True}],
        ]
    )  # fmt: skip


def _mutate(data: Any, rng: random.Random) -> Any:
    path = rng.choice(_paths(data))
    if not path:
        return _value(rng)
    parent = data
    for part in path[:-1]:
        parent = parent[part]
    last, kind = path[-1], rng.choice(["replace", "rename", "add", "delete", "empty", "number", "string"])
    value = parent[last]
    if kind == "rename" and isinstance(parent, dict):
        parent[rng.choice(["name", "remove", "mode", "gpus", "instanceTyp", "Name", "", "<<", rng.choice(HOSTILE)])] = (
            parent.pop(last)
        )
    elif kind == "add" and isinstance(value, dict):
        value[rng.choice(["extra", "name", "remove", "pools", "fabric", rng.choice(HOSTILE)])] = _value(rng)
    elif kind == "delete":
        del parent[last]
    elif kind == "empty" and isinstance(value, list | dict):
        value.clear()
    elif kind == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        parent[last] = rng.choice([-value, 0, value + 1, value - 1, value * 1000, value + 0.5, 10**400, 5e-324])
    elif kind == "string" and isinstance(value, str):
        parent[last] = rng.choice([rng.choice(HOSTILE), value + "\n", value.upper(), value + " ", value[:-1]])
    else:
        parent[last] = _value(rng)
    return data


# ---- text and byte edits --------------------------------------------------------------------

_JUNK = [":", "- ", "{", "}", "[", "]", "&a ", "*a", "!!binary ", "!!omap ", "<<: *a\n", "\n  ", "'", '"', "#",
         "%YAML 1.3\n", "\t", "? ", "|\n", ">-\n", "---\n", "...\n", "\\U00110000", "0x" + "f" * 50]  # fmt: skip
_BYTES = [b"\xff", b"\xfe\xff", b"\xef\xbb\xbf", b"\x00", b"\xed\xa0\x80", b"\xc2\x85", b"\xe2\x80\xa8", b"\r", b"\x1b",
          b"\xf4\x90\x80\x80", b"\x80", b"\xc0\xaf"]  # fmt: skip


def _edit_text(text: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 2)):
        lines = text.splitlines(keepends=True)
        kind = rng.choice(["delete", "insert", "replace", "dup", "swap", "indent"])
        if kind in ("dup", "swap", "indent") and lines:
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            if kind == "dup":
                lines.insert(j, lines[i])
            elif kind == "swap":
                lines[i], lines[j] = lines[j], lines[i]
            else:
                lines[i] = rng.choice(["", " ", "   ", "\t", "- "]) + lines[i].lstrip(" ")
            text = "".join(lines)
            continue
        at = rng.randint(0, len(text))
        if kind == "delete":
            text = text[:at] + text[at + rng.randint(1, 40) :]
        else:
            junk = rng.choice(_JUNK + list(HOSTILE))
            text = text[:at] + junk + text[at + (kind == "replace") :]
    return text


def _edit_bytes(raw: bytes, rng: random.Random) -> bytes:
    if rng.random() < 0.15:
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 400)))
    data = bytearray(raw)
    for _ in range(rng.randint(1, 8)):
        at = rng.randint(0, len(data))
        kind = rng.choice(["flip", "splice", "cut", "truncate"])
        if kind == "flip" and at < len(data):
            data[at] ^= 1 << rng.randrange(8)
        elif kind == "splice":
            data[at:at] = rng.choice(_BYTES)
        elif kind == "cut":
            del data[at : at + rng.randint(1, 16)]
        else:
            del data[at:]
    return bytes(data)


def _overlay(base: dict[str, Any], other: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    overlay: dict[str, Any] = {}
    for key in rng.sample(sorted(other), k=rng.randint(1, min(4, len(other)))):
        if key in ("apiVersion", "kind"):
            continue
        overlay[key] = copy.deepcopy(other[key])
    pools = base.get("gpuNodePools") or []
    if pools and rng.random() < 0.4:
        victim = rng.choice(pools)["name"]
        overlay.setdefault("gpuNodePools", []).append({"name": victim, "remove": True})
    if rng.random() < 0.5 and overlay:
        overlay = _mutate(overlay, rng)
    return overlay if isinstance(overlay, dict) else {"x": overlay}


# ---- one input ------------------------------------------------------------------------------


def make_input(seed: int, index: int) -> tuple[str, bytes, bytes | None]:
    """(family, spec bytes, overlay bytes or None) of input `index`."""
    rng = random.Random(seed * 10**7 + index)
    family = FAMILIES[index % len(FAMILIES)]
    spec = generate_spec(RandomDraw(rng))
    if family == "generated":
        return family, _dump(spec).encode(), None
    if family == "mutated":
        for _ in range(rng.randint(1, 3)):
            if isinstance(spec, dict | list) and spec:
                spec = _mutate(spec, rng)
        return family, _dump(spec).encode(), None
    if family == "text":
        return family, _edit_text(_dump(spec), rng).encode("utf-8", "surrogatepass"), None
    if family == "bytes":
        return family, _edit_bytes(_dump(spec).encode(), rng), None
    other = generate_spec(RandomDraw(rng))
    other["target"] = spec["target"]  # mostly the same provider, so the overlay often stays valid
    return family, _dump(spec).encode(), _dump(_overlay(spec, other, rng)).encode()


class _Hang(Exception):
    pass


def _alarm(*_: Any) -> None:
    raise _Hang


def _positioned(d: Any) -> bool:
    return bool(d.file) and d.line >= 1 and d.col >= 1 and d.path.startswith("$")


def run_one(seed: int, index: int, workdir: Path, crash_dir: Path) -> dict[str, Any]:
    family, spec_bytes, overlay_bytes = make_input(seed, index)
    spec = workdir / "platform.yaml"
    spec.write_bytes(spec_bytes)
    overlay = None
    if overlay_bytes is not None:
        overlay = workdir / "overlay.yaml"
        overlay.write_bytes(overlay_bytes)
    start = time.perf_counter()
    outcome: dict[str, Any] = {"index": index, "family": family}
    signal.alarm(HANG_SECONDS)
    try:
        compiled = compile_sources(Sources(spec, overlay))
        if compiled.ok and compiled.model is not None and compiled.plan is not None:
            json.dumps(plan_json(compiled.model, compiled.plan), allow_nan=False)
            text = plan_text(compiled.model, compiled.plan)
            if re.search(r"\b(inf|nan)\b", text):
                raise AssertionError("inf or nan in the plan's text")
            outcome["outcome"] = "accepted"
        elif not [d for d in compiled.diagnostics if d.is_error]:
            raise AssertionError("not accepted, yet no error diagnostic")
        elif all(_positioned(d) for d in compiled.diagnostics):
            outcome["outcome"] = "rejected"
            outcome["codes"] = sorted({d.code for d in compiled.diagnostics if d.is_error})
        else:
            outcome["outcome"] = "unpositioned"
    except _Hang:
        outcome["outcome"] = "hang"
    except Exception as err:  # the defect this run looks for: keep the input and the traceback
        outcome["outcome"] = "crash"
        outcome["error"] = f"{type(err).__name__}: {str(err)[:200]}"
        crash_dir.mkdir(parents=True, exist_ok=True)
        (crash_dir / f"{index}.yaml").write_bytes(spec_bytes)
        if overlay_bytes is not None:
            (crash_dir / f"{index}.overlay.yaml").write_bytes(overlay_bytes)
        (crash_dir / f"{index}.txt").write_text(traceback.format_exc())
    finally:
        signal.alarm(0)
    outcome["seconds"] = time.perf_counter() - start
    return outcome


def _worker(args: tuple[int, list[int], str]) -> list[dict[str, Any]]:
    seed, indices, crash_dir = args
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent reports on Ctrl-C or SIGTERM
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # and ends the pool's workers with it
    signal.signal(signal.SIGALRM, _alarm)
    results = []
    with tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as tmp:
        for index in indices:
            outcome = run_one(seed, index, Path(tmp), Path(crash_dir))
            results.append(outcome)
    return results


# ---- the program commands on a sample of accepted inputs ------------------------------------


def program_commands(seed: int, index: int, workdir: Path) -> str | None:
    """`gpuplat preview`, `verify --recording` and `policy` of input `index` as processes; None when
    all three end as the spec's check promised, else what went wrong."""
    import subprocess

    _, spec_bytes, overlay_bytes = make_input(seed, index)
    spec = workdir / "platform.yaml"
    spec.write_bytes(spec_bytes)
    files = ["--stack", "dev", "--spec", str(spec), "--overlay", ""]
    if overlay_bytes is not None:
        (workdir / "overlay.yaml").write_bytes(overlay_bytes)
        files[-1] = str(workdir / "overlay.yaml")

    def gpuplat(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "gpuplat.cli", *args, *files]
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)

    preview = gpuplat("preview", "--format", "json")
    if preview.returncode != 0:
        return f"preview exit {preview.returncode}: {preview.stderr.strip()[-300:]}"
    recording = workdir / "recording.json"
    recording.write_text(preview.stdout, encoding="utf-8")
    verify = gpuplat("verify", "--recording", str(recording), "--format", "json")
    try:
        failed = [j for j in json.loads(verify.stdout)["journeys"] if not j["ok"]]
    except (json.JSONDecodeError, KeyError):
        return f"verify exit {verify.returncode}: {verify.stderr.strip()[-300:]}"
    if failed:  # check passed the spec: every journey must reach a GPU
        return f"verify fails journeys of a spec check accepted: {[(j['tenant'], j['pool']) for j in failed]}"
    policy = gpuplat("policy", "--format", "json")
    if policy.returncode != 0:
        return f"policy exit {policy.returncode}: {policy.stdout.strip()[-300:]} {policy.stderr.strip()[-300:]}"
    return None


# ---- the run --------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--program-every", type=int, default=10_000, help="record every N-th accepted input (0: none)")
    parser.add_argument("--crash-dir", type=Path, default=Path(tempfile.gettempdir()) / "gpuplat-fuzz-crashes")
    args = parser.parse_args(argv)
    started, cpu = time.time(), time.process_time()
    chunks = [list(range(i, min(i + 200, args.inputs))) for i in range(0, args.inputs, 200)]
    work = [(args.seed, chunk, str(args.crash_dir)) for chunk in chunks]
    results: list[dict[str, Any]] = []
    interrupted = False
    # A run started in the background (`&`) inherits SIGINT ignored: take it back, and let
    # SIGTERM end a run the same way, so a run cut short still reports what it did.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with multiprocessing.Pool(args.jobs) as pool:
        try:
            for done in pool.imap_unordered(_worker, work):
                results.extend(done)
                sys.stderr.write(f"\r{len(results)} / {args.inputs}")
        except KeyboardInterrupt:  # a run cut short still reports what it did, and says so
            pool.terminate()
            interrupted = True
    sys.stderr.write("\n")
    if interrupted:
        print(f"INTERRUPTED after {len(results)} of {args.inputs} inputs")
    sample = sorted(r["index"] for r in results if r["outcome"] == "accepted")
    sample = sample[:: args.program_every] if args.program_every and not interrupted else []
    program_failures: list[tuple[int, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for index in sample:
            problem = program_commands(args.seed, index, Path(tmp))
            if problem is not None:
                program_failures.append((index, problem))
    report(results, args, time.time() - started, time.process_time() - cpu, sample, program_failures)
    bad = sum(r["outcome"] in ("crash", "unpositioned", "hang") for r in results)
    return 1 if bad or program_failures else 0


def report(
    results: list[dict[str, Any]],
    args: argparse.Namespace,
    wall: float,
    cpu: float,
    sample: list[int],
    program_failures: list[tuple[int, str]],
) -> None:
    outcomes = ("accepted", "rejected", "unpositioned", "crash", "hang")
    by_family: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    slow: collections.Counter[str] = collections.Counter()
    for r in results:
        by_family[r["family"]][r["outcome"]] += 1
        slow[r["family"]] += r["seconds"] > SLOW_SECONDS
    print(f"fuzz run: {len(results)} inputs, seed {args.seed}, {args.jobs} processes, {wall:.0f} s wall")
    print()
    header = "| family | inputs | accepted | rejected, positioned | rejected, unpositioned | crashes | hangs"
    print(header + " | over 5 s | slowest s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    total: collections.Counter[str] = collections.Counter()
    for family in dict.fromkeys(FAMILIES):
        counts = by_family[family]
        total.update(counts)
        slowest = max((r["seconds"] for r in results if r["family"] == family), default=0.0)
        cells = " | ".join(str(counts[o]) for o in outcomes)
        print(f"| {family} | {sum(counts.values())} | {cells} | {slow[family]} | {slowest:.2f} |")
    slowest = max((r["seconds"] for r in results), default=0.0)
    cells = " | ".join(str(total[o]) for o in outcomes)
    print(f"| all | {len(results)} | {cells} | {sum(slow.values())} | {slowest:.2f} |")
    codes: collections.Counter[str] = collections.Counter()
    for r in results:
        codes.update(r.get("codes", ()))
    print()
    print("most frequent error codes of rejected inputs: " + ", ".join(f"{c} {n}" for c, n in codes.most_common(12)))
    print(f"program commands (preview, verify --recording, policy) on {len(sample)} accepted inputs: "
          f"{len(sample) - len(program_failures)} as check promised")  # fmt: skip
    for index, problem in program_failures:
        print(f"  input {index}: {problem}")
    for r in results:
        if r["outcome"] in ("crash", "hang", "unpositioned"):
            print(f"  input {r['index']} ({r['family']}): {r['outcome']} {r.get('error', '')}")
    print(f"CPU of the parent process {cpu:.0f} s; crashes kept in {args.crash_dir}")


if __name__ == "__main__":
    raise SystemExit(main())
