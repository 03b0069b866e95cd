"""The spec's `acknowledge` section: a weighed warning is shown with its reason, never hidden, and
an acknowledgement that no longer covers a warning (or names no warning) says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplat.acknowledge import covers, resolve
from gpuplat.cli import main
from gpuplat.compile import Sources, compile_sources

ROOT = Path(__file__).resolve().parent.parent
CASE = ROOT / "tests" / "cases" / "valid" / "warn-metrics-attribution" / "platform.yaml"
ACK = """acknowledge:
  GP302:
    reason: charged back per node
    paths:
      - $.gpuNodePools[infer].sharing
"""


def _spec(tmp_path: Path, extra: str) -> Path:
    spec = tmp_path / "platform.yaml"
    spec.write_text(CASE.read_text() + extra)
    return spec


def test_an_acknowledged_warning_is_shown_with_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _spec(tmp_path, ACK)
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--spec", "platform.yaml"]) == 0
    out = capsys.readouterr().out
    assert " warning GP302 " not in out
    assert "platform.yaml:22:21: acknowledged GP302 $.gpuNodePools[1].sharing.mode: charged back per node\n" in out
    assert out.endswith("valid (0 error(s), 3 warning(s), 1 acknowledged)\n")
    assert main(["plan", "--spec", "platform.yaml"]) == 0
    assert "acknowledged GP302 $.gpuNodePools[1].sharing.mode: charged back per node" in capsys.readouterr().err


def test_a_stale_acknowledgement_is_a_warning(tmp_path: Path) -> None:
    spec = _spec(tmp_path, ACK.replace("[infer].sharing", "[train].sharing"))
    compiled = compile_sources(Sources(spec, None))
    stale = [d for d in compiled.diagnostics if d.code == "GP020"]
    assert [(d.path, d.line) for d in stale] == [
        ("$.acknowledge.GP302.paths[0]", len(CASE.read_text().splitlines()) + 5)
    ]
    assert "no GP302 warning is there" in stale[0].message
    assert {d.code for d in compiled.diagnostics} >= {"GP302"}  # the real one is still reported


def test_only_warning_codes_can_be_acknowledged(tmp_path: Path) -> None:
    spec = _spec(tmp_path, ACK.replace("GP302:", "GP201:"))
    compiled = compile_sources(Sources(spec, None))
    assert not compiled.ok
    [error] = [d for d in compiled.diagnostics if d.code == "GP021"]
    assert error.message == "GP201 is an error, and only warnings can be acknowledged"


def test_an_item_an_overlay_removed_is_not_stale(tmp_path: Path) -> None:
    spec = _spec(tmp_path, ACK)
    overlay = tmp_path / "dev.yaml"
    overlay.write_text("gpuNodePools:\n  - {name: infer, remove: true}\ntenants: []\n")
    compiled = compile_sources(Sources(spec, overlay))
    assert "GP020" not in {d.code for d in compiled.diagnostics}


def test_paths_by_index_or_by_name() -> None:
    data = {"gpuNodePools": [{"name": "a"}, {"name": "b"}]}
    assert resolve("$.gpuNodePools[b].sharing", data) == "$.gpuNodePools[1].sharing"
    assert resolve("$.gpuNodePools[0]", data) == "$.gpuNodePools[0]"
    assert resolve("$.gpuNodePools[gone]", data) is None
    assert covers("$.gpuNodePools[2]", "$.gpuNodePools[2].sharing.mode")
    assert not covers("$.gpuNodePools[2]", "$.gpuNodePools[20].sharing")


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_the_example_stacks_have_no_unacknowledged_warning(
    stack: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    assert main(["check", "--stack", stack]) == 0
    out = capsys.readouterr().out
    assert " warning " not in out and " acknowledged " in out
    assert ", 0 warning(s), " in out.splitlines()[-1]
