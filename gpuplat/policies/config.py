"""Organisation settings of the policy pack: one JSON file for CrossGuard and `gpuplat policy`.

The file has the shape `pulumi preview --policy-pack-config` reads, so the same file configures
the real preview and the offline runner: top-level keys are policy names (or "all"); a value is
either an enforcement level or an object with an optional "enforcementLevel" and the policy's
own properties:

    {
      "aws-required-tags": {"requiredTagKeys": ["team", "cost-center", "owner"]},
      "gpu-budget": {"monthlyUsd": 1500000},
      "kms-key-rotation": "advisory"
    }

Unset, `team` and `cost-center` are required and there is no GPU budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

DEFAULT_REQUIRED_TAGS = ("team", "cost-center")
LEVELS = ("advisory", "mandatory", "disabled")
# The properties each configurable policy accepts; the CrossGuard pack declares the same schemas.
SCHEMAS: dict[str, dict[str, Any]] = {
    "aws-required-tags": {
        "requiredTagKeys": {"type": "array", "items": {"type": "string", "minLength": 1}, "uniqueItems": True},
    },
    "gpu-budget": {"monthlyUsd": {"type": "number", "minimum": 0}},
}


class PolicyConfigError(ValueError):
    """The configuration file is not valid; the message says where."""


@dataclass(frozen=True)
class PolicyConfig:
    required_tags: tuple[str, ...] = DEFAULT_REQUIRED_TAGS
    gpu_budget_monthly_usd: float | None = None  # None: no cap
    levels: tuple[tuple[str, str], ...] = ()  # (policy or "all", level) overrides, in file order

    def level_of(self, policy: str, default: str) -> str:
        """The enforcement level a policy runs at: its own override, else "all", else its default."""
        found = dict(self.levels)
        return found.get(policy, found.get("all", default))


def _tags(value: Any) -> tuple[str, ...]:
    items = cast("list[Any]", value) if isinstance(value, list) else None
    if items is None or not all(isinstance(k, str) and k for k in items) or len(set(items)) != len(items):
        raise PolicyConfigError("aws-required-tags.requiredTagKeys: expected a list of distinct non-empty strings")
    return tuple(cast("list[str]", items))


def _budget(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise PolicyConfigError("gpu-budget.monthlyUsd: expected a number >= 0 (USD per month)")
    return float(value)


def _level(name: str, value: Any) -> str:
    if value not in LEVELS:
        raise PolicyConfigError(f"{name}: enforcement level must be one of {', '.join(LEVELS)}, not {value!r}")
    return cast("str", value)


def parse_config(data: Any, known: frozenset[str] | None = None) -> PolicyConfig:
    """PolicyConfig from the file's JSON; `known` policy names, when given, catch typos."""
    if not isinstance(data, Mapping):
        raise PolicyConfigError("expected a JSON object keyed by policy name")
    tags, budget, levels = DEFAULT_REQUIRED_TAGS, None, list[tuple[str, str]]()
    for name, value in cast("Mapping[str, Any]", data).items():
        if known is not None and name != "all" and name not in known:
            raise PolicyConfigError(f"{name}: no such policy")
        if not isinstance(value, Mapping):
            levels.append((name, _level(name, value)))
            continue
        props = dict(cast("Mapping[str, Any]", value))
        if "enforcementLevel" in props:
            levels.append((name, _level(name, props.pop("enforcementLevel"))))
        unknown = sorted(set(props) - set(SCHEMAS.get(name, {})))
        if unknown:
            raise PolicyConfigError(f"{name}: unknown propert{'ies' if len(unknown) > 1 else 'y'} {', '.join(unknown)}")
        if "requiredTagKeys" in props:
            tags = _tags(props["requiredTagKeys"])
        if "monthlyUsd" in props:
            budget = _budget(props["monthlyUsd"])
    return PolicyConfig(tags, budget, tuple(levels))


def load_config(path: Path, known: frozenset[str] | None = None) -> PolicyConfig:
    # Read as every JSON input is (gpuplat/input_files.py): size, depth and number limits, positioned.
    from gpuplat.diagnostics import render_text
    from gpuplat.input_files import MAX_POLICY_CONFIG_BYTES, InputInvalid, InputUnreadable, read_json

    try:
        data = read_json(path, "policy configuration", MAX_POLICY_CONFIG_BYTES)[0]
    except InputUnreadable as err:
        raise PolicyConfigError(str(err)) from err
    except InputInvalid as err:
        raise PolicyConfigError(render_text([err.diagnostic]).rstrip("\n")) from err
    try:
        return parse_config(data, known)
    except PolicyConfigError as err:
        raise PolicyConfigError(f"{path}: {err}") from err
