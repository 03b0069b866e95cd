"""`gpuplat explain CODE`: what a diagnostic code means, why, how to fix it, and where to read on.

Everything comes from the installed package (the registries behind docs/rules.md), so it works
in a project far from this repository. The rules page is linked only where one is known to exist
for this installation: the source tree it runs from, or the repository and commit a VCS install
names on GitHub.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys

from gpuplat.docs import RuleRow, rule_rows
from gpuplat.scaffold.source import Origin, installed_origin

from . import EXIT_OK

STAGES = {
    "read": "reading the file",
    "merge": "merging the overlay",
    "project": "the project around the spec",
    "input": "an input beside the spec (a trace, schedule, account facts, recording)",
    "schema": "the schema pass",
    "validate": "a semantic rule over the merged spec",
    "plan": "a finding of the planner",
    "stack": "the stack's settings (stacks/Pulumi.<stack>.yaml) against its spec",
}
_GITHUB = re.compile(r"^git\+https://github\.com/([\w.-]+)/([\w.-]+?)(?:\.git)?@([0-9a-f]{40})$")


def code_argument(text: str) -> str:
    """argparse type of CODE: a known code (GP201, gp201, 201), else a usage error with a hint."""
    code = text.strip().upper()
    code = f"GP{code}" if code.isdigit() else code
    codes = [r.code for r in rule_rows()]
    if code in codes:
        return code
    digits = code[:2] + code[2:].replace("O", "0").replace("I", "1").replace("L", "1")  # GP2O1 -> GP201
    close = [digits] if digits in codes else difflib.get_close_matches(code, codes, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise argparse.ArgumentTypeError(
        f"{text!r} is not a diagnostic code of gpuplat{hint}; `gpuplat docs rules` lists them"
    )


def rules_page(origin: Origin) -> str | None:
    """A rules page that exists for this installation, or None."""
    if origin.kind == "tree" and origin.path is not None and (origin.path / "docs" / "rules.md").is_file():
        return str(origin.path / "docs" / "rules.md")
    match = _GITHUB.match(origin.url) if origin.kind == "vcs" else None
    return f"https://github.com/{match[1]}/{match[2]}/blob/{match[3]}/docs/rules.md" if match else None


def _text(row: RuleRow, page: str | None) -> str:
    source = row.source or "none: a platform convention (how gpuplat builds the platform)"
    more = page or "none known for this installation; `gpuplat docs rules` prints the page"
    return (
        f"{row.code} {row.name}: {row.level}, {STAGES.get(row.stage, row.stage)}\n"
        f"why:    {row.rationale}\n"
        f"fix:    {row.fix}\n"
        f"source: {source}\n"
        f"rules:  {more}\n"
    )


def cmd_explain(args: argparse.Namespace) -> int:
    row = next(r for r in rule_rows() if r.code == args.code)
    page = rules_page(installed_origin())
    if args.format == "json":
        document = {
            "code": row.code,
            "name": row.name,
            "level": row.level,
            "stage": row.stage,
            "why": row.rationale,
            "fix": row.fix,
            "source": row.source or None,
            "rulesPage": page,
        }
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        sys.stdout.write(_text(row, page))
    return EXIT_OK
