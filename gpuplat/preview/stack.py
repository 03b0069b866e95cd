"""Record one stack of this project offline: its Pulumi config, the --spec/--overlay handed to
`__main__.py`, and the recording engine run over it (engine.py).

Shared by `gpuplat preview`, `policy` and `verify` and by the tests: what they see is what the
real program registers for the stack.
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from ruamel.yaml import YAML

from gpuplat.compile import OVERLAY_ENV, SPEC_ENV
from gpuplat.preflight import PREFLIGHT_SETTING, REPORT
from gpuplat.preflight.facts import AccountFacts
from gpuplat.project import PULUMI_PROJECT

from .engine import DuplicateUrnError, RecordedResource, RecordingError, record_main

PROJECT = PULUMI_PROJECT


class PreviewError(Exception):
    """A problem the user can act on; the CLI prints it without a traceback and exits 1."""


class PreflightStop(PreviewError):
    """The program's preflight refused the stack for the account's facts: nothing was registered."""


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
def _program_sources(spec: str | None, overlay: str | None, root: Path = Path()) -> Generator[None]:
    """Hand --spec/--overlay to `__main__.py`, which runs from its project directory.

    Relative paths are taken from `root`, so a base checkout previews its own copy of the files.
    """
    saved = {k: os.environ.get(k) for k in (SPEC_ENV, OVERLAY_ENV)}
    try:
        if spec:
            os.environ[SPEC_ENV] = str((root / spec).resolve())
        if overlay is not None:
            os.environ[OVERLAY_ENV] = str((root / overlay).resolve()) if overlay else ""
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def record_stack(
    stack: str,
    spec: str | None = None,
    overlay: str | None = None,
    root: Path = Path(),
    facts: AccountFacts | None = None,
    *,
    judge: bool = False,
) -> list[RecordedResource]:
    """What the stack's program registers. `judge`: the recording judges the stack (verify, policy,
    the base of a diff) instead of previewing its deploy, so what preflight would refuse is warned
    about and the program goes on (gpuplat/preflight/__init__.py); the caller reports it."""
    main = root / "__main__.py"
    if not main.exists():
        raise PreviewError(f"{main}: no Pulumi program here; run gpuplat preview from the project directory")
    config = stack_config(stack, root)
    if judge:
        config[PREFLIGHT_SETTING] = REPORT
    with _program_sources(spec, overlay, root):
        try:
            return record_main(main.resolve(), project=PROJECT, stack=stack, config=config, facts=facts)
        except DuplicateUrnError as err:
            raise PreviewError(f"duplicate URN {err.urn}: two resources of one type share a name") from err
        except RecordingError as err:
            raise PreviewError(str(err)) from err
        except Exception as err:
            # The program's own class, imported afresh from the checkout: known by its name.
            if type(err).__name__ == "PreflightError":
                raise PreflightStop(str(err)) from err
            raise
