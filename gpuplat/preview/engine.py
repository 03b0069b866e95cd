"""Offline recording engine: run a real Pulumi program and record every registration.

The program runs with the real pulumi SDK and provider SDKs against a recording resource
monitor (pulumi's MockMonitor, extended): no Pulumi CLI, no credentials, no network. Each
RegisterResource request becomes one RecordedResource with its full inputs and options.

This module is importable without pulumi; pulumi is imported when a recording starts, so
`import gpuplat.preview` stays cheap for commands that never record.

Conventions of the recording (the CLI contract depends on them):
* Order: pre-order walk of the parent tree starting at the stack, siblings by URN.
  Registration order is not used: it follows event-loop interleaving.
* The stack resource (pulumi:pulumi:Stack) is recorded, parent None; everything else has
  a parent URN. Stack exports and components' register_outputs land in `outputs`.
* Values, in inputs, options and outputs: unknown -> "<computed>", secret -> "<secret>",
  resource reference -> {"$resource": urn}, asset -> {"$asset": {path|text|uri, sha256?}},
  archive -> {"$archive": {...}}; dict keys sorted; whole-number floats become int (the
  wire carries only doubles); None-valued map entries are dropped, as the SDK does.
* Options use the engine's (camelCase) names and only appear when set: protect,
  retainOnDelete, dependsOn (every URN the engine waits on: explicit depends_on plus the
  resources whose outputs feed the inputs, components expanded to their children; this is
  what the engine stores as `dependencies`), ignoreChanges, replaceOnChanges,
  deleteBeforeReplace, aliases, provider (URN), providers ({package: URN}),
  additionalSecretOutputs, customTimeouts, import, deletedWith, replaceWith,
  replacementTrigger, hideDiffs, envVarMappings, remote, hooks, read (id, for `.get`).
  The provider plugin version the SDK attaches to every request is not recorded.
* The program runs as a preview (pulumi.runtime.is_dry_run() is True).
"""

from __future__ import annotations

import functools
import gc
import importlib
import os
import runpy
import sys
import threading
from collections.abc import Callable, Generator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from gpuplat.preflight.facts import AccountFacts

# Re-exported: the recording's vocabulary lives in records.py, which _runtime and _monitor
# import instead of this module, so that the two never import each other.
from .records import DuplicateUrnError, RecordedResource, RecordingError, UnsupportedFeatureError

__all__ = [
    "DuplicateUrnError",
    "RecordedResource",
    "RecordingError",
    "UnsupportedFeatureError",
    "record_main",
    "record_program",
]


def record_program(
    program: Callable[[], None],
    *,
    project: str,
    stack: str,
    config: Mapping[str, str] | None = None,
) -> list[RecordedResource]:
    """Run `program` as the body of a Pulumi program and return what it registered.

    Exceptions raised by the program, by apply callbacks or by the recorder
    (DuplicateUrnError, UnsupportedFeatureError) propagate unchanged. Not re-entrant with
    record_main in other threads (record_main changes the process's cwd).
    """
    return _record(program, project=project, stack=stack, config=config, root_directory=os.getcwd())


def record_main(
    main_path: Path,
    *,
    project: str,
    stack: str,
    config: Mapping[str, str] | None = None,
    facts: AccountFacts | None = None,
) -> list[RecordedResource]:
    """Run a `__main__.py` (or a directory holding one) the way `pulumi up` would.

    The file runs as `__main__` with its directory as cwd and first on sys.path. Modules
    that resolve to that directory are imported afresh for the run and dropped afterwards,
    so recording two checkouts (HEAD and a base ref) in one process never mixes their code.
    """
    path = Path(main_path).resolve()
    if path.is_dir():
        path = path / "__main__.py"
    if not path.is_file():
        raise FileNotFoundError(f"no Pulumi program at {path}")

    def program() -> None:
        runpy.run_path(str(path), run_name="__main__")

    _recorder()  # loaded (and cached) before the program's directory shadows `gpuplat`
    with _program_environment(path.parent):
        return _record(
            program, project=project, stack=stack, config=config, root_directory=str(path.parent), facts=facts
        )


def _record(
    program: Callable[[], None],
    *,
    project: str,
    stack: str,
    config: Mapping[str, str] | None,
    root_directory: str,
    facts: AccountFacts | None = None,
) -> list[RecordedResource]:
    # Imported here, before any module shadowing (record_main shadows after this call returns
    # the module), so pulumi loads once and the recorder's own modules, progress counter
    # included, are never re-imported from a checkout under preview.
    _runtime = _recorder()

    settings = {key: _config_value(value) for key, value in (config or {}).items()}
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["resources"] = _runtime.run(
                program, project=project, stack=stack, config=settings, root_directory=root_directory, facts=facts
            )
        except BaseException as exc:  # re-raised on the caller's thread
            outcome["error"] = exc

    # A fresh thread has a fresh contextvars context and no event loop: pulumi's settings,
    # config and root stack cannot leak between recordings or from the caller, and a caller
    # that is itself inside an event loop is fine.
    worker = threading.Thread(target=target, name="gpuplat-preview-record", daemon=True)
    with cycle_collector_paused():
        worker.start()
        worker.join()
    error = outcome.get("error")
    if error is not None:
        raise error
    resources: list[RecordedResource] = outcome["resources"]
    return resources


@contextmanager
def cycle_collector_paused() -> Generator[None]:
    """Python's cycle collector off while a program registers its resources.

    The SDK allocates a few thousand objects per resource (Outputs, futures, tasks, protobuf
    structs), and every full collection walks every live one, so the collector's share grows with
    the program: 40-45 % of a 2,800-resource preview's CPU (bench/results.md). Reference
    counting frees nearly all of them anyway. On the way out, what the program left alive goes
    to the oldest generation without a walk (freeze, then unfreeze): enabling the collector over
    a full youngest generation would walk it all at once, a fifth of a small preview. It stays
    collectable there, at the next full collection, and the caller's setting is restored.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        if was_enabled:
            gc.enable()


@functools.cache
def _recorder() -> Any:
    """This package's _runtime module; cached, so a shadowed `gpuplat` never replaces it."""
    from . import _runtime

    return _runtime


def _config_value(value: object) -> str:
    if isinstance(value, str):
        return value
    import json

    return json.dumps(value)


def _owned_module_names(directory: Path) -> set[str]:
    names: set[str] = set()
    for entry in directory.iterdir():
        if entry.suffix == ".py" and entry.stem.isidentifier() and entry.stem != "__main__":
            names.add(entry.stem)
        elif entry.is_dir() and entry.name.isidentifier() and (entry / "__init__.py").is_file():
            names.add(entry.name)
    return names


@contextmanager
def _program_environment(directory: Path) -> Generator[None]:
    owned = _owned_module_names(directory)

    def is_owned(module_name: str) -> bool:
        return module_name.partition(".")[0] in owned

    saved = {name: module for name, module in sys.modules.items() if is_owned(name)}
    for name in saved:
        del sys.modules[name]
    previous_cwd = os.getcwd()
    sys.path.insert(0, str(directory))
    importlib.invalidate_caches()
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(previous_cwd)
        with suppress(ValueError):
            sys.path.remove(str(directory))
        for name in [name for name in sys.modules if is_owned(name)]:
            del sys.modules[name]
        sys.modules.update(saved)
