"""The engine's default providers, as the recording registers them.

A custom resource registered without a `provider` is managed by its package's default provider,
which the engine creates itself: `urn:pulumi:<stack>::<project>::pulumi:providers:<pkg>::default_<version>`
(dots of the SDK's plugin version as underscores; `default` without one), no parent, its inputs the
stack's settings of that package (`aws:region` -> `region`) and the version (pulumi/pulumi
pkg/resource/deploy/source_eval.go, `defaultProviders`). The recording does the same, so the diff
sees a change of such a setting as a change of that provider (gpuplat/preview/providers.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .providers import PROVIDER_PREFIX


@dataclass(frozen=True)
class DefaultProvider:
    urn: str
    type: str
    name: str
    inputs: dict[str, str]


def default_provider(
    type_: str, version: str, config: Mapping[str, str], stack: str, project: str
) -> DefaultProvider | None:
    """The default provider a custom resource of `type_` without a provider is managed by, or None
    (provider resources themselves)."""
    if type_.startswith(PROVIDER_PREFIX):
        return None
    package = type_.partition(":")[0]
    name = "default_" + version.replace(".", "_").replace("-", "_") if version else "default"
    inputs = {key.partition(":")[2]: value for key, value in config.items() if key.partition(":")[0] == package}
    if version:
        inputs["version"] = version
    provider_type = f"{PROVIDER_PREFIX}{package}"
    urn = f"urn:pulumi:{stack}::{project}::{provider_type}::{name}"
    return DefaultProvider(urn, provider_type, name, dict(sorted(inputs.items())))
