"""`gpuplat preview`: compile the stack, run the real `__main__.py` offline, print every resource.

Imported only when the command runs (the CLI keeps pulumi out of check and plan).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from ruamel.yaml import YAML

from gpuplat.compile import OVERLAY_ENV, SPEC_ENV, compile_sources, resolve_sources
from gpuplat.diagnostics import render_text

from .engine import DuplicateUrnError, RecordedResource, RecordingError, record_main

PROJECT = "gpu-platform"  # Pulumi.yaml `name`; part of every URN


class PreviewError(Exception):
    """A problem the user can act on; the CLI prints it without a traceback and exits 1."""


def stack_config(stack: str, root: Path = Path()) -> dict[str, str]:
    """Pulumi config of `stacks/Pulumi.<stack>.yaml`, flattened as the Pulumi CLI passes it.

    Structured values (e.g. `aws:defaultTags`) reach the program as JSON strings, exactly as
    the real engine hands them over; secrets are not readable offline and are left out.
    """
    path = root / "stacks" / f"Pulumi.{stack}.yaml"
    if not path.exists():
        return {}
    yaml: Any = YAML(typ="safe")
    loaded = cast("dict[str, Any] | None", yaml.load(path.read_text(encoding="utf-8")))
    raw = cast("dict[str, Any]", (loaded or {}).get("config") or {})
    config: dict[str, str] = {}
    for key, value in raw.items():
        if isinstance(value, dict) and "secure" in value:
            continue
        config[key] = value if isinstance(value, str) else json.dumps(value)
    return config


@contextmanager
def _program_sources(spec: str | None, overlay: str | None) -> Generator[None]:
    """Hand --spec/--overlay to `__main__.py`, which runs from the project directory."""
    saved = {k: os.environ.get(k) for k in (SPEC_ENV, OVERLAY_ENV)}
    try:
        if spec:
            os.environ[SPEC_ENV] = str(Path(spec).resolve())
        if overlay is not None:
            os.environ[OVERLAY_ENV] = str(Path(overlay).resolve()) if overlay else ""
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def record_stack(
    stack: str, spec: str | None = None, overlay: str | None = None, root: Path = Path()
) -> list[RecordedResource]:
    main = root / "__main__.py"
    if not main.exists():
        raise PreviewError(f"{main}: no Pulumi program here; run gpuplat preview from the project directory")
    with _program_sources(spec, overlay):
        try:
            return record_main(main.resolve(), project=PROJECT, stack=stack, config=stack_config(stack, root))
        except DuplicateUrnError as err:
            raise PreviewError(f"duplicate URN {err.urn}: two resources of one type share a name") from err
        except RecordingError as err:
            raise PreviewError(str(err)) from err


# ---- rendering ----------------------------------------------------------------------------

_FLAGS = ("protect", "retainOnDelete", "deleteBeforeReplace")


def _flags(options: Mapping[str, Any]) -> str:
    shown = [f for f in _FLAGS if options.get(f)]
    if options.get("dependsOn"):
        shown.append(f"dependsOn={len(options['dependsOn'])}")
    return f"  [{', '.join(shown)}]" if shown else ""


def _inputs_lines(value: Any, indent: str) -> Iterator[str]:
    text = json.dumps(value, indent=2, sort_keys=True)
    for line in text.splitlines():
        yield f"{indent}{line}\n"


def render_tree(resources: Sequence[RecordedResource], *, show_inputs: bool) -> str:
    depth: dict[str | None, int] = {None: -1}
    out: list[str] = []
    for r in resources:  # already in pre-order, so a parent's depth is always known
        level = depth.get(r.parent, 0) + 1
        depth[r.urn] = level
        pad = "  " * level
        out.append(f"{pad}+ {r.type}  {r.name}{_flags(r.options)}\n")
        if show_inputs and r.custom and r.inputs:
            out.extend(_inputs_lines(r.inputs, pad + "    "))
    custom = sum(r.custom for r in resources)
    out.append(f"{len(resources)} resources ({custom} custom, {len(resources) - custom} components)\n")
    return "".join(out)


def cmd_preview(args: argparse.Namespace) -> int:
    compiled = compile_sources(resolve_sources(args.stack, args.spec, args.overlay), suppress=args.suppress)
    sys.stderr.write(render_text(compiled.diagnostics))  # warnings too: a preview is read by humans
    if not compiled.ok:
        return 1
    try:
        resources = record_stack(args.stack, args.spec, args.overlay)
    except PreviewError as err:
        sys.stderr.write(f"gpuplat preview: error: {err}\n")
        return 1
    except Exception as err:  # a bug in a component: say where, without burying it in a traceback
        sys.stderr.write(f"gpuplat preview: the program failed: {type(err).__name__}: {err}\n")
        return 1
    if args.format == "json":
        sys.stdout.write(json.dumps({"resources": [r.to_json() for r in resources]}, indent=2) + "\n")
    else:
        sys.stdout.write(render_tree(resources, show_inputs=args.show_inputs))
    return 0
