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
every key). Bad files are reported at the line of the bad value (GP034; GP030 / GP031 for a
file that is no JSON within gpuplat/input_files.py's limits), never as tracebacks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

from gpuplat.diagnostics import Diagnostic, Level, json_path, render_text
from gpuplat.input_files import MAX_FACTS_BYTES, InputInvalid, InputUnreadable, locate_at, read_json


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


class _Bad(Exception):
    def __init__(self, where: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.where, self.message = where, message


def load_facts(path: Path) -> AccountFacts:
    """The facts in `path`, read as every JSON input is (gpuplat/input_files.py); FactsError, positioned
    at the value (`file:line:col: error GP034 $.quotas.x: ...`), for a file that is not such facts."""
    try:
        raw, text = read_json(path, "account-facts file", MAX_FACTS_BYTES)
    except InputUnreadable as err:
        raise FactsError(f"--account-facts: {err}") from None
    except InputInvalid as err:
        raise FactsError(render_text([err.diagnostic]).rstrip("\n")) from None
    try:
        return _facts(raw)
    except _Bad as err:
        line, col = locate_at(text, err.where)
        diagnostic = Diagnostic("GP034", Level.ERROR, err.message, json_path(err.where), str(path), line, col)
        raise FactsError(render_text([diagnostic]).rstrip("\n")) from None


def _str_map(value: object, where: tuple[str | int, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        message = "must be an object" if where else "the document must be an object (preflight --save writes one)"
        raise _Bad(where, message)
    return {str(k): v for k, v in cast(dict[object, object], value).items()}


def _strings(value: object, where: tuple[str | int, ...]) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in cast(list[object], value)):
        raise _Bad(where, "must be a list of strings")
    return tuple(cast(list[str], value))


def _text(value: object, where: tuple[str | int, ...]) -> str:
    if not isinstance(value, str):
        raise _Bad(where, "must be a string")
    return value


# What an account can hold: a quota is a count (vCPUs, instances, TiB) far below this.
MAX_QUOTA = 1e12
MAX_BLOCK_INSTANCES = 10_000


def _number(value: object, where: tuple[str | int, ...], high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Bad(where, "must be a number")
    number = float(value)
    if not 0 <= number <= high:
        raise _Bad(where, f"{number:g} is not within 0 and {high:g}")
    return number


def _block(value: object, at: tuple[str | int, ...]) -> CapacityBlock:
    doc = _str_map(value, at)
    for key in ("id", "instanceType", "zone"):
        _text(doc.get(key), (*at, key))
    tags = _str_map(doc.get("tags", {}), (*at, "tags"))
    instances = _number(doc.get("instances"), (*at, "instances"), MAX_BLOCK_INSTANCES)
    if instances != int(instances):
        raise _Bad((*at, "instances"), f"{instances:g} is not a whole number of instances")
    return CapacityBlock(
        id=doc["id"],
        instance_type=doc["instanceType"],
        zone=doc["zone"],
        instances=int(instances),
        state=_text(doc.get("state", "active"), (*at, "state")),
        tags=MappingProxyType({k: _text(v, (*at, "tags", k)) for k, v in tags.items()}),
    )


def account_facts(args: object) -> AccountFacts | None:
    """The facts a command's `--account-facts FILE` names, or None (the mock account)."""
    path = getattr(args, "account_facts", None)
    return load_facts(Path(path)) if path else None


def facts_from_json(raw: object) -> AccountFacts:
    """Facts from a parsed document; FactsError naming the JSON path of a bad value."""
    try:
        return _facts(raw)
    except _Bad as err:
        raise FactsError(f"{json_path(err.where)}: {err.message}") from None


def _facts(raw: object) -> AccountFacts:
    doc = _str_map(raw, ())
    if not isinstance(doc.get("region"), str):
        where = ("region",) if "region" in doc else ()
        raise _Bad(where, "region must be a string (the region the facts were read in)")
    zones = offerings = eks = blocks = quotas = None
    if "zones" in doc:
        zones = {k: _text(v, ("zones", k)) for k, v in _str_map(doc["zones"], ("zones",)).items()}
    if "offerings" in doc:
        offered = _str_map(doc["offerings"], ("offerings",))
        offerings = {k: _strings(v, ("offerings", k)) for k, v in offered.items()}
    if "eksVersions" in doc:
        eks = _strings(doc["eksVersions"], ("eksVersions",))
    if "capacityBlocks" in doc:
        items = doc["capacityBlocks"]
        if not isinstance(items, list):
            raise _Bad(("capacityBlocks",), "must be a list")
        blocks = tuple(_block(b, ("capacityBlocks", i)) for i, b in enumerate(cast(list[object], items)))
    if "quotas" in doc:
        quotas = {k: _number(v, ("quotas", k), MAX_QUOTA) for k, v in _str_map(doc["quotas"], ("quotas",)).items()}
    return AccountFacts(
        region=doc["region"],
        read_at=_text(doc.get("readAt", ""), ("readAt",)),
        zones=None if zones is None else MappingProxyType(zones),
        offerings=None if offerings is None else MappingProxyType(offerings),
        eks_versions=eks,
        capacity_blocks=blocks,
        quotas=None if quotas is None else MappingProxyType(quotas),
    )
