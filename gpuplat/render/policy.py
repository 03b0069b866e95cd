"""`gpuplat policy`'s text: one line per violation, then the count."""

from __future__ import annotations

from collections.abc import Sequence

from gpuplat.policies import REGISTRY
from gpuplat.policies.runner import Violation


def render_violations(violations: Sequence[Violation], resources: int) -> str:
    lines = [f"{v.level} {v.policy} {v.urn or '(stack)'}: {v.message}\n" for v in violations]
    mandatory = sum(v.level == "mandatory" for v in violations)
    lines.append(
        f"{len(violations)} violation(s), {mandatory} mandatory, {len(violations) - mandatory} advisory; "
        f"{len(REGISTRY)} policies over {resources} resources\n"
    )
    return "".join(lines)
