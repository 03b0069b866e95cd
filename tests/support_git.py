"""A project in a git repository of its own, and `gpuplat` run inside it: shared by the tests of
`--base`, init and the simulate seeds, which all commit, tag and run the CLI in a temporary tree."""

from __future__ import annotations

import io
import json
import os
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuplat.cli import main

# A fixed identity and no signing, so a commit works on a machine with no git configuration.
_IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "commit.gpgsign=false", *args], cwd=root, check=True, capture_output=True,
                   env={**os.environ, **_IDENTITY})  # fmt: skip


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str

    def json(self) -> dict[str, Any]:
        return json.loads(self.out)

    def changes(self) -> dict[str, dict[str, Any]]:
        """`preview --format json`'s changes by resource name."""
        return {c["name"]: c for c in self.json()["changes"]}


def run_cli(cwd: Path, *argv: str) -> Run:
    """`gpuplat ARGV` in `cwd`, its output captured; the working directory is restored after."""
    out, err = io.StringIO(), io.StringIO()
    previous = Path.cwd()
    os.chdir(cwd)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = main(list(argv))
    finally:
        os.chdir(previous)
    return Run(code, out.getvalue(), err.getvalue())
