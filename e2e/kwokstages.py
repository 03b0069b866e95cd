"""The kwok controller's Stages: kwokctl's own defaults, read from the kwok module the tools were
built from, with two changes: a pod carrying `HOLD` keeps running, and a deleted pod's containers
stop before kwok deletes it.

kwokctl (binary runtime, v0.8) plays the kubelet with five Stages, `node-initialize`,
`node-heartbeat-with-lease` and the `fast` pod set: `pod-ready`, `pod-complete` (a pod owned by
a Job succeeds as soon as it runs) and `pod-delete`. kwok has no switch for a stage, and a
configuration that names any Stage replaces all the defaults (`pkg/kwokctl/runtime/cluster.go`),
so the suite passes all five with two changes, one of them a sixth Stage:

- `pod-complete` gets one selector term: a pod annotated `HOLD` is not completed; it runs until
  it is deleted. A gang's pods would otherwise run one after another on one node, and their
  running together could not be judged.
- `pod-delete` only deletes, so a deleted pod under a finalizer (Kueue's, the Job controller's)
  stayed Terminating in phase Running for as long as the finalizer held it; Kueue counts such a
  pod as active and deleted a pod group's next pod as excess. A kubelet stops a deleted pod's
  containers and sets its phase first. `pod-stop` plays that part (each container terminated
  with exit 143, as a process ending on SIGTERM; phase Failed; Ready false), and `pod-delete`
  waits for a phase that has ended.
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
ENDED = ["Succeeded", "Failed"]
# A Go template over the pod (`Now`, `Quote` are kwok's functions). kwok applies a pod's status as a
# strategic merge patch: conditions merge by type and container statuses by name, so only what the
# kubelet changes is written, and `running: null` removes the state the container leaves.
# Exit 143 is a process ending on SIGTERM, the signal the kubelet sends first.
STOPPED_STATUS = """{{ $now := Now }}
{{ $started := or .status.startTime $now }}
conditions:
- type: Ready
  status: "False"
  reason: PodCompleted
  lastTransitionTime: {{ $now | Quote }}
- type: ContainersReady
  status: "False"
  reason: PodCompleted
  lastTransitionTime: {{ $now | Quote }}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  ready: false
  started: false
  state:
    running: null
    terminated:
      exitCode: 143
      reason: Error
      startedAt: {{ $started | Quote }}
      finishedAt: {{ $now | Quote }}
{{ end }}
phase: Failed
"""


def held(stage: dict[str, Any]) -> dict[str, Any]:
    """`pod-complete` as upstream writes it, except for pods annotated `HOLD`."""
    found = copy.deepcopy(stage)
    terms = found["spec"]["selector"]["matchExpressions"]
    terms.append({"key": f'.metadata.annotations["{HOLD}"]', "operator": "DoesNotExist"})
    return found


def after_stop(stage: dict[str, Any]) -> dict[str, Any]:
    """`pod-delete` as upstream writes it, for a pod whose phase has ended."""
    found = copy.deepcopy(stage)
    found["spec"]["selector"]["matchExpressions"].append({"key": ".status.phase", "operator": "In", "values": ENDED})
    return found


def stop() -> dict[str, Any]:
    """The kubelet's part for a deleted pod that has not ended: its containers stopped, the pod Failed."""
    return {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage", "metadata": {"name": "pod-stop"},
            "spec": {"resourceRef": {"apiGroup": "v1", "kind": "Pod"},
                     "selector": {"matchExpressions": [
                         {"key": ".metadata.deletionTimestamp", "operator": "Exists"},
                         {"key": ".status.phase", "operator": "NotIn", "values": ENDED}]},
                     "next": {"statusTemplate": STOPPED_STATUS}}}


def stages() -> list[dict[str, Any]]:
    """kwokctl's default Stages, `pod-complete` honouring `HOLD`, `pod-delete` after `pod-stop`."""
    root = module_dir("kwok", MODULE)
    found = [doc for path in DEFAULTS for doc in load_yaml_documents(root / path)]
    names = [s["metadata"]["name"] for s in found]
    if names[-2:] != ["pod-complete", "pod-delete"] or len(found) != len(DEFAULTS):
        raise E2EError(f"kwok's default Stages in {root} are not the five kwokctl embeds: {names}")
    return [*found[:-2], held(found[-2]), stop(), after_stop(found[-1])]
