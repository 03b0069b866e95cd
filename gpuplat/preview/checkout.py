"""A git ref of the repository the cwd is in, as a directory: the base of `preview --base` and
`plan --base`.

`git archive <commit>` extracted into a temporary directory, so the base's own `__main__.py`
(and, in a repository that carries them, its own `gpuplat` and `components`: engine.record_main
imports a program directory's modules afresh) runs, and the working tree is never touched.
"""

from __future__ import annotations

import subprocess
import tarfile
import tempfile
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from pathlib import Path


class BaseRefError(Exception):
    """The base ref cannot be checked out or previewed.

    `exit_code`: 2 for a bad ref or no git repository (usage), 1 for a base without a program
    or with an invalid spec."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _git(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError as err:
        raise BaseRefError("--base needs git, which is not installed", 2) from err


def resolve_ref(ref: str, cwd: Path = Path()) -> tuple[Path, str, str]:
    """(repository top level, cwd's path inside it, commit id of `ref`), or BaseRefError (exit 2)."""
    top = _git(["rev-parse", "--show-toplevel"], cwd)
    if top.returncode != 0:
        raise BaseRefError(f"--base {ref}: {cwd.resolve()} is not inside a git repository", 2)
    prefix = _git(["rev-parse", "--show-prefix"], cwd).stdout.strip()
    commit = _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd)
    if commit.returncode != 0 or not commit.stdout.strip():
        shallow = _git(["rev-parse", "--is-shallow-repository"], cwd).stdout.strip() == "true"
        hint = (
            "; this clone is shallow (actions/checkout fetches one commit by default): fetch the base, "
            f"`git fetch --deepen=50 origin` or `git fetch origin {ref}`, or check out with fetch-depth: 0"
            if shallow
            else ""
        )
        raise BaseRefError(f"--base {ref}: not a commit, branch or tag of this repository{hint}", 2)
    return Path(top.stdout.strip()), prefix, commit.stdout.strip()


@contextmanager
def checkout(ref: str, cwd: Path = Path()) -> Generator[Path]:
    """The project directory of `ref` (same place in the repository as `cwd`), removed afterwards."""
    toplevel, prefix, commit = resolve_ref(ref, cwd)
    with tempfile.TemporaryDirectory(prefix="gpuplat-base-") as tmp:
        archive = subprocess.Popen(
            ["git", "archive", "--format=tar", commit],
            cwd=toplevel,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert archive.stdout is not None
        try:
            with tarfile.open(fileobj=archive.stdout, mode="r|") as tar:
                tar.extractall(tmp, filter="data")  # a hostile tree must not write outside tmp
            # The tar reader stops at the end-of-archive blocks; git still writes the record's
            # padding after them. Closing the pipe before it is read kills git with SIGPIPE (exit
            # -13, nothing on stderr): a race a loaded machine loses.
            while archive.stdout.read(1 << 16):
                pass
        except tarfile.TarError as err:
            archive.kill()
            raise BaseRefError(f"--base {ref}: git archive failed ({err})", 2) from err
        finally:
            archive.stdout.close()
            _, stderr = archive.communicate()
        if archive.returncode != 0:
            raise BaseRefError(f"--base {ref}: git archive failed: {stderr.decode(errors='replace').strip()}", 2)
        yield Path(tmp) / prefix
