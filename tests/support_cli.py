"""The CLI in process, as the tests of `init` and the new user's journey call it."""

from __future__ import annotations

import pytest

from gpuplat.cli import main

# What requirements.txt installs gpuplat from is tests/test_init_source.py's; elsewhere an index
# pin spares each init the wheel it would build from this source tree.
INDEX = ("--gpuplat-from", "index")


def run_captured(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`gpuplat ARGV`: its exit code, standard output and standard error."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
