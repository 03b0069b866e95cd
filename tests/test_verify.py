"""`gpuplat verify`: every tenant's job is followed to a GPU, and each broken link is named.

Journeys run on the recorded stacks (tests/support_verify.py). Each step is broken on its own
by mutating the recorded objects, and the journey must then fail at that step with a detail
naming what is missing. Where today's output already breaks a step (the defects other branches
fix), the test first repairs that in the recording, and each defect of the issue is put back in
by a mutation, so these tests check verify, before and after the fixes. Steps 1-5 here; the
device plugins, admission and volumes in test_verify_devices.py, output and CLI in
test_verify_cli.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpuplat.model import isolation_permits
from gpuplat.verify import types as steps_
from tests.support_verify import (
    SPECS,
    assert_fails,
    assert_ok,
    baseline_namespaces,
    drop_overlays,
    find,
    hami_chart_default_selector,
    journey,
    lift_default_limits,
    node_overlay,
    node_overlay_gate,
    objects,
    recorded,
    release,
    replicas_as_whole_gpus,
    run,
    shared_hot_handle,
    small_default_limits,
    steps,
)

# ---- enumeration -------------------------------------------------------------------------------


@pytest.mark.parametrize("which", SPECS)
def test_journeys_cover_every_tenant_and_allowed_pool(which: str) -> None:
    model, plan, _ = recorded(which)
    journeys = run(which)
    expected = {
        (t.name, p) for t in model.tenants for p in t.pools if isolation_permits(t.isolation, model.pools_by_name[p])
    }
    assert {(j.tenant, j.pool) for j in journeys} == expected
    for j in journeys:
        units = plan.pool(j.pool).units
        assert j.resource in (units.resources or {units.resource: 1})
        assert [s.step for s in j.steps][-3:] == [steps_.ADMISSION, steps_.VOLUMES, steps_.REPAIR]


def test_a_custom_mig_layout_yields_a_journey_per_profile() -> None:
    journeys = [j for j in run("kubernetes") if (j.tenant, j.pool) == ("applied-research", "infer")]
    assert {j.resource for j in journeys} == {
        "nvidia.com/mig-3g.40gb",
        "nvidia.com/mig-2g.20gb",
        "nvidia.com/mig-1g.10gb",
    }


def test_every_flavor_of_the_pool_is_followed() -> None:
    j = journey(run("dev"), "research", "train")
    placements = [s.detail for s in steps(j, steps_.PLACEMENT)]
    assert len(placements) == 2
    assert "atlas-train-spot" in placements[0] and "default job (spot)" in placements[0]
    assert "atlas-train-on-demand" in placements[1]


@pytest.mark.parametrize("which", SPECS)
def test_a_default_job_reaches_every_spot_flavor(which: str) -> None:
    # Kueue checks the pod's tolerations plus the flavor's against the flavor's nodeTaints; a
    # default job tolerates nothing, so the spot flavors must carry the spot toleration.
    spot = [s for j in run(which) for s in steps(j, steps_.PLACEMENT) if "spot" in s.detail.split(":")[0]]
    if which == "kubernetes":
        assert spot == []
        return
    assert spot and all(s.ok for s in spot), [s.detail for s in spot if not s.ok]


def test_a_spot_flavor_without_the_spot_toleration_admits_no_default_job() -> None:
    def untolerated(resources: list[dict[str, Any]]) -> None:
        flavor = find(resources, "ResourceFlavor", "atlas-train-spot")
        flavor["spec"]["tolerations"] = [t for t in flavor["spec"]["tolerations"] if t["key"] != "gpuplat.dev/spot"]

    j = journey(run("dev", untolerated), "research", "train")
    assert_fails(j, steps_.PLACEMENT, "gpuplat.dev/spot=true:NoSchedule are not covered")


def test_limit_range_defaults_below_the_request_are_found() -> None:
    j = journey(run("dev", small_default_limits), "research", "infer")
    assert_fails(j, steps_.ADMISSION, "defaults the cpu limit to 2, below the request 16")
    assert_fails(j, steps_.ADMISSION, "defaults the memory limit to 8Gi, below the request 128Gi")


def test_baseline_refusing_ipc_lock_on_fabric_pools_is_found() -> None:
    journeys = run("dev", lift_default_limits, baseline_namespaces)
    assert_fails(journey(journeys, "research", "train"), steps_.ADMISSION, "baseline refuses the IPC_LOCK")
    assert_ok(journey(journeys, "research", "infer"), steps_.ADMISSION)  # not a fabric pool


def test_a_shared_hot_tier_volume_handle_is_found() -> None:
    j = journey(run("dev", shared_hot_handle), "research", "train")
    assert_fails(j, steps_.VOLUMES, "shares CSI volumeHandle fs-0123456789abcdef0 with")


def test_missing_node_overlays_are_found() -> None:
    j = journey(run("dev", drop_overlays), "research", "infer")
    assert_fails(j, steps_.CAPACITY, "no NodeOverlay matching it adds nvidia.com/mig-1g.10gb")


def test_time_sliced_replicas_advertised_as_whole_gpus_are_found() -> None:
    j = journey(run("dev", replicas_as_whole_gpus), "product", "dev")
    assert_fails(j, steps_.DEVICE_PLUGIN, "nvidia.com/gpu")


def test_the_hami_chart_default_selector_is_found() -> None:
    j = journey(run("kubernetes", hami_chart_default_selector), "applied-research", "lab")
    assert_fails(j, steps_.DEVICE_PLUGIN, "the pool's nodes do not carry gpu=on")


# ---- step 1: LocalQueue -> ClusterQueue ------------------------------------------------------------


def test_queue_missing_local_queue() -> None:
    def drop(resources: list[dict[str, Any]]) -> None:
        resources[:] = [r for r in resources if r["inputs"].get("kind") != "LocalQueue"]

    assert_fails(journey(run("dev", drop), "research", "train"), steps_.QUEUE, "no LocalQueue default in namespace")


def test_queue_cluster_queue_not_selecting_the_namespace() -> None:
    def other(resources: list[dict[str, Any]]) -> None:
        find(resources, "ClusterQueue", "atlas-research")["spec"]["namespaceSelector"] = {
            "matchLabels": {"kubernetes.io/metadata.name": "elsewhere"}
        }

    j = journey(run("dev", other), "research", "train")
    assert_fails(j, steps_.QUEUE, "does not select namespace research")
    assert steps_.QUOTA not in [s.step for s in j.steps]


# ---- step 2: quota ---------------------------------------------------------------------------------


def test_quota_without_room_for_one_unit() -> None:
    def empty(resources: list[dict[str, Any]]) -> None:
        for cq in objects(resources, "ClusterQueue"):
            for group in cq["spec"]["resourceGroups"]:
                for flavor in group["flavors"]:
                    for quota in flavor["resources"]:
                        quota["nominalQuota"], quota["borrowingLimit"] = 0, 0

    assert_fails(journey(run("dev", empty), "research", "train"), steps_.QUOTA, "no flavor of pool train")


def test_quota_flavor_listed_but_not_emitted() -> None:
    def drop(resources: list[dict[str, Any]]) -> None:
        resources[:] = [r for r in resources if r["inputs"].get("kind") != "ResourceFlavor"]

    assert_fails(journey(run("dev", drop), "research", "train"), steps_.QUOTA, "no ResourceFlavor atlas-train-spot")


# ---- step 3: placement -----------------------------------------------------------------------------


def test_placement_flavor_taint_no_job_tolerates() -> None:
    def taint(resources: list[dict[str, Any]]) -> None:
        flavor = find(resources, "ResourceFlavor", "atlas-train-on-demand")
        flavor["spec"]["nodeTaints"] = [{"key": "maintenance", "value": "true", "effect": "NoSchedule"}]

    assert_fails(journey(run("dev", taint), "research", "train"), steps_.PLACEMENT, "maintenance=true:NoSchedule")


def test_placement_flavor_without_node_labels() -> None:
    def bare(resources: list[dict[str, Any]]) -> None:
        find(resources, "ResourceFlavor", "atlas-train-on-demand")["spec"]["nodeLabels"] = {}

    # Kueue may admit any job asking for the resource into an unlabelled flavor: every journey
    # asking for that resource breaks there (in dev only train's whole GPUs are nvidia.com/gpu).
    j = journey(run("dev", bare), "product", "train")
    assert_fails(j, steps_.PLACEMENT, "ResourceFlavor atlas-train-on-demand has no nodeLabels")


# ---- step 4: nodes -----------------------------------------------------------------------------------


def test_nodes_no_node_pool_carries_the_labels() -> None:
    def relabel(resources: list[dict[str, Any]]) -> None:
        find(resources, "NodePool", "train-on-demand")["spec"]["template"]["metadata"]["labels"]["gpuplat.dev/pool"] = (
            "x"
        )

    j = journey(run("dev", relabel), "research", "train")
    assert_fails(j, steps_.NODES, "no Karpenter NodePool can launch nodes labelled gpuplat.dev/pool=train")


def test_nodes_taint_the_job_does_not_tolerate() -> None:
    def taint(resources: list[dict[str, Any]]) -> None:
        spec = find(resources, "NodePool", "train-on-demand")["spec"]["template"]["spec"]
        spec["taints"].append({"key": "dedicated", "value": "ops", "effect": "NoExecute"})

    assert_fails(journey(run("dev", taint), "research", "train"), steps_.NODES, "dedicated=ops:NoExecute")


def test_nodes_zero_gpu_limit() -> None:
    def zero(resources: list[dict[str, Any]]) -> None:
        find(resources, "NodePool", "train-on-demand")["spec"]["limits"]["nvidia.com/gpu"] = "0"

    assert_fails(journey(run("dev", zero), "research", "train"), steps_.NODES, "limits nvidia.com/gpu to 0")


def test_nodes_zero_unit_limit_of_a_mig_pool() -> None:
    """Once a MIG node is initialized Karpenter counts its MIG slices, not GPUs: that limit at
    zero stops the pool as surely as the GPU limit would."""

    def zero(resources: list[dict[str, Any]]) -> None:
        for node_pool in objects(resources, "NodePool"):
            limits = node_pool["spec"]["limits"]
            if "nvidia.com/mig-1g.10gb" in limits:
                limits["nvidia.com/mig-1g.10gb"] = "0"

    assert journey(run("dev"), "research", "infer").ok
    assert_fails(journey(run("dev", zero), "research", "infer"), steps_.NODES, "limits nvidia.com/mig-1g.10gb to 0")


def test_nodes_on_kubernetes_need_the_labeler_for_labels_outside_the_selector() -> None:
    def want_workload(resources: list[dict[str, Any]]) -> None:
        find(resources, "ResourceFlavor", "orion-infer")["spec"]["nodeLabels"]["workload"] = "inference"

    def drop_labeler(resources: list[dict[str, Any]]) -> None:
        resources[:] = [r for r in resources if r["inputs"].get("kind") != "DaemonSet"]

    assert_ok(journey(run("kubernetes", want_workload), "applied-research", "infer"), steps_.NODES)
    j = journey(run("kubernetes", want_workload, drop_labeler), "applied-research", "infer")
    assert_fails(j, steps_.NODES, "do not carry workload=inference")


# ---- step 5: capacity Karpenter knows -------------------------------------------------------------


def test_capacity_needs_a_node_overlay_and_its_feature_gate() -> None:
    mig = "nvidia.com/mig-1g.10gb"
    overlay = node_overlay("infer-on-demand", mig)

    def gate_off(resources: list[dict[str, Any]]) -> None:
        release(resources, "karpenter")["values"]["settings"]["featureGates"]["nodeOverlay"] = False

    j = journey(run("dev", drop_overlays, overlay, gate_off), "research", "infer")
    assert_fails(j, steps_.CAPACITY, "feature gate is off (FEATURE_GATES")
    assert_ok(journey(run("dev", drop_overlays, overlay, node_overlay_gate), "research", "infer"), steps_.CAPACITY)
    other_pool = node_overlay("train-on-demand", mig)
    j = journey(run("dev", drop_overlays, other_pool, node_overlay_gate), "research", "infer")
    assert_fails(j, steps_.CAPACITY, "no NodeOverlay")


def test_capacity_whole_gpus_come_from_the_instance_type() -> None:
    def cpu_only(resources: list[dict[str, Any]]) -> None:
        pool = find(resources, "NodePool", "train-on-demand")
        pool["spec"]["template"]["spec"]["requirements"][0]["values"] = ["m7i.4xlarge"]

    assert_ok(journey(run("dev"), "research", "train"), steps_.CAPACITY)
    assert_fails(journey(run("dev", cpu_only), "research", "train"), steps_.CAPACITY, "offer no nvidia.com/gpu")


def test_nodes_node_class_missing() -> None:
    def drop(resources: list[dict[str, Any]]) -> None:
        resources[:] = [r for r in resources if r["inputs"].get("kind") != "EC2NodeClass"]

    assert_fails(journey(run("dev", drop), "research", "train"), steps_.NODES, "names EC2NodeClass train, which is not")


def test_capacity_an_overlay_declaring_what_no_device_plugin_registers() -> None:
    # HAMi's memory and cores: Karpenter would launch a node for a pod asking for them and wait
    # forever for them in the node's allocatable (RequestedResourcesRegistered).
    def hami_extras(resources: list[dict[str, Any]]) -> None:
        find(resources, "NodeOverlay", "dev-units")["spec"]["capacity"]["nvidia.com/gpumem"] = "183091"

    j = journey(run("dev"), "product", "dev")
    assert_ok(j, steps_.CAPACITY)
    assert_fails(journey(run("dev", hami_extras), "product", "dev"), steps_.CAPACITY, "declares nvidia.com/gpumem")


# ---- step 9: repair of a failed node --------------------------------------------------------------


def test_repair_needs_karpenters_gate_and_the_detector() -> None:
    assert_ok(journey(run("dev"), "research", "train"), steps_.REPAIR)

    def gate_off(resources: list[dict[str, Any]]) -> None:
        release(resources, "karpenter")["values"]["settings"]["featureGates"]["nodeRepair"] = False

    def no_agent(resources: list[dict[str, Any]]) -> None:
        resources[:] = [r for r in resources if r.get("inputs", {}).get("addonName") != "eks-node-monitoring-agent"]

    assert_fails(journey(run("dev", gate_off), "research", "train"), steps_.REPAIR, "NodeRepair gate is off")
    assert_fails(journey(run("dev", no_agent), "research", "train"), steps_.REPAIR, "nothing sets AcceleratedHardware")


def test_repair_says_the_fence_and_fails_without_it() -> None:
    (step,) = steps(journey(run("dev"), "research", "train"), steps_.REPAIR)
    assert "gpu-fencer taints it gpuplat.dev/gpu-unhealthy:NoSchedule at once" in step.detail

    def no_fencer(resources: list[dict[str, Any]]) -> None:
        resources[:] = [r for r in resources if not (r.get("inputs", {}).get("kind") == "Deployment"
                                                     and r["inputs"]["metadata"]["name"] == "gpu-fencer")]

    assert_fails(journey(run("dev", no_fencer), "research", "train"), steps_.REPAIR, "no gpu-fencer Deployment fences")


def test_repair_replace_with_reboot_on_is_not_what_the_spec_says() -> None:
    def reboot_on(resources: list[dict[str, Any]]) -> None:
        settings = release(resources, "karpenter")["values"]["settings"]
        settings.setdefault("awsFeatureGates", {})["rebootForRepair"] = True

    (step,) = steps(journey(run("dev"), "research", "train"), steps_.REPAIR)
    assert "replaced" in step.detail
    assert_fails(journey(run("dev", reboot_on), "research", "train"), steps_.REPAIR, "RebootForRepair gate is on")


def test_on_kubernetes_no_node_is_replaced() -> None:
    (step,) = steps(journey(run("kubernetes"), "applied-research", "infer"), steps_.REPAIR)
    assert step.ok and "no node is replaced" in step.detail
    assert "gpu-fencer taints it gpuplat.dev/gpu-unhealthy:NoSchedule while GpuFatalXid" in step.detail

    def no_alerts(resources: list[dict[str, Any]]) -> None:
        for r in resources:
            if r.get("inputs", {}).get("kind") == "Deployment" and r["inputs"]["metadata"]["name"] == "gpu-fencer":
                container = r["inputs"]["spec"]["template"]["spec"]["containers"][0]
                container["env"] = [e for e in container["env"] if e["name"] != "FENCE_ALERTS"]

    assert_fails(journey(run("kubernetes", no_alerts), "applied-research", "infer"), steps_.REPAIR,
                 "no gpu-fencer Deployment fences a node on GpuFatalXid")
