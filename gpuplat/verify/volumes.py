# pyright: strict
"""Step 8: the tenant's volumes: one claim per storage tier, bound to a volume of its own.

aws: each tier's claim `<tier>` in the tenant namespace names its PersistentVolume
(`volumeName`), the volume's `claimRef` names the claim back, both use the same StorageClass,
which exists, and the volume's CSI `volumeHandle` is unique among all volumes: CSI drivers and
the kubelet key mounts by it, so two volumes sharing one (the same file system for two tenants)
collide on a node running both tenants' pods. provider kubernetes: a tier names an existing
StorageClass the tenants claim directly; a claim, where one is emitted, must use it.
"""

from __future__ import annotations

from collections import Counter

from gpuplat.model import Platform, Provider

from .k8s import Obj, as_map, describe, dig
from .types import VOLUMES, Step
from .view import View


def _tiers(model: Platform) -> dict[str, str | None]:
    storage = model.storage
    tiers = {"hot": storage.hot, "warm": storage.warm, "cold": storage.cold}
    return {name: spec.storage_class for name, spec in tiers.items() if spec is not None}


def _handle(pv: Obj) -> tuple[str, str] | None:
    csi = as_map(dig(pv, "spec", "csi"))
    return (str(csi.get("driver")), str(csi.get("volumeHandle"))) if csi else None


def _aws_tier(view: View, namespace: str, tier: str, handles: Counter[tuple[str, str]]) -> str | None:
    claims = view.find("PersistentVolumeClaim", name=tier, namespace=namespace)
    if not claims:
        return f"{tier}: no PersistentVolumeClaim {namespace}/{tier}"
    claim = claims[0]
    volume = str(dig(claim, "spec", "volumeName") or "")
    pvs = view.find("PersistentVolume", name=volume)
    if not pvs:
        return f"{tier}: {describe(claim)} names volume {volume!r}, which is not emitted"
    pv = pvs[0]
    ref = as_map(dig(pv, "spec", "claimRef"))
    if (ref.get("namespace"), ref.get("name")) != (namespace, tier):
        return f"{tier}: {describe(pv)} is reserved for claim {ref.get('namespace')}/{ref.get('name')}"
    cls = dig(claim, "spec", "storageClassName")
    if dig(pv, "spec", "storageClassName") != cls or not view.find("StorageClass", name=str(cls)):
        return f"{tier}: {describe(claim)} and {describe(pv)} disagree on, or lack, StorageClass {cls}"
    handle = _handle(pv)
    if handle is None:
        return f"{tier}: {describe(pv)} has no CSI source"
    if handles[handle] > 1:
        return f"{tier}: {describe(pv)} shares CSI volumeHandle {handle[1]} with {handles[handle] - 1} other volume(s)"
    return None


def _kubernetes_tier(view: View, namespace: str, tier: str, cls: str | None) -> str | None:
    if not cls:
        return f"{tier}: the tier names no StorageClass"
    for claim in view.find("PersistentVolumeClaim", name=tier, namespace=namespace):
        if dig(claim, "spec", "storageClassName") != cls:
            return f"{tier}: {describe(claim)} does not use the tier's StorageClass {cls}"
    return None


def volumes_step(view: View, model: Platform, namespace: str) -> Step:
    if "pv-handles" not in view.memo:  # the same for every journey
        view.memo["pv-handles"] = Counter(h for pv in view.find("PersistentVolume") if (h := _handle(pv)) is not None)
    handles: Counter[tuple[str, str]] = view.memo["pv-handles"]
    tiers = _tiers(model)
    problems: list[str] = []
    for tier, cls in tiers.items():
        if model.target.provider is Provider.AWS:
            problem = _aws_tier(view, namespace, tier, handles)
        else:
            problem = _kubernetes_tier(view, namespace, tier, cls)
        problems += [problem] if problem else []
    if problems:
        return Step(VOLUMES, False, "; ".join(problems))
    if not tiers:
        return Step(VOLUMES, True, "no storage tiers")
    if model.target.provider is Provider.AWS:
        return Step(VOLUMES, True, f"claims {', '.join(tiers)} bound to volumes of their own")
    shown = ", ".join(f"{t} -> StorageClass {c}" for t, c in tiers.items())
    return Step(VOLUMES, True, f"tenants claim the cluster's classes: {shown}")
