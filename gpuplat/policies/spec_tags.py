"""The organisation's required tags, checked on the spec: `check` and `policy` agree.

aws-required-tags judges every taggable AWS resource; all of them get their tags from the AWS
provider's default tags, which are the stack's `aws:defaultTags` with the spec's
`metadata.tags` over them. So a key missing there is missing on every resource: one diagnostic
at `metadata.tags`, where the fix goes, instead of one violation per resource after a preview.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from ruamel.yaml import YAML, YAMLError

from gpuplat.diagnostics import Diagnostic, Level, json_path
from gpuplat.policies.config import PolicyConfig

CODE = "GP022"
POLICY = "aws-required-tags"


def stack_tag_keys(stack: str) -> set[str]:
    """Keys of `aws:defaultTags.tags` in stacks/Pulumi.<stack>.yaml; none when unreadable."""
    path = Path("stacks") / f"Pulumi.{stack}.yaml"
    yaml: Any = YAML(typ="safe")
    try:
        loaded: Any = yaml.load(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, YAMLError, UnicodeDecodeError):
        return set()
    config = cast("Mapping[str, Any]", loaded).get("config") if isinstance(loaded, Mapping) else None
    defaults = cast("Mapping[str, Any]", config).get("aws:defaultTags") if isinstance(config, Mapping) else None
    tags = cast("Mapping[str, Any]", defaults).get("tags") if isinstance(defaults, Mapping) else None
    return {str(k) for k in cast("Mapping[str, Any]", tags)} if isinstance(tags, Mapping) else set()


def missing_tags(
    spec_tags: Mapping[str, str], stack: str, config: PolicyConfig, origin: tuple[str, int, int]
) -> list[Diagnostic]:
    """The diagnostic for required keys neither the spec nor the stack's default tags set."""
    present = {k for k, v in spec_tags.items() if v} | stack_tag_keys(stack)
    missing = [k for k in config.required_tags if k not in present]
    if not missing:
        return []
    level = Level.ERROR if config.level_of(POLICY, "mandatory") == "mandatory" else Level.WARNING
    message = (
        f"the organisation's policy {POLICY} requires the tag(s) {', '.join(missing)} on every AWS resource; "
        f"add them here (or to aws:defaultTags of stacks/Pulumi.{stack}.yaml)"
    )
    return [Diagnostic(CODE, level, message, json_path(("metadata", "tags")), *origin)]
