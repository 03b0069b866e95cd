"""The fence scenario's probe (e2e/fence.py): it may land only on the fenced node, and only the fence stops it."""

from __future__ import annotations

from e2e.fence import PROBE, probe_pod, refused_for_fence
from gpuplat.catalog.labels import GPU_FENCE_TAINT

NODE = {"metadata": {"name": "gpu-1"}, "spec": {"taints": [
    {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
    {"key": "gpuplat.dev/spot", "value": "true", "effect": "NoSchedule"},
    {"key": GPU_FENCE_TAINT, "value": "AcceleratedHardwareReady", "effect": "NoSchedule"},
]}}


def test_the_probe_tolerates_every_taint_but_the_fence_and_only_that_node() -> None:
    pod = probe_pod(NODE, "atlas-system")
    assert pod["metadata"] == {"name": PROBE, "namespace": "atlas-system"}
    assert {t["key"] for t in pod["spec"]["tolerations"]} == {"nvidia.com/gpu", "gpuplat.dev/spot"}
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"] == [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                            "values": ["gpu-1"]}]}]


def test_only_the_schedulers_words_about_the_fence_count() -> None:
    def pod(status: str, message: str) -> dict[str, object]:
        return {"status": {"conditions": [{"type": "PodScheduled", "status": status, "message": message}]}}

    named = f"0/3 nodes are available: 1 node(s) had untolerated taint {{{GPU_FENCE_TAINT}: x}}"
    unnamed = "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 node(s) didn't satisfy plugin(s)"
    assert refused_for_fence(pod("False", named)) == named
    assert refused_for_fence(pod("False", unnamed)) == unnamed
    assert refused_for_fence(pod("False", "0/4 nodes are available: 4 Insufficient cpu")) is None
    assert refused_for_fence(pod("False", "Scheduling is blocked due to non-empty scheduling gates")) is None
    assert refused_for_fence(pod("True", "")) is None
    assert refused_for_fence(None) is None
