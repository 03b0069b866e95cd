"""Crashes bench/fuzz.py found, one test each: every one now ends in a positioned diagnostic."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplat.compile import Sources, compile_sources

ROOT = Path(__file__).resolve().parent.parent
SPEC = (ROOT / "platform" / "platform.yaml").read_text(encoding="utf-8")


def _errors(tmp_path: Path, spec: str, overlay: str | None = None) -> list[tuple[str, str, int]]:
    (tmp_path / "platform.yaml").write_text(spec, encoding="utf-8")
    over = None
    if overlay is not None:
        over = tmp_path / "overlay.yaml"
        over.write_text(overlay, encoding="utf-8")
    compiled = compile_sources(Sources(tmp_path / "platform.yaml", over))
    return [(d.code, Path(d.file).name, d.line) for d in compiled.diagnostics if d.is_error]


@pytest.mark.parametrize("value", ["1.5", "text", "[a, b]", "true"])
def test_an_acknowledge_section_that_is_no_mapping_is_a_schema_error(tmp_path: Path, value: str) -> None:
    # Inputs 1230, 3410, 6853, 16179 ... of the first run: the acknowledgement pass iterated
    # `acknowledge` as a mapping whatever it was (AttributeError, an internal error).
    spec = SPEC[: SPEC.index("acknowledge:")] + f"acknowledge: {value}\n"
    line = spec.count("\n")
    assert _errors(tmp_path, spec) == [("GP103", "platform.yaml", line)]


def test_a_hot_tier_at_the_default_rate_is_judged_by_gp257(tmp_path: Path) -> None:
    # Inputs 12818, 25459 ...: an overlay left throughputPerTiB out, GP257 skipped the tier
    # (no rate given) while the model built it at the default 250 MB/s/TiB, and the planner
    # raised on the share that leaves no standard file system (ValueError, an internal error).
    overlay = "storage:\n  hot: {capacityTiB: 1.2}\n  qos: {criticalIopsShare: 0.8}\n"
    spec = SPEC.replace("  hot:  {capacityTiB: 48, throughputPerTiB: 1000}", "  hot:  {capacityTiB: 48}")
    assert _errors(tmp_path, spec, overlay) == [("GP257", "overlay.yaml", 3)]
