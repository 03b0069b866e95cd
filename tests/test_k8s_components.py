"""Behaviour of the Kubernetes components under the offline engine, both providers.

What docs/provisioned.md (Kubernetes column) promises is checked on the recorded objects:
the GPU stack per sharing mode, labels on existing nodes, Kueue flavors and quotas, topology,
SR-IOV / RDMA, storage, tenants, the GPU-utilization rules; plus the conventions every
component keeps (type tokens, parents, provider, CRD ordering, stable names).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.conventions import (
    CAPACITY_TYPE_LABEL,
    DEVICE_PLUGIN_DEPLOY_LABEL,
    HAMI_GPU_RESOURCE,
    MIG_CONFIG_LABEL,
    POOL_LABEL,
    SPOT_TAINT_KEY,
    pool_node_labels,
)
from components.kubernetes.pool_labels import label_args
from gpuplat.catalog import CHARTS, gpu_model
from gpuplat.catalog.dcgm import METRICS_CONFIG_KEY, parse_metrics_csv
from gpuplat.catalog.labels import reserved_label
from gpuplat.model import Sharing, SharingMode
from gpuplat.preview import RecordedResource, record_program
from tests.support_k8s import (
    KUBERNETES_EXAMPLE,
    PROJECT,
    ROOT,
    STACKS,
    by_kind,
    compile_aws_stack,
    compile_kubernetes_example,
    kubernetes_objects,
    record_side,
    recorded,
    releases,
)

SPECS = ("kubernetes", *STACKS)
COMPONENTS = {
    "gpuplat:index:GpuSharing",
    "gpuplat:index:FabricTopology",
    "gpuplat:index:StorageClasses",
    "gpuplat:index:Scheduling",
    "gpuplat:index:Tenant",
    "gpuplat:index:TenantPodSecurity",  # every shipped spec has a tenant allowed a fabric pool
    "gpuplat:index:TenantPriorityScope",
    "gpuplat:index:Autoscaling",
    "gpuplat:index:Observability",
    "gpuplat:index:Dashboards",
    "gpuplat:index:GpuHealth",
}
# The release whose chart installs each custom resource group's CRDs.
CRD_RELEASE = {
    "kueue.x-k8s.io": "kueue",
    "keda.sh": "keda",
    "monitoring.coreos.com": "kube-prometheus-stack",
    "sriovnetwork.openshift.io": "sriov-network-operator",
    "mellanox.com": "network-operator",
    "nv-ipam.nvidia.com": "network-operator",  # via the NicClusterPolicy's nv-ipam state
}


def _values(resources: Sequence[RecordedResource], key: str) -> dict[str, Any]:
    return releases(tuple(resources))[key].inputs["values"]


def _named(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects}


# ------------------------------------------------------------------------------ conventions


@pytest.mark.parametrize("which", SPECS)
def test_component_tree_and_provider(which: str) -> None:
    model, _, resources = recorded(which)
    by_urn = {r.urn: r for r in resources}
    components = {r.type for r in resources if r.type.startswith("gpuplat:index:")}
    # Only on provider kubernetes does the platform label nodes.
    expected = COMPONENTS | {"gpuplat:index:GpuFence"} | ({"gpuplat:index:PoolLabels"} if which == "kubernetes"
                                                          else set())
    assert components == expected
    provider = next(r.urn for r in resources if r.type == "pulumi:providers:kubernetes")
    for resource in resources:
        if not resource.type.startswith("kubernetes:"):
            continue
        parent = by_urn[resource.parent or ""]
        assert parent.type in expected, resource.name
        assert resource.name.startswith(parent.name + "-"), resource.name
        assert resource.options.get("provider") == provider, resource.name
    tenants = [r.name for r in resources if r.type == "gpuplat:index:Tenant"]
    assert sorted(tenants) == sorted(f"{model.metadata.name}-tenant-{t.name}" for t in model.tenants)


@pytest.mark.parametrize("which", SPECS)
def test_custom_resources_wait_for_the_release_with_their_crds(which: str) -> None:
    _, _, resources = recorded(which)
    urns = {key: r.urn for key, r in releases(resources).items()}
    for resource in kubernetes_objects(resources):
        group = str(resource.inputs["apiVersion"]).split("/")[0]
        if group in CRD_RELEASE:
            assert urns[CRD_RELEASE[group]] in resource.options.get("dependsOn", []), resource.name


@pytest.mark.parametrize("which", SPECS)
def test_a_cluster_queue_waits_for_the_flavors_it_lists_and_no_other(which: str) -> None:
    # Kueue keeps a ClusterQueue inactive until the flavors in its resource groups exist; it
    # never looks at the others, so depending on them only fans the graph out.
    _, _, resources = recorded(which)
    flavors = {
        str(r.inputs["metadata"]["name"]): r.urn
        for r in kubernetes_objects(resources)
        if r.inputs["kind"] == "ResourceFlavor"
    }
    queues = [r for r in kubernetes_objects(resources) if r.inputs["kind"] == "ClusterQueue"]
    assert queues
    some_tenant_lists_fewer = False
    for queue in queues:
        listed = {f["name"] for group in queue.inputs["spec"]["resourceGroups"] for f in group["flavors"]}
        waits = {urn for urn in queue.options.get("dependsOn", []) if urn in flavors.values()}
        assert waits == {flavors[name] for name in listed}, queue.name
        some_tenant_lists_fewer |= len(listed) < len(flavors)
    assert some_tenant_lists_fewer, "every tenant lists every flavor: the test shows nothing"


def test_provider_kubernetes_emits_no_aws_resource() -> None:
    _, _, resources = recorded("kubernetes")
    assert not [r for r in resources if r.type.startswith("aws:")]


def test_provider_kubernetes_root_emits_no_aws_resource() -> None:
    from components import GpuPlatform, GpuPlatformArgs

    model, plan = compile_kubernetes_example()

    def program() -> None:
        GpuPlatform(model.metadata.name, GpuPlatformArgs(model, plan))

    resources = record_program(program, project=PROJECT, stack="dev", config={"gpu-platform:kubeconfig": "{}"})
    assert not [r for r in resources if r.type.startswith("aws:")]
    types = {r.type for r in resources}
    assert COMPONENTS | {"gpuplat:index:PoolLabels"} <= types


def _extended(
    tmp_path: Path, base: dict[str, Any], pool: dict[str, Any], *, overlay: bool = False, **tenant: Any
) -> Path:
    """`base` with one more pool and tenant; in an overlay they are marked new (GP015 otherwise)."""
    marker = {"new": True} if overlay else {}
    base = dict(base)
    base["gpuNodePools"] = [*base.get("gpuNodePools", []), {**pool, **marker}]
    base["tenants"] = [*base.get("tenants", []), {"name": "newcomer", "gpus": 2, **tenant, **marker}]
    path = tmp_path / "extended.yaml"
    path.write_text(yaml.safe_dump(base), encoding="utf-8")
    return path


def test_adding_a_pool_and_a_tenant_renames_nothing_on_aws(tmp_path: Path) -> None:
    _, _, before = recorded("prod")
    overlay = yaml.safe_load((ROOT / "stacks" / "prod.yaml").read_text(encoding="utf-8"))
    pool = {"name": "extra", "instanceType": "g6.12xlarge", "nodes": {"min": 0, "max": 2}, "markets": ["on-demand"]}
    model, plan = compile_aws_stack("prod", _extended(tmp_path, overlay, pool, overlay=True))
    after = {r.urn for r in record_side(model, plan, "prod")}
    assert sorted(r.urn for r in before if r.urn not in after) == []
    assert any(u.endswith("-flavor-extra-on-demand") for u in after)
    assert any(u.endswith("::atlas-tenant-newcomer") for u in after)


def test_adding_a_pool_and_a_tenant_renames_nothing_on_kubernetes(tmp_path: Path) -> None:
    _, _, before = recorded("kubernetes")
    spec = yaml.safe_load(KUBERNETES_EXAMPLE.read_text(encoding="utf-8"))
    pool = {
        "name": "extra",
        "gpu": {"model": "L40S-48GB", "count": 4},
        "nodeSelector": {POOL_LABEL: "extra"},
        "nodes": {"min": 1, "max": 1},
        "sharing": {"mode": "time-slicing", "replicas": 4},
    }
    # Not on train, which foundation-models (hard) holds whole: nobody would lend there (GP354).
    extended = _extended(tmp_path, spec, pool, gpus=3, pools=["infer", "lab", "extra"])
    model, plan = compile_kubernetes_example(extended)
    after = {r.urn for r in record_side(model, plan)}
    assert sorted(r.urn for r in before if r.urn not in after) == []
    assert any(u.endswith("::orion-pool-labels-extra") for u in after)


# ------------------------------------------------------------------------------ GPU sharing


@pytest.mark.parametrize("which", SPECS)
def test_gpu_operator_values(which: str) -> None:
    model, _, resources = recorded(which)
    values = _values(resources, "gpu-operator")
    on_aws = which != "kubernetes"
    # The EKS NVIDIA AMI ships driver and toolkit; an existing cluster gets them from the operator.
    assert values["driver"]["enabled"] is not on_aws
    assert values["toolkit"]["enabled"] is not on_aws
    # No cluster-wide strategy: the operator would pass it to every device plugin over its config.
    assert values["mig"]["strategy"] == ""
    assert values["dcgmExporter"]["serviceMonitor"]["enabled"] is False
    # The exporter's counters: the ConfigMap the ClusterPolicy names, in the operator's namespace.
    metrics = [r for r in resources if r.type == "kubernetes:core/v1:ConfigMap"
               and r.inputs["metadata"]["name"] == values["dcgmExporter"]["config"]["name"]]
    assert [m.inputs["metadata"]["namespace"] for m in metrics] == [CHARTS["gpu-operator"].namespace]
    enabled = parse_metrics_csv(metrics[0].inputs["data"][METRICS_CONFIG_KEY])
    assert {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"} <= {
        c.field for c in enabled}
    tolerated = {t["key"] for t in values["daemonsets"]["tolerations"]}
    for pool in model.pools:
        assert {t.key for t in pool.taints} <= tolerated
    if on_aws and any("spot" in [m.value for m in p.markets] for p in model.pools):
        assert SPOT_TAINT_KEY in tolerated
    config = values["devicePlugin"]["config"]
    shared = {p.name: p for p in model.pools if p.sharing.mode in (SharingMode.MPS, SharingMode.TIME_SLICING)}
    assert set(config["data"]) == {"default", *shared}
    for name, pool in shared.items():
        entry = yaml.safe_load(config["data"][name])
        kind = "mps" if pool.sharing.mode is SharingMode.MPS else "timeSlicing"
        assert entry["sharing"][kind]["resources"] == [{"name": "nvidia.com/gpu", "replicas": pool.sharing.replicas}]
        # The plan names MIG resources per profile (mixed); the plugin refuses MPS under mixed.
        assert entry["flags"]["migStrategy"] == ("none" if kind == "mps" else "mixed")
        assert pool_node_labels(pool)["nvidia.com/device-plugin.config"] == name
    assert yaml.safe_load(config["data"]["default"])["flags"]["migStrategy"] == "mixed"


def test_custom_mig_layouts_get_a_mig_parted_config_with_the_named_profiles_in_use() -> None:
    model, _, resources = recorded("kubernetes")
    config = yaml.safe_load(_values(resources, "gpu-operator")["migManager"]["config"]["data"]["config.yaml"])
    infer = model.pools_by_name["infer"]
    name = pool_node_labels(infer)[MIG_CONFIG_LABEL]
    assert set(config["mig-configs"]) == {"all-disabled", name}
    assert config["mig-configs"][name][0]["mig-devices"] == dict(infer.sharing.layout or {})

    # A named profile beside a custom layout: the named one must come along, with catalog counts.
    aws_model, plan = compile_aws_stack("dev")
    infer = aws_model.pools_by_name["infer"]
    custom = dataclasses.replace(infer, name="custom", sharing=Sharing(SharingMode.MIG, layout={"3g.40gb": 2}))
    mixed = dataclasses.replace(aws_model, pools=(*aws_model.pools, custom))
    from components.kubernetes._gpu_configs import mig_parted_config

    configs = (mig_parted_config(mixed) or {})["mig-configs"]
    assert configs["all-1g.10gb"] == [
        {"device-filter": ["0x233010DE"], "devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}
    ]
    assert configs["gpuplat-custom"][0]["mig-devices"] == {"3g.40gb": 2}
    assert mig_parted_config(aws_model) is None  # named profiles only: the operator's own configs
    del plan


def test_fractional_pools_run_hami_instead_of_the_nvidia_device_plugin() -> None:
    model, _, resources = recorded("kubernetes")
    lab = model.pools_by_name["lab"]
    labels = pool_node_labels(lab)
    assert labels[DEVICE_PLUGIN_DEPLOY_LABEL] == "false"
    values = _values(resources, "hami")
    selector = values["devicePlugin"]["nvidiaNodeSelector"]
    assert selector.items() <= labels.items()
    assert all(not selector.items() <= pool_node_labels(p).items() for p in model.pools if p is not lab)
    assert values["devicePlugin"]["deviceSplitCount"] == lab.sharing.replicas
    assert values["resourceName"] == HAMI_GPU_RESOURCE
    policy = values["scheduler"]["defaultSchedulerPolicy"]
    assert policy == {"nodeSchedulerPolicy": "binpack", "gpuSchedulerPolicy": "binpack"}
    assert values["scheduler"]["kubeScheduler"]["image"]["registry"] == "registry.k8s.io"
    # Helm merges the chart's default selector {gpu: "on"} into ours: the nodes must carry it.
    assert {"gpu": "on"}.items() <= selector.items()
    # A pod asking only for one vGPU gets one replicas-th of the GPU, not all of its memory.
    config = yaml.safe_load(values["device-config"]["content"])["nvidia"]
    gpu = gpu_model(lab.gpu_model)
    assert gpu is not None and lab.sharing.replicas
    assert config["defaultMemory"] == int(gpu.memory_gib * 1024) // lab.sharing.replicas
    assert config["defaultCores"] == 100 // lab.sharing.replicas
    assert config["resourceCountName"] == HAMI_GPU_RESOURCE == values["resourceName"]
    for stack in STACKS:  # no fractional pool on aws: no HAMi
        assert "hami" not in releases(recorded(stack)[2])


def test_pool_labeler_labels_and_taints_the_selected_nodes() -> None:
    model, _, resources = recorded("kubernetes")
    daemonsets = {d["metadata"]["name"]: d for d in by_kind(resources, "DaemonSet")}
    assert set(daemonsets) == {f"pool-labeler-{p.name}" for p in model.pools}
    for pool in model.pools:
        spec = daemonsets[f"pool-labeler-{pool.name}"]["spec"]["template"]["spec"]
        assert spec["nodeSelector"] == dict(pool.node_selector)
        label = next(c for c in spec["initContainers"] if c["name"] == "label")["command"]
        assert label[:4] == ["/bin/kubectl", "label", "node", "$(NODE_NAME)"]
        for key, value in pool_node_labels(pool).items():
            assert f"{key}={value}" in label
        if pool.sharing.mode is not SharingMode.MIG:
            assert f"{MIG_CONFIG_LABEL}-" in label  # a pool that left MIG loses the config label
        taint = next(c for c in spec["initContainers"] if c["name"] == "taint")["command"]
        for t in pool.taints:
            assert any(arg.startswith(t.key) and arg.endswith(f":{t.effect}") for arg in taint[5:])
    [role] = [r for r in by_kind(resources, "ClusterRole") if r["metadata"]["name"].endswith("pool-labeler")]
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}]


@pytest.mark.parametrize("which", SPECS)
def test_every_node_label_the_platform_writes_is_reserved_for_it(which: str) -> None:
    # GP209 must refuse each such key in a spec, or the platform silently overwrites the user's value.
    model = recorded(which)[0]
    for pool in model.pools:
        written = {*pool_node_labels(pool), *(arg.split("=")[0].removesuffix("-") for arg in label_args(pool))}
        for key in written - set(pool.labels):
            assert reserved_label(key) is not None, f"{which} {pool.name}: {key}"
    assert reserved_label(CAPACITY_TYPE_LABEL) is not None  # Karpenter's, in every aws flavor
    assert reserved_label("gpuplat.dev/pool") is not None and reserved_label("example.com/pool") is None
