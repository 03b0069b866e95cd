"""`--all-stacks`: one command over every stack of the project, one exit code, one JSON document.

The stacks are the project's: every `stacks/<stack>.yaml` overlay and every `stacks/Pulumi.<stack>.yaml`
settings file, in name order. Each stack runs as `--stack <stack>` would, its output under a
heading (text), one after the other (markdown, github) or its JSON document in
`{"stacks": [{"stack", "exitCode", "result"}]}`; with those formats its stderr is headed there.
The exit code is the worst of them (0 ok, 1 invalid / violations / refused, 2 usage or IO).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpuplat.compile import UnknownStackError, check_stack_name

from . import EXIT_USAGE


def project_stacks(root: Path = Path()) -> list[str]:
    """The stacks this project has, by their overlay or their Pulumi settings file."""
    names = {p.stem.removeprefix("Pulumi.") for p in (root / "stacks").glob("*.yaml")}
    stacks: list[str] = []
    for name in sorted(names):
        try:
            stacks.append(check_stack_name(name))
        except UnknownStackError:
            continue  # not a stack's file (e.g. a file named with a space)
    return stacks


def _one(
    run: Callable[[argparse.Namespace], int], args: argparse.Namespace, stack: str, headed: bool
) -> tuple[int, str]:
    own = argparse.Namespace(**{**vars(args), "stack": stack})
    out, err = io.StringIO(), io.StringIO()
    # Text heads each stack on stdout, before its stderr; other formats keep stdout for the document,
    # so what a stack says on stderr (a refusal, an error) is headed there, or a log of three
    # identical refusals would not say whose each is.
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(sys.stderr if headed else err):
        try:
            code = run(own)
        except UnknownStackError as error:
            sys.stderr.write(f"gpuplat: error: {error}\n")
            code = EXIT_USAGE
    if err.getvalue():
        sys.stderr.write(f"== stack {stack} ==\n{err.getvalue()}")
    return code, out.getvalue()


def run_all_stacks(run: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    stacks = project_stacks()
    if not stacks:
        sys.stderr.write("gpuplat: error: --all-stacks: no stacks/<stack>.yaml or stacks/Pulumi.<stack>.yaml here\n")
        return EXIT_USAGE
    headed = args.format == "text"  # json gathers, github annotations and markdown comments concatenate
    results: list[dict[str, Any]] = []
    for stack in stacks:
        if headed:
            sys.stdout.write(f"== stack {stack} ==\n")
            sys.stdout.flush()  # before the command's stderr, so a terminal shows them in order
        code, out = _one(run, args, stack, headed)
        result: Any = out
        if args.format == "json":
            with contextlib.suppress(json.JSONDecodeError):  # else kept as text: it failed before its document
                result = json.loads(out) if out.strip() else None
        else:
            sys.stdout.write(out if not out or out.endswith("\n") else out + "\n")
            if args.format == "markdown":
                sys.stdout.write("\n")
        results.append({"stack": stack, "exitCode": code, "result": result})
    if args.format == "json":
        sys.stdout.write(json.dumps({"stacks": results}, indent=2) + "\n")
    elif headed:
        verdicts = ", ".join(
            f"{r['stack']} {'ok' if r['exitCode'] == 0 else 'exit ' + str(r['exitCode'])}" for r in results
        )
        sys.stdout.write(f"{len(results)} stack(s): {verdicts}\n")
    return max(r["exitCode"] for r in results)
