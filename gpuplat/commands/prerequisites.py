"""What a deploy of the stack still needs, told beside the verdict of a command that judges it.

`verify` and `policy` judge what the stack emits, and the base of `preview --base` is only
compared: none of them deploys. They record the stack with the program's preflight reporting
instead of stopping (gpuplat/preflight/__init__.py), and list here what would stop `pulumi up`:
the stack settings `check` refuses (GP241-GP243, at stacks/Pulumi.<stack>.yaml) and, with
`--account-facts`, the account's refusals (gpuplat/preflight/checks.py). Their exit code stays
their verdict's; `check` and the deploy's own preflight are the gates for these.
"""

from __future__ import annotations

import argparse
import sys

from gpuplat.compile import Compiled
from gpuplat.diagnostics import printable, render_text
from gpuplat.preflight.facts import AccountFacts

from .common import stack_settings_findings


def deploy_prerequisites(args: argparse.Namespace, compiled: Compiled, facts: AccountFacts | None = None) -> list[str]:
    """One line per unmet prerequisite: check's positioned stack-settings errors, then preflight's."""
    errors = [d for d in stack_settings_findings(args, compiled, given_spec=True) if d.is_error]
    lines = render_text(errors).splitlines()
    model, plan = compiled.model, compiled.plan
    if facts is not None and model is not None and plan is not None and model.target.provider.value == "aws":
        from gpuplat.preflight.checks import preflight_problems

        lines += [f"preflight: {p}" for p in preflight_problems(model, plan, facts)]
    return lines


def report_prerequisites(command: str, lines: list[str]) -> None:
    """Text form, on stderr beside the verdict (JSON documents carry them as `prerequisites`)."""
    if not lines:
        return
    head = f"gpuplat {command}: the verdict above stands; a deploy of this stack would first need:\n"
    sys.stderr.write(printable(head + "".join(f"- {line}\n" for line in lines)))
