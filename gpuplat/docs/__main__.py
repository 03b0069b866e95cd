"""`python -m gpuplat.docs` regenerates docs/spec.md and docs/rules.md; `--check` only reports."""

from __future__ import annotations

import sys

from gpuplat.docs import ROOT, stale, write


def main(argv: list[str]) -> int:
    if "--check" in argv:
        old = stale()
        for path in old:
            print(f"stale: {path.relative_to(ROOT)} (run python -m gpuplat.docs)", file=sys.stderr)
        return 1 if old else 0
    for path in write():
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
