"""The members of a fleet, compiled offline from their own specs.

A member of this project is read from its stack's files (platform/platform.yaml with
stacks/<stack>.yaml), or from the member's `spec` when given; a member of another project
(`org/project/stack`) without `spec` cannot be read here and is reported as unknown, never
guessed. Compiling a member runs its own rules, fleet rules included: while members are being
compiled, the fleet rules do not compile members again (`loading_members`), so two members that
name each other do not recurse.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuplat.model import Platform
from gpuplat.plan import Plan

_LOADING: ContextVar[bool] = ContextVar("gpuplat_fleet_loading", default=False)
# gpuplat/compile.py hands its two functions in when imported (this package is below it):
# resolve_sources(stack, spec, overlay) and compile_sources(sources).
_PIPELINE: list[tuple[Callable[..., Any], Callable[[Any], Any]]] = []


def install(resolve_sources: Callable[..., Any], compile_sources: Callable[[Any], Any]) -> None:
    _PIPELINE[:] = [(resolve_sources, compile_sources)]


_CACHE: dict[tuple[str, str | None, float, float], LoadedMember] = {}


@dataclass(frozen=True)
class LoadedMember:
    name: str
    stack: str
    source: str  # the files read, as a person would name them; "" when none could be
    model: Platform | None = None
    plan: Plan | None = None
    problem: str = ""  # why the member could not be compiled; "" when it was (or is not readable)

    @property
    def readable(self) -> bool:
        return bool(self.source)


def loading_members() -> bool:
    return _LOADING.get()


@contextmanager
def _loading() -> Generator[None]:
    token = _LOADING.set(True)
    try:
        yield
    finally:
        _LOADING.reset(token)


def _mtime(path: Path | None) -> float:
    try:
        return path.stat().st_mtime if path is not None else 0.0
    except OSError:
        return -1.0


def load_member(member: Mapping[str, Any]) -> LoadedMember:
    """Compile one member (a `fleet.members` entry as plain data) from its files."""
    if not _PIPELINE:
        raise RuntimeError("gpuplat.compile installs the pipeline that compiles fleet members")
    resolve_sources, compile_sources = _PIPELINE[0]
    name, stack, spec = str(member.get("name")), str(member.get("stack")), member.get("spec")
    if not isinstance(spec, str) and "/" in stack:
        return LoadedMember(name, stack, "")  # another project's stack: its spec is not here
    try:
        # An explicit spec takes no overlay; a stack of this project its stacks/<stack>.yaml.
        sources = resolve_sources(stack.split("/")[-1], spec, "") if isinstance(spec, str) else resolve_sources(stack)
    except ValueError as err:  # UnknownStackError: no such stack in this project
        return LoadedMember(name, stack, "", problem=str(err))
    shown = str(sources.spec) + (f" + {sources.overlay}" if sources.overlay else "")
    key = (
        str(sources.spec),
        str(sources.overlay) if sources.overlay else None,
        _mtime(sources.spec),
        _mtime(sources.overlay),
    )
    cached = _CACHE.get(key)
    if cached is not None and cached.name == name:
        return cached
    with _loading():
        compiled = compile_sources(sources)
    if compiled.ok and compiled.model is not None:
        loaded = LoadedMember(name, stack, shown, compiled.model, compiled.plan)
    else:
        errors = [d for d in compiled.diagnostics if d.is_error]
        first = f": {errors[0].file}:{errors[0].line}: {errors[0].message}" if errors else ""
        loaded = LoadedMember(name, stack, shown, problem=f"{len(errors)} error(s) in {shown}{first}")
    _CACHE[key] = loaded
    return loaded
