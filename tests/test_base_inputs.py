"""`--base` refs that cannot give a base, said the same way by every command that takes one:
a commit whose spec was deleted (exit 2, a sentence, not "the program failed"), and a ref a shallow
clone lacks (with how to fetch it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support_cli import INDEX
from tests.support_git import git, run_cli


def _run(root: Path, *argv: str) -> tuple[int, str]:
    run = run_cli(root, *argv)
    return run.code, run.err


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A project whose commit tagged `nospec` had its spec deleted (restored in the next)."""
    where = tmp_path_factory.mktemp("base-inputs")
    root = where / "lab"
    assert _run(where, "init", "lab", *INDEX)[0] == 0
    (root / "trace.csv").write_text("submit,duration,gpus\n0,600,1\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "project")
    spec = (root / "platform" / "platform.yaml").read_text()
    (root / "platform" / "platform.yaml").unlink()
    git(root, "commit", "-qam", "spec deleted")
    git(root, "tag", "nospec")
    (root / "platform" / "platform.yaml").write_text(spec)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "spec back")
    yield root


@pytest.mark.parametrize(
    "argv",
    [
        ("preview", "--stack", "dev", "--base", "nospec"),
        ("plan", "--stack", "dev", "--base", "nospec"),
        ("simulate", "--stack", "dev", "--trace", "trace.csv", "--base", "nospec"),
    ],
)
def test_a_base_without_the_spec_is_a_usage_sentence_in_every_command(repo: Path, argv: tuple[str, ...]) -> None:
    code, err = _run(repo, *argv)
    assert code == 2, err
    assert "--base nospec: platform/platform.yaml does not exist at that commit" in err
    assert "program failed" not in err and "Traceback" not in err


def test_a_ref_a_shallow_clone_lacks_says_how_to_fetch_it(repo: Path, tmp_path: Path) -> None:
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow))
    for argv in (("preview", "--stack", "dev"), ("plan", "--stack", "dev"), ("simulate", "--trace", "trace.csv")):
        code, err = _run(shallow, *argv, "--base", "HEAD~1")
        assert code == 2 and "not a commit, branch or tag of this repository; this clone is shallow" in err, err
        assert "git fetch --deepen=50 origin" in err
