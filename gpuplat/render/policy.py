"""`gpuplat policy`'s text: one line per rule that found something (level, rule, count, a few
examples), then the count. One line per resource would bury a single missing tag under dozens
of identical lines; `--format json` keeps every violation."""

from __future__ import annotations

from collections.abc import Sequence

from gpuplat.policies import REGISTRY
from gpuplat.policies.runner import Violation

EXAMPLES = 3


def _resource(urn: str) -> str:
    """The resource's name, the last part of its URN; '(stack)' for a stack-wide violation."""
    return urn.rsplit("::", 1)[-1] if urn else "(stack)"


def render_violations(violations: Sequence[Violation], resources: int) -> str:
    by_rule: dict[tuple[str, str], list[Violation]] = {}
    for v in violations:
        by_rule.setdefault((v.level, v.policy), []).append(v)
    lines: list[str] = []
    for (level, policy), found in sorted(by_rule.items(), key=lambda item: (item[0][0] != "mandatory", item[0][1])):
        messages = sorted({v.message for v in found})
        names = [_resource(v.urn) for v in found[:EXAMPLES]]
        more = f" and {len(found) - EXAMPLES} more" if len(found) > EXAMPLES else ""
        said = messages[0] if len(messages) == 1 else f"{messages[0]} (and {len(messages) - 1} other message(s))"
        lines.append(f"{level} {policy}: {len(found)} resource(s): {said}; e.g. {', '.join(names)}{more}\n")
    mandatory = sum(v.level == "mandatory" for v in violations)
    lines.append(
        f"{len(violations)} violation(s), {mandatory} mandatory, {len(violations) - mandatory} advisory; "
        f"{len(REGISTRY)} policies over {resources} resources\n"
    )
    return "".join(lines)
