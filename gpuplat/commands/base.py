"""The base of `--base REF` for `plan` and `preview`: the stack's files as they are at REF, and the
base's plan.

Which compiler plans the base (and, in `preview`, records it: engine.record_main imports the
program directory's own `gpuplat` and `components` when it has them):

- A project that carries no compiler of its own (a project `gpuplat init` wrote, which installs
  gpuplat): the base commit's spec, overlay and stack settings, compiled and planned by the
  running gpuplat, in this process. If the base's requirements pin another gpuplat than the one
  running, `version_note` says so: a difference may then be the compiler's, not the change's.
- A repository that carries its own compiler (this one, at the base commit): the base's own
  planner, `python -m gpuplat.cli plan` run in the checkout (PYTHONPATH and cwd = the checkout),
  never imported here, so a pull request that changes the planner or the components compares
  the old code's numbers and resources with the new code's, which is what its review is about.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

from gpuplat.compile import DEFAULT_SPEC, OVERLAY_ENV, SPEC_ENV, UnknownStackError, compile_stack
from gpuplat.preview.checkout import BaseRefError, resolve_ref
from gpuplat.render.plan import plan_json
from gpuplat.render.plan_delta import PlanResult

REQUIREMENTS = "requirements.txt"


def running_version() -> str:
    """The running gpuplat's version: the installed distribution's, else the package's own."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gpuplat")
    except PackageNotFoundError:
        from gpuplat import __version__

        return __version__


def _running_refs() -> set[str]:
    """The git revision the running gpuplat was installed from (PEP 610 direct_url.json), if any."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        text = distribution("gpuplat").read_text("direct_url.json")
        info = cast("dict[str, Any]", cast("dict[str, Any]", json.loads(text or "{}")).get("vcs_info") or {})
    except (PackageNotFoundError, json.JSONDecodeError, OSError):
        return set()
    refs = {str(info.get(k)) for k in ("commit_id", "requested_revision") if info.get(k)}
    return refs | {r[:n] for r in refs for n in (7, 8, 10, 12)}


def carries_compiler(root: Path) -> bool:
    """Whether the checkout holds a gpuplat of its own (this repository does; a project does not)."""
    return (root / "gpuplat" / "cli.py").is_file()


def in_base(option: str, given: str | None, root: Path, ref: str) -> str | None:
    """The file `given` (as typed: relative, absolute, through `..` or a symlink) as the same
    file of the base checkout `root`, which stands where the cwd stands in the repository.
    Handing the base the path as typed would, for an absolute one, compile the working tree's
    file at the base and diff the head with itself. BaseRefError (exit 2) for a file outside
    the repository: the base commit has no copy of it."""
    if not given:
        return given
    top = resolve_ref(ref)[0].resolve()
    try:
        target = Path(given).resolve()
        inside = target.relative_to(top)
    except (ValueError, OSError, RuntimeError) as err:
        raise BaseRefError(
            f"--base {ref}: {option} {given} is not a file of this repository, so the base commit has no copy of it",
            2,
        ) from err
    return str(root / os.path.relpath(top / inside, Path.cwd().resolve()))


def base_sources(args: argparse.Namespace, root: Path) -> tuple[str | None, str | None]:
    """--spec / --overlay (or their environment variables) as the base checkout's files."""
    spec = args.spec or os.environ.get(SPEC_ENV) or None
    overlay = args.overlay if args.overlay is not None else os.environ.get(OVERLAY_ENV)
    spec_at, overlay_at = in_base("--spec", spec, root, args.base), in_base("--overlay", overlay, root, args.base)
    wanted = Path(spec_at) if spec_at else root / DEFAULT_SPEC
    if not wanted.is_file():
        shown = os.path.relpath(wanted, root)
        raise BaseRefError(
            f"--base {args.base}: {shown} does not exist at that commit (the spec was added or moved since), "
            "so there is no base to compare with; give a ref that has it",
            2,
        )
    return spec_at, overlay_at


def base_plan(root: Path, stack: str, spec: str | None, overlay: str | None) -> PlanResult:
    """The plan of the base checkout `root` (see the module docstring for which planner)."""
    if carries_compiler(root):
        return _own_planner(root, stack, spec, overlay)
    with contextlib.chdir(root):  # the project's files, named as the program names them
        try:
            compiled = compile_stack(stack, spec, overlay)
        except UnknownStackError as err:
            return PlanResult(None, f"the base has no stack {stack} ({err})")
    compiler = f"gpuplat {running_version()} (the running one)"
    if not compiled.ok or compiled.model is None or compiled.plan is None:
        first = next((d for d in compiled.diagnostics if d.is_error), None)
        why = f": {first.file}:{first.line}: {first.code} {first.message}" if first else ""
        return PlanResult(None, f"the base's spec does not compile{why}", compiler)
    return PlanResult(plan_json(compiled.model, compiled.plan), None, compiler, version_note(root))


def _own_planner(root: Path, stack: str, spec: str | None, overlay: str | None) -> PlanResult:
    """The base checkout's own `gpuplat plan --format json`, run in a subprocess."""
    command = [sys.executable, "-m", "gpuplat.cli", "plan", "--stack", stack, "--format", "json"]
    if spec:
        command += ["--spec", spec]
    if overlay is not None:
        command += ["--overlay", overlay]
    path = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)
    compiler = "the base's own gpuplat (the compiler this repository holds at that commit)"
    try:
        done = subprocess.run(
            command,
            cwd=root,
            env={**os.environ, "PYTHONPATH": path},
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return PlanResult(None, f"gpuplat plan could not run at the base ({err})", compiler)
    if done.returncode == 2 and "invalid choice" in done.stderr:
        return PlanResult(None, "the base's gpuplat has no plan command", compiler)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return PlanResult(None, f"gpuplat plan failed at the base (exit {done.returncode}): {last}", compiler)
    try:
        loaded = json.loads(done.stdout)
    except json.JSONDecodeError:
        return PlanResult(None, "the base's gpuplat plan printed no JSON document", compiler)
    if not isinstance(loaded, dict) or "pools" not in loaded:
        return PlanResult(None, "the base's plan JSON has no pools", compiler)
    return PlanResult(cast("dict[str, Any]", loaded), None, compiler)


# ---- the gpuplat a project pins -------------------------------------------------------------------

# `gpuplat`, `gpuplat[verify]`, ... then a version specifier, or `@ URL`.
_REQUIREMENT = re.compile(r"^\s*gpuplat\s*(?:\[[^\]]*\])?\s*(?P<rest>(?:[=<>!~@].*)?)$", re.IGNORECASE)
_WHEEL = re.compile(r"gpuplat-(?P<version>[0-9][^-/]*)-[^/]*\.whl", re.IGNORECASE)
_VCS_REF = re.compile(r"^git\+\S+?@(?P<ref>[^#@/\s]+)(?:#.*)?$")


def pinned(root: Path) -> str | None:
    """The line of the project's requirements that names gpuplat (or a gpuplat wheel), or None."""
    try:
        text = (root / REQUIREMENTS).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if line and not line.startswith("#") and (_REQUIREMENT.match(line) or _WHEEL.search(line)):
            return line
    return None


def _release(version: str) -> tuple[int, ...] | None:
    parts = version.strip().removeprefix("v").split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None


def _compare(op: str, have: tuple[int, ...], want: tuple[int, ...]) -> bool:
    return {
        "==": have == want,
        "!=": have != want,
        ">=": have >= want,
        "<=": have <= want,
        ">": have > want,
        "<": have < want,
    }[op]


def _satisfies(version: str, specifiers: str) -> bool | None:
    """Whether `version` meets `==1.2`, `>=1.0,<2` ... (release numbers only), None if unsure."""
    have = _release(version)
    if have is None:
        return None
    for spec in (s.strip() for s in specifiers.split(",") if s.strip()):
        match = re.fullmatch(r"(===|==|!=|>=|<=|>|<|~=)\s*(\S+)", spec)
        want = _release(match.group(2).removesuffix(".*")) if match else None
        if match is None or want is None:
            return None
        op = match.group(1)
        if op == "~=":
            if not (have >= want and have[: len(want) - 1] == want[:-1]):
                return False
        elif op == "===" or (op == "==" and match.group(2).endswith(".*")):
            if have[: len(want)] != want or (op == "===" and have != want):
                return False
        elif not _compare(op, have + (0,) * (len(want) - len(have)), want + (0,) * (len(have) - len(want))):
            return False
    return True


def version_note(root: Path) -> str | None:
    """What the base's requirements pin when it is not the running gpuplat, or None."""
    line = pinned(root)
    if line is None:
        return None
    running = running_version()
    wheel = _WHEEL.search(line)
    match = _REQUIREMENT.match(line)
    rest = match.group("rest").strip() if match else ""
    target = rest.removeprefix("@").strip() if rest.startswith("@") else ""
    vcs = _VCS_REF.match(target) if target else None
    if wheel is not None:
        same: bool | None = _release(wheel.group("version")) == _release(running)
        what = f"the wheel of gpuplat {wheel.group('version')}"
    elif vcs is not None:
        ref = vcs.group("ref")
        same = (
            True
            if ref in _running_refs() or (_release(ref) is not None and _release(ref) == _release(running))
            else None
        )
        what = f"gpuplat at git ref {ref}"
    elif rest and not rest.startswith("@"):
        same = _satisfies(running, rest)
        what = f"gpuplat{rest}"
    else:
        return None  # a bare `gpuplat`: any version
    if same:
        return None
    verdict = "another gpuplat than" if same is False else "a gpuplat that may not be"
    return (
        f"the base's {REQUIREMENTS} pins {what}, {verdict} the one that compiled it here (gpuplat {running}); "
        "a difference may come from the compiler, not from the change"
    )
