"""Validation: the JSON Schema pass, then the named semantic rules, all diagnostics in one run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpuplat.diagnostics import Diagnostic, Level
from gpuplat.spec.positions import Pos
from gpuplat.validate import rules as rules  # importing registers the rules
from gpuplat.validate.registry import RULES, Rule, run_rules
from gpuplat.validate.schema import schema_diagnostics

__all__ = ["RULES", "Rule", "validate"]


def validate(data: Mapping[str, Any], pos: Pos, *, suppress: Sequence[str] = ()) -> list[Diagnostic]:
    """Schema errors plus semantic findings. Only warnings can be suppressed, by code."""
    found = schema_diagnostics(data, pos)
    warnings_only = [c for c in suppress if c in RULES and RULES[c].level is Level.WARNING]
    found.extend(run_rules(data, pos, schema_ok=not found, suppress=warnings_only))
    return found
