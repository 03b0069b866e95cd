"""Rewrite every case's expected.txt from the current output: `python -m tests.cases.regen [CASE ...]`.

Review the diff before committing: a changed line is a changed diagnostic.
"""

from __future__ import annotations

import contextlib
import sys

from tests.cases import EXPECTED, case_dirs, case_id, compile_here, lines_of, sort_lines


def main(argv: list[str]) -> int:
    wanted = set(argv)
    for case in case_dirs():
        if wanted and case.name not in wanted and case_id(case) not in wanted:
            continue
        with contextlib.chdir(case):
            lines = lines_of(compile_here().diagnostics)
        path = case / EXPECTED
        if lines:
            path.write_text("".join(f"{line}\n" for line in sort_lines(lines)), encoding="utf-8")
        else:
            path.unlink(missing_ok=True)
        print(f"{case_id(case)}: {len(lines)} diagnostic(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
