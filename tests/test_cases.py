"""Golden cases: every case folder yields exactly its expected diagnostics.

Regenerate with `python -m tests.cases.regen` and review the diff.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gpuplat.diagnostics import Level
from gpuplat.validate import RULES
from gpuplat.validate.registry import Finding, RuleFn
from tests.cases import CASES, case_dirs, case_id, code_of, compile_here, lines_of, read_expected

ALL_CASES = case_dirs()
# Load, merge and schema codes the cases must exercise besides the registered rules.
PIPELINE_CODES = {
    *("GP002", "GP003", "GP004", "GP005", "GP006", "GP007", "GP008"),
    *("GP010", "GP011", "GP012", "GP015", "GP016", "GP101", "GP102", "GP103", "GP104"),
}
# Codes the planner reports (procurement infeasibility, fabric capacity); not registry rules.
PLANNER_CODE = re.compile(r"^GP2[34]\d$")


def _expected_codes() -> set[str]:
    return {code_of(line) for case in ALL_CASES for line in read_expected(case)}


@pytest.mark.parametrize("case", ALL_CASES, ids=case_id)
def test_case(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(case)
    compiled = compile_here()
    assert lines_of(compiled.diagnostics) == read_expected(case), "run `python -m tests.cases.regen` and review"
    errors = [d for d in compiled.diagnostics if d.level is Level.ERROR]
    if case.parent.name == "valid":
        assert not errors, errors
        assert compiled.model is not None
    else:
        assert errors, "an invalid case must produce at least one error"
        assert compiled.model is None


def test_every_rule_has_a_case() -> None:
    missing = sorted(code for code in RULES if code not in _expected_codes() and not PLANNER_CODE.match(code))
    assert not missing, f"rules without a golden case: {missing}"


def test_pipeline_defects_have_cases() -> None:
    missing = PIPELINE_CODES - _expected_codes()
    assert not missing, f"pipeline codes without a golden case: {sorted(missing)}"


def test_case_counts() -> None:
    invalid = case_dirs("invalid")
    assert len(invalid) >= 40
    in_overlay = [c for c in invalid if any(line.startswith("overlay.yaml:") for line in read_expected(c))]
    assert len(in_overlay) >= 6


def test_expected_files_are_well_formed() -> None:
    form = re.compile(r"^(platform|overlay)\.yaml:[1-9]\d*:[1-9]\d* GP\d{3} \S.*$")
    for case in ALL_CASES:
        for line in read_expected(case):
            assert form.match(line), f"{case_id(case)}: {line!r}"
        assert (case / "platform.yaml").exists(), case_id(case)


def _garbled(check: RuleFn) -> RuleFn:
    def garbled(data: Mapping[str, Any]) -> Iterator[Finding]:
        for f in check(data):
            yield replace(f, message="GARBAGE")

    return garbled


def test_a_changed_message_fails_its_case(monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe: the golden files pin messages, so rewording GP260 breaks its case."""
    monkeypatch.setitem(RULES, "GP260", replace(RULES["GP260"], check=_garbled(RULES["GP260"].check)))
    case = CASES / "invalid" / "procurement-sum-90"
    monkeypatch.chdir(case)
    got = lines_of(compile_here().diagnostics)
    assert got != read_expected(case)
    assert {line.split(" ", 1)[0] for line in got} == {line.split(" ", 1)[0] for line in read_expected(case)}
    assert any(line.endswith(" GP260 GARBAGE") for line in got)


def test_a_moved_column_fails_its_case(monkeypatch: pytest.MonkeyPatch) -> None:
    """Columns are pinned too: the same finding reported at the key instead of the value moves it."""

    def at_key(check: RuleFn) -> RuleFn:
        def moved(data: Mapping[str, Any]) -> Iterator[Finding]:
            for f in check(data):
                yield replace(f, at_key=not f.at_key)

        return moved

    monkeypatch.setitem(RULES, "GP260", replace(RULES["GP260"], check=at_key(RULES["GP260"].check)))
    case = CASES / "invalid" / "procurement-sum-90"
    monkeypatch.chdir(case)
    assert lines_of(compile_here().diagnostics) != read_expected(case)
