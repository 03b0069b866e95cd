"""What the suite applies: the Kubernetes objects a stack emits, and the CRDs they need.

The emitted objects are the recorded inputs of every `kubernetes:` resource except Helm
releases: a release's chart would come from a repository this machine cannot reach, so the
controllers that matter to a job's journey (Kueue, Karpenter) run as the binaries the suite
built, configured from the release's emitted values, and the node agents (GPU Operator, HAMi,
NFD) are played by `e2e.nodes`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from e2e.cluster import E2EError

ROOT = Path(__file__).resolve().parent.parent
# The upstream data beside the clone, as the unit tests read it (tests/upstream.py).
UPSTREAM = Path(os.environ.get("GPUPLAT_UPSTREAM") or ROOT.parent / "shared" / "upstream")
_NOT_OBJECTS = ("kubernetes:helm.sh/", "pulumi:providers:kubernetes")
# Kinds that other objects refer to, applied first so references resolve on the first pass.
_FIRST = ("CustomResourceDefinition", "Namespace", "PriorityClass", "StorageClass", "PersistentVolume")


def upstream_dir() -> Path:
    if not UPSTREAM.is_dir():
        raise E2EError(f"upstream CRDs not found at {UPSTREAM} (the shared/ folder beside the clone)")
    return UPSTREAM


def emitted_objects(resources: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    objects = [r["inputs"] for r in resources
               if r["type"].startswith("kubernetes:") and not r["type"].startswith(_NOT_OBJECTS)]
    return sorted(objects, key=lambda o: _FIRST.index(o["kind"]) if o["kind"] in _FIRST else len(_FIRST))


def load_yaml_documents(path: Path) -> list[dict[str, Any]]:
    from ruamel.yaml import YAML

    return [doc for doc in YAML(typ="safe").load_all(path.read_text()) if doc]


def upstream_crds() -> list[dict[str, Any]]:
    """Every upstream CRD (the charts' own CRDs as the releases would install them)."""
    crds = []
    for path in sorted(upstream_dir().glob("*/*.yaml")):
        crds += [d for d in load_yaml_documents(path) if d.get("kind") == "CustomResourceDefinition"]
    return crds
