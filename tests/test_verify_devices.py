"""`gpuplat verify` steps 6-8: device plugins (GPU Operator, HAMi), admission, volumes.

Same method as test_verify.py: repair what today's output breaks, then break one thing.
"""

from __future__ import annotations

from typing import Any

from gpuplat.verify import types as steps_
from tests.support_verify import (
    assert_fails,
    assert_ok,
    baseline_namespaces,
    find,
    hami_selector_without_chart_default,
    journey,
    lift_default_limits,
    objects,
    own_volume_handles,
    release,
    run,
    small_default_limits,
    steps,
)

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


def test_device_plugin_refuses_mps_under_the_mixed_mig_strategy() -> None:
    def cluster_wide(resources: list[dict[str, Any]]) -> None:
        release(resources, "gpu-operator")["values"]["mig"]["strategy"] = "mixed"

    def in_the_config(resources: list[dict[str, Any]]) -> None:
        data = release(resources, "gpu-operator")["values"]["devicePlugin"]["config"]["data"]
        data["notebooks"] = data["notebooks"].replace("migStrategy: none", "migStrategy: mixed")

    assert_ok(journey(run("staging"), "product", "notebooks"), steps_.DEVICE_PLUGIN)
    for edit, source in ((cluster_wide, "spec.mig.strategy"), (in_the_config, "flags.migStrategy")):
        assert_fails(journey(run("staging", edit), "product", "notebooks"), steps_.DEVICE_PLUGIN, source)


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
        values = release(resources, "hami")["values"]
        values["resourceName"] = "example.com/other"
        content = values["device-config"]["content"]
        values["device-config"]["content"] = content.replace("nvidia.com/gpu.fractional", "example.com/other")

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
    assert "tenant-capabilities (binding tenant-caps)" in steps(j, steps_.ADMISSION)[0].detail


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
