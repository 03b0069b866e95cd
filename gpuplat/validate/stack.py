"""Check a stack's Pulumi settings file against its merged spec (the rules of rules/stack_settings.py).

The settings are stacks/Pulumi.<stack>.yaml, where `pulumi config set` writes them (Pulumi.yaml's
stackConfigDir) and where the offline recorder reads them: the same file `gpuplat preview`
hands the program. Loaded with positions, so a finding points at the line to change.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from gpuplat.diagnostics import Diagnostic, Origin
from gpuplat.spec import load_file
from gpuplat.spec.positions import Pos
from gpuplat.validate.registry import StackSettings, run_stack_rules


def settings_path(stack: str, root: Path = Path()) -> Path:
    return root / "stacks" / f"Pulumi.{stack}.yaml"


def load_settings(
    stack: str, root: Path = Path(), display: str | None = None
) -> tuple[StackSettings | None, list[Diagnostic]]:
    """The stack's settings with positions; a missing file is an empty one (Pulumi's view of it),
    an unreadable one its diagnostics and no settings."""
    path = settings_path(stack, root)
    file = display or str(Path("stacks") / path.name)
    if not path.exists():
        return StackSettings(stack, file, {}, Pos(Origin(file, 1, 1)), exists=False), []
    doc, diagnostics = load_file(path, file, allow_empty=True)
    if doc is None:
        return None, diagnostics
    loaded: Any = doc.data
    document: Mapping[str, Any] = cast("Mapping[str, Any]", loaded) if isinstance(loaded, Mapping) else {}
    return StackSettings(stack, file, document, doc.pos), diagnostics


def check_stack_settings(data: Mapping[str, Any], stack: str, root: Path = Path()) -> list[Diagnostic]:
    """Every finding of the stack-settings rules, positioned in stacks/Pulumi.<stack>.yaml."""
    settings, diagnostics = load_settings(stack, root)
    if settings is None:
        return diagnostics
    return [*diagnostics, *run_stack_rules(data, settings)]
