"""`--suppress CODE[,CODE...]`: which codes a user may silence, checked before anything runs.

Only warnings can be suppressed: an error stays an error. A code that names no warning (a typo,
an error's code, a code from another tool) is a usage error rather than a silent no-op, which
would leave the user believing a warning is handled.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from gpuplat.diagnostics import Level


def codes_and_levels() -> dict[str, Level]:
    from gpuplat.input_codes import INPUT_CODES  # the loader's, the merge's, the project's, the schema's
    from gpuplat.plan.codes import PLAN_CODES
    from gpuplat.validate import registry  # importing gpuplat.validate registers every rule

    known = {code: rule.level for code, rule in registry.RULES.items()}
    known.update({code: plan_code.level for code, plan_code in PLAN_CODES.items()})
    known.update({code: stack_rule.level for code, stack_rule in registry.STACK_RULES.items()})
    known.update({code: input_code.level for code, input_code in INPUT_CODES.items()})
    return known


def split_codes(values: Iterable[str]) -> list[str]:
    """`--suppress GP300,GP302 --suppress gp352` -> [GP300, GP302, GP352]."""
    return [code.strip().upper() for value in values for code in value.split(",") if code.strip()]


def problem(codes: Iterable[str]) -> str | None:
    """Why these codes cannot be suppressed, or None."""
    known = codes_and_levels()
    for code in codes:
        level = known.get(code)
        if level is Level.ERROR:
            return f"--suppress {code}: {code} is an error, and only warnings can be suppressed"
        if level is None:
            warnings = sorted(c for c, lvl in known.items() if lvl is Level.WARNING)
            close = difflib.get_close_matches(code, warnings, n=1)
            hint = f"; did you mean {close[0]}?" if close else " (`gpuplat docs rules` lists them)"
            return f"--suppress {code}: no warning has this code{hint}"
    return None
