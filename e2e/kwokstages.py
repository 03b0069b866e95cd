"""The kwok controller's Stages: kwokctl's own defaults, read from the kwok module the tools were
built from, with one change: a pod carrying `HOLD` keeps running.

kwokctl (binary runtime, v0.8) plays the kubelet with five Stages, `node-initialize`,
`node-heartbeat-with-lease` and the `fast` pod set: `pod-ready`, `pod-complete` (a pod owned by
a Job succeeds as soon as it runs) and `pod-delete`. A gang's pods would then run one after
another on one node, and their running together could not be judged. kwok has no switch for
that stage, and a configuration that names any Stage replaces all the defaults
(`pkg/kwokctl/runtime/cluster.go`), so the suite passes the same five, unchanged but for one
selector term on `pod-complete`: a pod annotated `HOLD` is not completed; it runs until it is
deleted (`pod-delete` is unchanged).
"""

from __future__ import annotations

import copy
from typing import Any

from e2e.errors import E2EError
from e2e.gomod import module_dir
from e2e.objects import load_yaml_documents

HOLD = "e2e.gpuplat.dev/hold-running"
MODULE = "sigs.k8s.io/kwok"
# The files kwokctl embeds as its defaults (getDefaultNodeStages, getDefaultPodStages); the
# heartbeat's delays already exceed the node status frequency kwokctl would raise them to.
DEFAULTS = ("kustomize/stage/node/fast/node-initialize.yaml",
            "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
            "kustomize/stage/pod/fast/pod-ready.yaml",
            "kustomize/stage/pod/fast/pod-complete.yaml",
            "kustomize/stage/pod/fast/pod-delete.yaml")


def held(stage: dict[str, Any]) -> dict[str, Any]:
    """`pod-complete` as upstream writes it, except for pods annotated `HOLD`."""
    found = copy.deepcopy(stage)
    terms = found["spec"]["selector"]["matchExpressions"]
    terms.append({"key": f'.metadata.annotations["{HOLD}"]', "operator": "DoesNotExist"})
    return found


def stages() -> list[dict[str, Any]]:
    """kwokctl's default Stages, `pod-complete` honouring `HOLD`."""
    root = module_dir("kwok", MODULE)
    found = [doc for path in DEFAULTS for doc in load_yaml_documents(root / path)]
    names = [s["metadata"]["name"] for s in found]
    if names.count("pod-complete") != 1 or len(found) != len(DEFAULTS):
        raise E2EError(f"kwok's default Stages in {root} are not the five kwokctl embeds: {names}")
    return [held(s) if s["metadata"]["name"] == "pod-complete" else s for s in found]
