"""The topology-aware node-replacement scenario (e2e/tas_replace.py): which quota it takes, the job
it submits (the tenant guide's, held running and retried), and how it reads where the Job's pods
run. Canned objects and the recorded kubernetes example, no cluster."""

from __future__ import annotations

from typing import Any

import pytest

from e2e import quota, tas_replace
from e2e.cluster import E2EError
from e2e.jobs import TOPOLOGY_ANNOTATION
from e2e.kwokstages import HOLD
from e2e.scenarios import topology_level
from e2e.stack import Stack, Target
from tests import support_verify
from tests.support_canned import Canned


def _stack(which: str) -> Stack:
    _, _, resources = support_verify.recorded(which)
    return Stack(Target(which), resources, {}, [])


def test_it_takes_whole_gpu_quota_on_a_topology_aware_flavor_only() -> None:
    stack = _stack("kubernetes")
    found = tas_replace.slots_of(stack)
    topology_aware = {f["metadata"]["name"] for f in stack.of_type(quota.FLAVOR) if f["spec"].get("topologyName")}
    assert found and {s.flavor for s in found} <= topology_aware
    assert {s.resource for s in found} == {"nvidia.com/gpu"}
    plain = quota.slots(stack.of_type(quota.CLUSTER_QUEUE), stack.of_type(quota.FLAVOR))
    assert not {s.flavor for s in plain} & topology_aware  # the default stays the plain flavors
    assert not tas_replace.slots_of(_stack("dev"))  # aws stacks' flavors name no Topology


def test_the_job_asks_for_a_placement_is_held_running_and_survives_a_lost_pod() -> None:
    stack = _stack("kubernetes")
    slot = tas_replace.slots_of(stack)[0]
    level = topology_level(stack, slot.pool)
    assert level == "kubernetes.io/hostname"
    job = tas_replace.held_job(slot, level)
    template = job["spec"]["template"]
    assert template["metadata"]["annotations"] == {TOPOLOGY_ANNOTATION: level, HOLD: "true"}
    assert template["spec"]["nodeSelector"] == slot.node_labels
    assert job["spec"]["backoffLimit"] >= 2  # the evicted pod, and one the ungater still sent to the fence


def _pod(name: str, node: str, phase: str = "Running", selector: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeName": node} if node else {}
    if selector:
        spec["nodeSelector"] = {"kubernetes.io/hostname": selector}
    return {"metadata": {"name": name, "namespace": "t", "labels": {tas_replace.JOB_LABEL: tas_replace.JOB}},
            "spec": spec, "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True"}]}}


def test_a_pod_running_off_the_fenced_node_is_found_one_on_it_fails_the_row() -> None:
    moved = Canned({("pods", "t"): [_pod("a", "", "Failed", "n0"), _pod("b", "n1", selector="n1")]})
    assert tas_replace.running_pod(moved, "t", avoid="n0") == ("b", "n1")  # type: ignore[arg-type]
    assert tas_replace.selectors(moved.items("pods", "t"), "kubernetes.io/hostname") == \
        "a -> n0 (Failed); b -> n1 (Running)"
    stuck = Canned({("pods", "t"): [_pod("a", "n0", selector="n0")]})
    with pytest.raises(E2EError, match="cordoned node n0"):
        tas_replace.running_pod(stuck, "t", avoid="n0")  # type: ignore[arg-type]
