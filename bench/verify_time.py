"""Time `gpuplat verify`'s journeys on the generated specs: it must stay linear in the emitted objects.

    .venv/bin/python bench/verify_time.py [--sizes small medium large] [--providers aws kubernetes]

Records each generated spec once (as bench/run.py does), then times `verify` over the
recording and prints one table row per spec: resources, journeys, seconds, failed journeys.
Not part of the test run; bench/results.md holds the numbers.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.generate import PROVIDERS, SIZES, check_spec, generate, write_spec  # noqa: E402
from bench.run import record  # noqa: E402
from gpuplat.verify import verify  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", choices=sorted(SIZES), default=["small", "medium", "large"])
    parser.add_argument("--providers", nargs="+", choices=PROVIDERS, default=list(PROVIDERS))
    args = parser.parse_args(argv)
    print("| spec | resources | journeys | verify s | failed journeys |")
    print("|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            for provider in args.providers:
                spec = SIZES[size]
                path = write_spec(generate(spec.pools, spec.tenants, provider), Path(tmp) / f"{size}.yaml")
                compiled = check_spec(path)
                assert compiled.model is not None and compiled.plan is not None
                resources = [r.to_json() for r in record(compiled.model, compiled.plan)]
                start = time.perf_counter()
                journeys = verify(compiled.model, compiled.plan, resources)
                seconds = time.perf_counter() - start
                failed = sum(not j.ok for j in journeys)
                row = f"| {size} {provider} | {len(resources)} | {len(journeys)} | {seconds:.2f} | {failed} |"
                print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
