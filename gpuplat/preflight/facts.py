# pyright: strict
"""Account facts: what one AWS account in one region offers, as preflight read it.

The file `gpuplat preflight --save` writes and `gpuplat preview --account-facts` reads:

    {"region": "us-east-1", "readAt": "2026-12-03T12:00:00Z",
     "zones": {"us-east-1a": "use1-az4", ...},          # zone name -> AZ ID in this account
     "offerings": {"p5.48xlarge": ["us-east-1a"], ...}, # instance type -> zones offering it
     "eksVersions": ["1.33", "1.34", ...],             # minors CreateCluster accepts
     "capacityBlocks": [{"id": "cr-...", "instanceType": "p5e.48xlarge", "zone": "...",
                         "instances": 4, "state": "active", "tags": {...}}],
     "quotas": {"ec2/L-417A185B": 2304, ...}}          # see gpuplat/preflight/quotas.py

A key left out was not read, and the checks that need it are skipped (a file preflight saved has
every key). Bad files are reported as sentences, never as tracebacks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast


class FactsError(ValueError):
    """A facts file that cannot be read or is not shaped like one."""


@dataclass(frozen=True)
class CapacityBlock:
    id: str
    instance_type: str
    zone: str
    instances: int
    state: str = "active"  # scheduled | active | expired ...: only scheduled and active hold nodes
    tags: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class AccountFacts:
    region: str
    read_at: str
    zones: Mapping[str, str] | None = None
    offerings: Mapping[str, tuple[str, ...]] | None = None
    eks_versions: tuple[str, ...] | None = None
    capacity_blocks: tuple[CapacityBlock, ...] | None = None
    quotas: Mapping[str, float] | None = None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"region": self.region, "readAt": self.read_at}
        if self.zones is not None:
            doc["zones"] = dict(sorted(self.zones.items()))
        if self.offerings is not None:
            doc["offerings"] = {t: sorted(z) for t, z in sorted(self.offerings.items())}
        if self.eks_versions is not None:
            doc["eksVersions"] = list(self.eks_versions)
        if self.capacity_blocks is not None:
            doc["capacityBlocks"] = [_block_json(b) for b in self.capacity_blocks]
        if self.quotas is not None:
            doc["quotas"] = dict(sorted(self.quotas.items()))
        return doc


def _block_json(block: CapacityBlock) -> dict[str, Any]:
    return {
        "id": block.id,
        "instanceType": block.instance_type,
        "zone": block.zone,
        "instances": block.instances,
        "state": block.state,
        "tags": dict(block.tags),
    }


def save_facts(facts: AccountFacts, path: Path) -> None:
    path.write_text(json.dumps(facts.to_json(), indent=2) + "\n", encoding="utf-8")


def load_facts(path: Path) -> AccountFacts:
    try:
        raw: object = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise FactsError(f"{path}: cannot read the account facts ({err.strerror or err})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise FactsError(f"{path}: not a JSON account-facts file ({err})") from None
    try:
        return facts_from_json(raw)
    except FactsError as err:
        raise FactsError(f"{path}: {err}") from None


def _str_map(value: object, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise FactsError(f"{key} must be an object")
    return {str(k): v for k, v in cast(dict[object, object], value).items()}


def _strings(value: object, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in cast(list[object], value)):
        raise FactsError(f"{key} must be a list of strings")
    return tuple(cast(list[str], value))


def _number(value: object, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FactsError(f"{key} must be a number")
    return float(value)


def _block(value: object, at: str) -> CapacityBlock:
    doc = _str_map(value, at)
    for key in ("id", "instanceType", "zone"):
        if not isinstance(doc.get(key), str):
            raise FactsError(f"{at}.{key} must be a string")
    tags = _str_map(doc.get("tags", {}), f"{at}.tags")
    return CapacityBlock(
        id=doc["id"],
        instance_type=doc["instanceType"],
        zone=doc["zone"],
        instances=int(_number(doc.get("instances"), f"{at}.instances")),
        state=str(doc.get("state", "active")),
        tags=MappingProxyType({k: str(v) for k, v in tags.items()}),
    )


def account_facts(args: object) -> AccountFacts | None:
    """The facts a command's `--account-facts FILE` names, or None (the mock account)."""
    path = getattr(args, "account_facts", None)
    return load_facts(Path(path)) if path else None


def facts_from_json(raw: object) -> AccountFacts:
    doc = _str_map(raw, "the document")
    if not isinstance(doc.get("region"), str):
        raise FactsError("region must be a string (the region the facts were read in)")
    zones = offerings = eks = blocks = quotas = None
    if "zones" in doc:
        zones = {k: str(v) for k, v in _str_map(doc["zones"], "zones").items()}
    if "offerings" in doc:
        offerings = {k: _strings(v, f"offerings.{k}") for k, v in _str_map(doc["offerings"], "offerings").items()}
    if "eksVersions" in doc:
        eks = _strings(doc["eksVersions"], "eksVersions")
    if "capacityBlocks" in doc:
        items = doc["capacityBlocks"]
        if not isinstance(items, list):
            raise FactsError("capacityBlocks must be a list")
        blocks = tuple(_block(b, f"capacityBlocks[{i}]") for i, b in enumerate(cast(list[object], items)))
    if "quotas" in doc:
        quotas = {k: _number(v, f"quotas.{k}") for k, v in _str_map(doc["quotas"], "quotas").items()}
    return AccountFacts(
        region=doc["region"],
        read_at=str(doc.get("readAt", "")),
        zones=None if zones is None else MappingProxyType(zones),
        offerings=None if offerings is None else MappingProxyType(offerings),
        eks_versions=eks,
        capacity_blocks=blocks,
        quotas=None if quotas is None else MappingProxyType(quotas),
    )
