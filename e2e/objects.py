"""What the suite applies: the Kubernetes objects a stack emits, and the CRDs they need.

The emitted objects are the recorded inputs of every `kubernetes:` resource except Helm
releases: a chart a Go module serves is rendered and installed by e2e/releases.py, the
controllers that matter to a job's journey (Kueue, Karpenter) run as the binaries the suite
built, configured from the release's emitted values, and the node agents (GPU Operator, HAMi,
NFD) are played by `e2e.nodes`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from e2e import upstream
from e2e.errors import E2EError

# The shared upstream data directory (e2e/upstream.py resolves files there or in the modules).
UPSTREAM = upstream.data_dir()
_NOT_OBJECTS = ("kubernetes:helm.sh/", "pulumi:providers:kubernetes")
# Kinds that other objects refer to, applied first so references resolve on the first pass. A
# recording lists resources by type, a token Secret before its ServiceAccount; the token controller
# deletes a token Secret whose ServiceAccount does not exist yet (`pulumi up` creates it after).
_FIRST = ("CustomResourceDefinition", "Namespace", "PriorityClass", "StorageClass", "PersistentVolume",
          "ServiceAccount")


def emitted_objects(resources: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return sort_for_apply([r["inputs"] for r in resources
                           if r["type"].startswith("kubernetes:") and not r["type"].startswith(_NOT_OBJECTS)])


def sort_for_apply(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(objects, key=lambda o: _FIRST.index(o["kind"]) if o["kind"] in _FIRST else len(_FIRST))


def load_yaml_documents(path: Path) -> list[dict[str, Any]]:
    from ruamel.yaml import YAML

    return [doc for doc in YAML(typ="safe").load_all(path.read_text()) if doc]


def crd_documents(paths: Iterable[Path]) -> list[dict[str, Any]]:
    return [d for path in paths for d in load_yaml_documents(path) if d.get("kind") == "CustomResourceDefinition"]


def upstream_crds() -> list[dict[str, Any]]:
    """Every upstream CRD (the charts' own CRDs as the releases would install them), read as the
    unit tests read them (e2e/upstream.py); a CRD found nowhere stops the step, saying why."""
    try:
        return crd_documents(upstream.crd_files())
    except upstream.UpstreamMissing as err:
        raise E2EError(f"upstream CRDs: {err}") from None
