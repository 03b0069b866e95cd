# pyright: strict
"""Kubernetes semantics verify needs, as small pure functions over plain dicts.

Label selectors (matchLabels / matchExpressions), taints and tolerations (the scheduler's
rule: a toleration matches a taint by key, effect and, for `Equal`, value; an empty key with
`Exists` matches every taint), node selector requirements (Karpenter's requirements and
NodeOverlays use the same operators) and resource quantities.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any, cast

Obj = dict[str, Any]


def as_map(value: Any) -> dict[str, Any]:
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return cast("list[Any]", value) if isinstance(value, list) else []


def dig(obj: Any, *path: str) -> Any:
    for key in path:
        obj = as_map(obj).get(key)
    return obj


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in as_map(dig(obj, "metadata", "labels")).items()}


def describe(obj: Mapping[str, Any]) -> str:
    """`Kind namespace/name` or `Kind name`."""
    namespace = dig(obj, "metadata", "namespace")
    name = dig(obj, "metadata", "name")
    return f"{obj.get('kind')} {namespace}/{name}" if namespace else f"{obj.get('kind')} {name}"


# ---- selectors ---------------------------------------------------------------------------


def _expression_matches(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = str(expr.get("key")), str(expr.get("operator"))
    values = [str(v) for v in as_list(expr.get("values"))]
    if operator == "In":
        return labels.get(key) in values
    if operator == "NotIn":
        return labels.get(key) not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    return False


def selector_matches(selector: Any, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector against labels; a missing (None) selector matches nothing."""
    if selector is None:
        return False
    sel = as_map(selector)
    if any(labels.get(str(k)) != str(v) for k, v in as_map(sel.get("matchLabels")).items()):
        return False
    return all(_expression_matches(as_map(e), labels) for e in as_list(sel.get("matchExpressions")))


def requirement_allows(requirement: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A node selector requirement (NodePool / NodeOverlay form, also Gt / Lt) against labels."""
    operator = str(requirement.get("operator"))
    if operator in ("Gt", "Lt"):
        value = labels.get(str(requirement.get("key")))
        bound = as_list(requirement.get("values"))
        if value is None or not bound or not value.lstrip("-").isdigit():
            return False
        return int(value) > int(bound[0]) if operator == "Gt" else int(value) < int(bound[0])
    return _expression_matches(requirement, labels)


# ---- taints and tolerations --------------------------------------------------------------


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    effect = toleration.get("effect")
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key")
    operator = toleration.get("operator") or "Equal"
    if not key:
        return operator == "Exists"
    if key != taint.get("key"):
        return False
    if operator == "Exists":
        return True
    return str(toleration.get("value") or "") == str(taint.get("value") or "")


def untolerated(taints: Iterable[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]]) -> list[str]:
    """Taints that keep a pod with `tolerations` off the node (PreferNoSchedule only prefers)."""
    return [
        taint_text(t)
        for t in taints
        if t.get("effect") != "PreferNoSchedule" and not any(tolerates(tol, t) for tol in tolerations)
    ]


def taint_text(taint: Mapping[str, Any]) -> str:
    value = taint.get("value")
    return f"{taint.get('key')}{'=' + str(value) if value else ''}:{taint.get('effect')}"


def labels_text(labels: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "(none)"


# ---- quantities --------------------------------------------------------------------------

_SUFFIX = {
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")


def quantity(value: Any) -> Decimal | None:
    """A Kubernetes resource quantity (`500m`, `8Gi`, `1`, 2) as a number; None if unreadable."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Decimal(str(value))
    match = _QUANTITY.match(str(value).strip())
    if match is None:
        return None
    return Decimal(match.group(1)) * _SUFFIX[match.group(2) or ""]
