"""docs/: the generated pages match their sources; planner codes and rule sources have one home."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from gpuplat import docs
from gpuplat.plan.codes import PLAN_CODES
from gpuplat.validate.registry import RULES

ROOT = Path(__file__).resolve().parents[1]


def test_generated_pages_are_current() -> None:
    assert docs.stale() == [], "docs/ is stale: run `python -m gpuplat.docs` (or `make docs`)"


def test_a_changed_rationale_makes_the_rules_page_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(RULES, "GP260", replace(RULES["GP260"], rationale="GARBAGE"))
    assert docs.DOCS / "rules.md" in docs.stale()


def test_spec_page_lists_every_schema_default() -> None:
    text = (docs.DOCS / "spec.md").read_text()
    assert '| `tenants[].isolation` | string | `"soft"` |' in text
    assert "`autoscaling.scaleUpAbove`" in text


def test_rules_page_lists_rules_and_planner_codes() -> None:
    text = (docs.DOCS / "rules.md").read_text()
    for code in [*RULES, *PLAN_CODES]:
        assert f"| {code} |" in text
    assert not set(RULES) & set(PLAN_CODES)


def test_sources_are_urls() -> None:
    for entry in [*RULES.values(), *PLAN_CODES.values()]:
        assert entry.source == "" or re.fullmatch(r"https://\S+", entry.source), entry.code


def test_planner_emits_only_registered_codes() -> None:
    """A code literal in the planner would bypass gpuplat/plan/codes.py (and the rules page)."""
    for path in sorted((ROOT / "gpuplat" / "plan").glob("*.py")):
        if path.name != "codes.py":
            assert not re.search(r"[\"']GP\d{3}[\"']", path.read_text()), path.name


def test_architecture_names_only_files_that_exist() -> None:
    """The hand-written page points at code; a moved or renamed file makes it lie."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    named = set(re.findall(r"`((?:gpuplat|components|schemas|tests|platform|stacks)/[\w./-]+?)`", text))
    assert named, "no paths found"
    missing = sorted(p for p in named if "<" not in p and not (ROOT / p).exists())
    assert missing == []


def test_catalog_page_lists_every_instance_type_and_gpu_model() -> None:
    from gpuplat.catalog.gpus import GPUS
    from gpuplat.catalog.instances import INSTANCE_TYPES

    text = (docs.DOCS / "catalog.md").read_text()
    for name in [*INSTANCE_TYPES, *GPUS]:
        assert f"| `{name}` |" in text, name
