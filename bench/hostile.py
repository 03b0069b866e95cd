"""Time `check` on hostile and unusual inputs: each must end in diagnostics, quickly.

    .venv/bin/python bench/hostile.py            # table of input, size, seconds, first diagnostic

Not part of the test run (tests/test_cli_check.py and tests/test_spec_loading.py hold the
regression tests with generous time limits); this prints the numbers of bench/README.md.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpuplat.compile import Sources, compile_sources  # noqa: E402
from gpuplat.spec.guard import MAX_NODES  # noqa: E402
from gpuplat.spec.loader import MAX_SPEC_BYTES  # noqa: E402

FILL = MAX_SPEC_BYTES - 64  # just under the size bound


def inputs() -> dict[str, str]:
    spec = (ROOT / "platform" / "platform.yaml").read_text(encoding="utf-8")
    return {
        "10,000 [ (unclosed)": "[" * 10_000,
        "10,000 [ ] (closed)": "[" * 10_000 + "]" * 10_000,
        "flat list, 120,000 items": "[" + "1," * 120_000 + "1]",
        f"flat list, {MAX_NODES - 10} items": "a: [" + "1, " * (MAX_NODES - 10) + "1]\n",
        "9,990 unknown keys": "".join(f"k{i}: {i}\n" for i in range(9_990)),
        "256 KB of blank lines": "a: 1\n" + "\n" * FILL,
        "256 KB comment line": "a: 1\n#" + "x" * FILL + "\n",
        "256 KB plain scalar": "a: " + "x" * FILL + "\n",
        "aliases: 300 x 400 values": "a: &a [" + ",".join(["x"] * 300) + "]\nb: [" + ",".join(["*a"] * 400) + "]\n",
        "integer of 5,000 digits": "a: " + "9" * 5_000 + "\n",
        "nodes.max of 401 digits": spec.replace("max: 32}", "max: 1" + "0" * 400 + "}"),
        "merge key (pool)": spec.replace("  - name: infer\n", "  - <<: {markets: [spot]}\n    name: infer\n"),
        "mapping merging itself": "a: &s {<<: *s}\n",
        "!!omap": "x: !!omap [a: 1]\n",
        "one byte past the size bound": "#" * (MAX_SPEC_BYTES + 1),
    }


def main() -> int:
    print("| input | bytes | seconds | first diagnostic |")
    print("|---|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in inputs().items():
            path = Path(tmp) / "platform.yaml"
            path.write_text(text, encoding="utf-8")
            start = time.perf_counter()
            compiled = compile_sources(Sources(path, None))
            seconds = time.perf_counter() - start
            first = min(compiled.diagnostics, key=lambda d: (not d.is_error, d.line), default=None)
            shown = f"{first.code} line {first.line}" if first else "valid"
            print(f"| {name} | {len(text.encode())} | {seconds:.2f} | {shown} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
