"""`gpuplat verify`: every tenant's job is followed to a GPU, and each broken link is named.

The journeys run on the recorded stacks (tests/support_verify.py). Each step is broken on its
own by mutating the recorded objects, and the journey must then fail at that step with a
detail naming what is missing. Where today's output already breaks a step (the defects other
branches fix), the test first repairs that in the recording, so it checks verify, not the fix.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from gpuplat.cli import main
from gpuplat.model import isolation_permits
from gpuplat.verify import Journey, Step, render_json, render_text, verify
from gpuplat.verify import types as steps_
from tests.support_verify import SPECS, objects, recorded, release

Mutation = Callable[[list[dict[str, Any]]], None]


def run(which: str, *mutations: Mutation) -> list[Journey]:
    model, plan, resources = recorded(which)
    for mutate in mutations:
        mutate(resources)
    return verify(model, plan, resources)


def journey(journeys: list[Journey], tenant: str, pool: str, resource: str | None = None) -> Journey:
    return next(
        j for j in journeys if (j.tenant, j.pool) == (tenant, pool) and (resource is None or j.resource == resource)
    )


def steps(j: Journey, name: str) -> list[Step]:
    found = [s for s in j.steps if s.step == name]
    assert found, f"no {name} step in {render_text([j])}"
    return found


def assert_ok(j: Journey, name: str) -> None:
    assert all(s.ok for s in steps(j, name)), render_text([j])


def assert_fails(j: Journey, name: str, needle: str) -> None:
    assert not j.ok
    assert any(not s.ok and needle in s.detail for s in steps(j, name)), render_text([j])


def find(resources: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(o for o in objects(resources, kind) if o["metadata"]["name"] == name)


# ---- repairs of today's defects, so a later mutation is the only break ------------------------


def lift_default_limits(resources: list[dict[str, Any]]) -> None:
    for lr in objects(resources, "LimitRange"):
        for item in lr["spec"]["limits"]:
            item.pop("default", None)


def own_volume_handles(resources: list[dict[str, Any]]) -> None:
    for pv in objects(resources, "PersistentVolume"):
        pv["spec"]["csi"]["volumeHandle"] = pv["metadata"]["name"]


def hami_selector_without_chart_default(resources: list[dict[str, Any]]) -> None:
    release(resources, "hami")["values"]["devicePlugin"]["nvidiaNodeSelector"]["gpu"] = None


def node_overlay(node_pool: str, resource: str, count: int = 56) -> Mutation:
    def add(resources: list[dict[str, Any]]) -> None:
        overlay = {
            "apiVersion": "karpenter.sh/v1alpha1",
            "kind": "NodeOverlay",
            "metadata": {"name": f"{node_pool}-units"},
            "spec": {
                "requirements": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": [node_pool]}],
                "capacity": {resource: str(count)},
            },
        }
        resources.append({"type": "kubernetes:karpenter.sh/v1alpha1:NodeOverlay", "name": "o", "inputs": overlay})

    return add


def node_overlay_gate(resources: list[dict[str, Any]]) -> None:
    release(resources, "karpenter")["values"]["settings"]["featureGates"]["nodeOverlay"] = True


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
        assert [s.step for s in j.steps][-2:] == [steps_.ADMISSION, steps_.VOLUMES]


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
    assert "atlas-train-spot" in placements[0] and "preemptible" in placements[0]
    assert "atlas-train-on-demand" in placements[1]


# ---- the defects of the issue, each (re)introduced into the recording -------------------------------
# Written so they hold before and after the fix branches: each mutation puts the defect back.


def small_default_limits(resources: list[dict[str, Any]]) -> None:
    for lr in objects(resources, "LimitRange"):
        for item in lr["spec"]["limits"]:
            item["default"] = {"cpu": "2", "memory": "8Gi"}


def baseline_namespaces(resources: list[dict[str, Any]]) -> None:
    for ns in objects(resources, "Namespace"):
        if "gpuplat.dev/tenant" in ns["metadata"].get("labels", {}):
            ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] = "baseline"


def shared_hot_handle(resources: list[dict[str, Any]]) -> None:
    for pv in objects(resources, "PersistentVolume"):
        if pv["spec"]["csi"]["driver"] == "fsx.csi.aws.com":
            pv["spec"]["csi"]["volumeHandle"] = "fs-0123456789abcdef0"


def drop_overlays(resources: list[dict[str, Any]]) -> None:
    resources[:] = [r for r in resources if r["inputs"].get("kind") != "NodeOverlay"]


def replicas_as_whole_gpus(resources: list[dict[str, Any]]) -> None:
    data = release(resources, "gpu-operator")["values"]["devicePlugin"]["config"]["data"]
    data["dev"] = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 4}\n"


def hami_chart_default_selector(resources: list[dict[str, Any]]) -> None:
    values = release(resources, "hami")["values"]
    values["devicePlugin"]["nvidiaNodeSelector"] = {"gpuplat.dev/sharing": "fractional"}


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
    assert_fails(j, steps_.VOLUMES, "shares CSI volumeHandle fs-0123456789abcdef0 with 1 other volume(s)")


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

    # Kueue may admit any job asking for the resource into an unlabelled flavor: every pool's
    # journey sharing that resource breaks there.
    for pool in ("train", "dev"):
        j = journey(run("dev", bare), "product", pool)
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


# ---- step 6: device plugin ------------------------------------------------------------------------


def test_device_plugin_disabled_in_the_cluster_policy() -> None:
    def off(resources: list[dict[str, Any]]) -> None:
        release(resources, "gpu-operator")["values"]["devicePlugin"]["enabled"] = False

    assert_ok(journey(run("dev"), "research", "train"), steps_.DEVICE_PLUGIN)
    assert_fails(journey(run("dev", off), "research", "train"), steps_.DEVICE_PLUGIN, "disables the device plugin")


def test_device_plugin_operands_not_tolerating_the_spot_taint() -> None:
    def narrow(resources: list[dict[str, Any]]) -> None:
        values = release(resources, "gpu-operator")["values"]
        values["daemonsets"]["tolerations"] = [t for t in values["daemonsets"]["tolerations"] if "spot" not in t["key"]]

    assert_fails(journey(run("dev", narrow), "research", "train"), steps_.DEVICE_PLUGIN, "gpuplat.dev/spot=true")


def test_device_plugin_config_label_naming_no_config() -> None:
    def rename(resources: list[dict[str, Any]]) -> None:
        labels = find(resources, "NodePool", "dev-on-demand")["spec"]["template"]["metadata"]["labels"]
        labels["nvidia.com/device-plugin.config"] = "nope"

    assert_fails(journey(run("dev", rename), "product", "dev"), steps_.DEVICE_PLUGIN, "has no config 'nope'")


def test_device_plugin_renamed_replicas_are_not_whole_gpus() -> None:
    def rename_by_default(resources: list[dict[str, Any]]) -> None:
        data = release(resources, "gpu-operator")["values"]["devicePlugin"]["config"]["data"]
        data["dev"] = (
            "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n"
            "    resources:\n    - {name: nvidia.com/gpu, replicas: 4}\n"
        )

    j = journey(run("dev", rename_by_default), "product", "dev")
    (step,) = {s.detail.split(": ", 1)[1]: s for s in steps(j, steps_.DEVICE_PLUGIN)}.values()
    assert "advertises nvidia.com/gpu.shared (replicated)" in step.detail
    # Right exactly when the journey asks for the renamed resource (the plan's name for the pool).
    assert step.ok is (j.resource == "nvidia.com/gpu.shared")


def test_device_plugin_mig_config_that_does_not_exist() -> None:
    def bad(resources: list[dict[str, Any]]) -> None:
        labels = find(resources, "NodePool", "infer-on-demand")["spec"]["template"]["metadata"]["labels"]
        labels["nvidia.com/mig.config"] = "all-9g.99gb"

    assert_ok(journey(run("dev"), "research", "infer"), steps_.DEVICE_PLUGIN)
    assert_fails(journey(run("dev", bad), "research", "infer"), steps_.DEVICE_PLUGIN, "names no MIG config")


def test_device_plugin_custom_mig_layout_missing_from_the_config_map() -> None:
    def drop(resources: list[dict[str, Any]]) -> None:
        data = release(resources, "gpu-operator")["values"]["migManager"]["config"]["data"]
        data["config.yaml"] = data["config.yaml"].replace("gpuplat-infer:", "gpuplat-other:")

    assert_ok(journey(run("kubernetes"), "applied-research", "infer"), steps_.DEVICE_PLUGIN)
    j = journey(run("kubernetes", drop), "applied-research", "infer")
    assert_fails(j, steps_.DEVICE_PLUGIN, "nvidia.com/mig.config=gpuplat-infer names no MIG config")


def test_hami_device_plugin_checks() -> None:
    assert_ok(
        journey(run("kubernetes", hami_selector_without_chart_default), "applied-research", "lab"), "device-plugin"
    )

    def no_tolerations(resources: list[dict[str, Any]]) -> None:
        release(resources, "hami")["values"]["devicePlugin"]["tolerations"] = [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
        ]

    def other_name(resources: list[dict[str, Any]]) -> None:
        release(resources, "hami")["values"]["resourceName"] = "example.com/other"

    fixed = hami_selector_without_chart_default
    j = journey(run("kubernetes", fixed, no_tolerations), "applied-research", "lab")
    assert_ok(j, steps_.DEVICE_PLUGIN)  # the pool's own taint is PreferNoSchedule: it only prefers
    j = journey(run("kubernetes", fixed, other_name), "applied-research", "lab")
    assert_fails(j, steps_.DEVICE_PLUGIN, "HAMi counts example.com/other (resourceCountName), not")


def test_hami_device_plugin_not_tolerating_a_hard_taint() -> None:
    def hard(resources: list[dict[str, Any]]) -> None:
        for ds in objects(resources, "DaemonSet"):
            for container in ds["spec"]["template"]["spec"].get("initContainers", []):
                soft, hard = "gpuplat.dev/shared=true:PreferNoSchedule", "gpuplat.dev/shared=true:NoSchedule"
                container["command"] = [hard if arg == soft else arg for arg in container["command"]]
        for flavor in objects(resources, "ResourceFlavor"):
            for tol in flavor["spec"]["tolerations"]:
                tol["effect"] = "NoSchedule" if tol["key"] == "gpuplat.dev/shared" else tol["effect"]

    j = journey(run("kubernetes", hami_selector_without_chart_default, hard), "applied-research", "lab")
    assert_fails(j, steps_.DEVICE_PLUGIN, "does not tolerate gpuplat.dev/shared=true:NoSchedule")


# ---- step 7: admission ----------------------------------------------------------------------------


def test_admission_limit_range_defaults() -> None:
    assert_ok(journey(run("dev", lift_default_limits), "research", "infer"), steps_.ADMISSION)
    assert_fails(journey(run("dev", small_default_limits), "research", "infer"), steps_.ADMISSION, "below the request")


def test_admission_pod_security_and_bound_policies() -> None:
    def privileged(resources: list[dict[str, Any]]) -> None:
        for ns in objects(resources, "Namespace"):
            if ns["metadata"]["name"] == "research":
                ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] = "privileged"
        binding = {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "tenant-caps"},
            "spec": {"policyName": "tenant-capabilities", "validationActions": ["Deny"]},
        }
        resources.append(
            {"type": "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding", "inputs": binding}
        )

    j = journey(run("dev", lift_default_limits, baseline_namespaces), "research", "train")
    assert_fails(j, steps_.ADMISSION, "baseline refuses")
    j = journey(run("dev", lift_default_limits, privileged), "research", "train")
    assert_ok(j, steps_.ADMISSION)
    assert "ValidatingAdmissionPolicy tenant-capabilities (binding tenant-caps)" in steps(j, steps_.ADMISSION)[0].detail


def test_admission_resource_quota() -> None:
    def no_room(resources: list[dict[str, Any]]) -> None:
        quota = next(q for q in objects(resources, "ResourceQuota") if q["metadata"]["namespace"] == "research")
        quota["spec"]["hard"]["requests.nvidia.com/mig-1g.10gb"] = "0"

    def no_entry(resources: list[dict[str, Any]]) -> None:
        quota = next(q for q in objects(resources, "ResourceQuota") if q["metadata"]["namespace"] == "research")
        del quota["spec"]["hard"]["requests.nvidia.com/mig-1g.10gb"]

    j = journey(run("dev", lift_default_limits, no_room), "research", "infer")
    assert_fails(j, steps_.ADMISSION, "allows requests.nvidia.com/mig-1g.10gb 0")
    j = journey(run("dev", lift_default_limits, no_entry), "research", "infer")
    assert_fails(j, steps_.ADMISSION, "no ResourceQuota in research sets requests.nvidia.com/mig-1g.10gb")


# ---- step 8: volumes ------------------------------------------------------------------------------


def test_volumes_bound_to_volumes_of_their_own() -> None:
    assert_ok(journey(run("dev", own_volume_handles), "research", "train"), steps_.VOLUMES)

    def no_claim(resources: list[dict[str, Any]]) -> None:
        resources[:] = [
            r
            for r in resources
            if not (r["inputs"].get("kind") == "PersistentVolumeClaim" and r["inputs"]["metadata"]["name"] == "warm")
        ]

    def stolen(resources: list[dict[str, Any]]) -> None:
        find(resources, "PersistentVolume", "atlas-cold-research")["spec"]["claimRef"]["namespace"] = "product"

    j = journey(run("dev", own_volume_handles, no_claim), "research", "train")
    assert_fails(j, steps_.VOLUMES, "no PersistentVolumeClaim research/warm")
    j = journey(run("dev", own_volume_handles, stolen), "research", "train")
    assert_fails(j, steps_.VOLUMES, "is reserved for claim product/cold")


def test_volumes_on_kubernetes_use_the_tiers_classes() -> None:
    assert_ok(journey(run("kubernetes"), "applied-research", "infer"), steps_.VOLUMES)


# ---- output and the CLI ---------------------------------------------------------------------------


def test_output_formats() -> None:
    journeys = run("dev", small_default_limits)
    document = json.loads(render_json(journeys))
    assert set(document) == {"journeys"}
    first = document["journeys"][0]
    assert set(first) == {"tenant", "pool", "resource", "ok", "steps"}
    assert set(first["steps"][0]) == {"step", "ok", "detail"}
    text = render_text(journeys)
    assert "FAILED research -> train (nvidia.com/gpu)" in text
    assert "    FAIL admission: LimitRange research/container-defaults defaults the cpu limit" in text
    assert text.endswith(f"{len(journeys)} journey(s): 0 ok, {len(journeys)} failed\n")


def test_cli_text_and_json_exit_one_when_a_journey_fails(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import gpuplat.verify.command as command

    def with_defect(model: Any, plan: Any, resources: list[dict[str, Any]]) -> list[Journey]:
        small_default_limits(resources)
        return verify(model, plan, resources)

    monkeypatch.setattr(command, "verify", with_defect)  # the real recording, one defect put in
    assert main(["verify", "--stack", "dev"]) == 1
    assert "FAIL admission" in capsys.readouterr().out
    assert main(["verify", "--stack", "dev", "--format", "json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["journeys"] and not all(j["ok"] for j in document["journeys"])


def test_cli_exit_zero_when_every_journey_reaches_a_gpu(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import gpuplat.verify.command as command

    ok = [Journey("t", "p", "nvidia.com/gpu", (Step(steps_.QUEUE, True, "fine"),))]
    monkeypatch.setattr(command, "verify", lambda *_args, **_kw: ok)
    assert main(["verify", "--stack", "dev"]) == 0
    assert "1 journey(s): 1 ok, 0 failed" in capsys.readouterr().out


def test_cli_invalid_spec_prints_diagnostics(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--spec", "tests/cases/invalid/enum-typo/platform.yaml"]) == 1
    assert "GP104" in capsys.readouterr().err
    assert main(["verify", "--spec", "tests/cases/invalid/enum-typo/platform.yaml", "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["valid"] is False


def test_cli_usage_errors(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    assert main(["verify", "--stack", "nope"]) == 2
    capsys.readouterr()
    import sys

    from gpuplat.verify import render

    render._render_cached.cache_clear()
    monkeypatch.setitem(sys.modules, "helm_python", None)
    assert main(["verify", "--stack", "dev"]) == 2
    assert "pip install 'gpuplat[verify]'" in capsys.readouterr().err
    render._render_cached.cache_clear()


@pytest.mark.xfail(strict=True, reason="passes once the fix branches are merged")
@pytest.mark.parametrize("which", SPECS)
def test_verify_passes_on_the_shipped_stacks_and_the_kubernetes_example(which: str) -> None:
    journeys = run(which)
    assert all(j.ok for j in journeys), render_text([j for j in journeys if not j.ok])


def test_markdown_section_lists_failed_journeys_and_what_is_missing() -> None:
    from gpuplat.verify.output import render_markdown

    journeys = run("dev", small_default_limits, shared_hot_handle)
    text = render_markdown(journeys)
    assert text.startswith(f"### Verify\n\n0 of {len(journeys)} journey(s) reach a GPU.\n")
    assert "| research | train | `nvidia.com/gpu` |" in text
    assert "admission, volumes |" in text
    assert "**volumes**: hot: PersistentVolume atlas-hot-product shares CSI volumeHandle" in text
    ok = [Journey("t", "p", "r", (Step(steps_.QUEUE, True, "fine"),))]
    assert render_markdown(ok) == "### Verify\n\n1 of 1 journey(s) reach a GPU.\n"


def test_preview_markdown_carries_the_verify_section(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["preview", "--stack", "dev", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "journey(s) reach a GPU." in out.split("### Verify\n\n", 1)[1]
    assert out.index("### Policy") < out.index("### Verify") < out.index("### Platform")
