"""The single registry of semantic rules (pass 2).

A rule is a small function over the merged document that yields `Finding`s. The registry
gives it a stable code, a level and a one-line rationale naming the fact it rests on; the
runner turns findings into positioned Diagnostics. Rules read plain data because they also
run when the schema pass found errors elsewhere (all diagnostics in one run): a rule that
trips over data the schema already rejected is skipped, never allowed to crash the check.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpuplat.diagnostics import Diagnostic, Level, json_path
from gpuplat.spec.positions import PathPart, Pos


@dataclass(frozen=True)
class Finding:
    path: tuple[PathPart, ...]
    message: str
    at_key: bool = False


RuleFn = Callable[[Mapping[str, Any]], Iterable[Finding]]


@dataclass(frozen=True)
class Rule:
    code: str
    name: str  # kebab-case, e.g. procurement-sums-to-100
    level: Level
    rationale: str
    check: RuleFn
    source: str = ""  # URL of the fact the rationale rests on; empty for a platform convention
    fix: str = ""  # what to change in the spec, in general (each finding's message says it for its case)


RULES: dict[str, Rule] = {}


def _taken(code: str, name: str) -> bool:
    rules: list[Rule | StackRule] = [*RULES.values(), *STACK_RULES.values()]
    return code in RULES or code in STACK_RULES or any(r.name == name for r in rules)


def rule(
    code: str, name: str, level: Level, rationale: str, source: str = "", *, fix: str = ""
) -> Callable[[RuleFn], RuleFn]:
    """Register a rule; codes and names are unique for ever (users suppress by code). `source` is
    the URL of the AWS / Kubernetes / vendor document the rationale rests on (cfn-lint's source_url),
    shown on docs/rules.md; it stays empty only where the rule is a platform convention. `fix` says
    how to fix a finding, for `gpuplat explain` and docs/rules.md."""

    def register(fn: RuleFn) -> RuleFn:
        if _taken(code, name):
            raise ValueError(f"duplicate rule {code} {name}")
        RULES[code] = Rule(code, name, level, rationale, fn, source, fix)
        return fn

    return register


def run_rules(
    data: Mapping[str, Any], pos: Pos, *, schema_ok: bool, suppress: Sequence[str] = ()
) -> Iterator[Diagnostic]:
    for code in sorted(RULES):
        r = RULES[code]
        if code in suppress:
            continue
        try:
            findings = list(r.check(data))
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, ZeroDivisionError, OverflowError):
            if schema_ok:
                raise
            continue  # the schema pass already reported the malformed data this rule needs
        for f in findings:
            origin = pos.locate(f.path, prefer_key=f.at_key)
            yield Diagnostic(code, r.level, f.message, json_path(f.path), origin.file, origin.line, origin.col)


@dataclass(frozen=True)
class StackSettings:
    """A stack's Pulumi settings file (stacks/Pulumi.<stack>.yaml), with the positions of its values."""

    stack: str
    file: str  # as diagnostics show it
    document: Mapping[str, Any]  # the whole file; its `config` mapping is what Pulumi hands the program
    pos: Pos
    exists: bool = True

    @property
    def config(self) -> Mapping[str, Any]:
        config = self.document.get("config")
        return config if isinstance(config, Mapping) else {}  # pyright: ignore[reportUnknownVariableType]


StackRuleFn = Callable[[Mapping[str, Any], StackSettings], Iterable[Finding]]


@dataclass(frozen=True)
class StackRule:
    """A rule comparing a stack's settings with its merged spec; findings point into the settings file."""

    code: str
    name: str
    level: Level
    rationale: str
    check: StackRuleFn
    source: str = ""
    fix: str = ""


STACK_RULES: dict[str, StackRule] = {}


def stack_rule(
    code: str, name: str, level: Level, rationale: str, source: str = "", *, fix: str = ""
) -> Callable[[StackRuleFn], StackRuleFn]:
    """Register a stack-settings rule: same codes, names and levels as `rule`, run by `gpuplat
    check` on the stack's own files (not with --spec or --overlay)."""

    def register(fn: StackRuleFn) -> StackRuleFn:
        if _taken(code, name):
            raise ValueError(f"duplicate rule {code} {name}")
        STACK_RULES[code] = StackRule(code, name, level, rationale, fn, source, fix)
        return fn

    return register


def run_stack_rules(data: Mapping[str, Any], settings: StackSettings) -> Iterator[Diagnostic]:
    for code in sorted(STACK_RULES):
        r = STACK_RULES[code]
        for f in r.check(data, settings):
            origin = settings.pos.locate(f.path, prefer_key=f.at_key)
            yield Diagnostic(code, r.level, f.message, json_path(f.path), origin.file, origin.line, origin.col)
