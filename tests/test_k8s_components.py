"""Behaviour of the Kubernetes components under the offline engine, both providers.

What DESIGN.md section 5 (Kubernetes column) promises is checked on the recorded objects:
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
    DEVICE_PLUGIN_DEPLOY_LABEL,
    HAMI_GPU_RESOURCE,
    MIG_CONFIG_LABEL,
    POOL_LABEL,
    SPOT_TAINT_KEY,
    mig_strategy,
    pool_node_labels,
)
from components.kubernetes._quota import split
from components.kubernetes.scheduling import kueue_config
from gpuplat.model import Platform, Sharing, SharingMode, isolation_permits
from gpuplat.preview import RecordedResource, record_program
from tests.support_k8s import (
    KUBERNETES_EXAMPLE,
    PROJECT,
    RELEASE,
    ROOT,
    STACKS,
    by_kind,
    chart_dir,
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
    "gpuplat:index:Autoscaling",
    "gpuplat:index:Observability",
}
# The release whose chart installs each custom resource group's CRDs.
CRD_RELEASE = {
    "kueue.x-k8s.io": "kueue",
    "monitoring.coreos.com": "kube-prometheus-stack",
    "sriovnetwork.openshift.io": "sriov-network-operator",
    "mellanox.com": "network-operator",
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
    expected = COMPONENTS | ({"gpuplat:index:PoolLabels"} if which == "kubernetes" else set())
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
    if not types & COMPONENTS:
        pytest.skip("GpuPlatform's Kubernetes hook does not build the Kubernetes side yet")
    assert COMPONENTS | {"gpuplat:index:PoolLabels"} <= types


def _extended(tmp_path: Path, base: dict[str, Any], pool: dict[str, Any]) -> Path:
    base = dict(base)
    base["gpuNodePools"] = [*base.get("gpuNodePools", []), pool]
    base["tenants"] = [*base.get("tenants", []), {"name": "newcomer", "gpus": 2}]
    path = tmp_path / "extended.yaml"
    path.write_text(yaml.safe_dump(base), encoding="utf-8")
    return path


def test_adding_a_pool_and_a_tenant_renames_nothing_on_aws(tmp_path: Path) -> None:
    _, _, before = recorded("prod")
    overlay = yaml.safe_load((ROOT / "stacks" / "prod.yaml").read_text(encoding="utf-8"))
    pool = {"name": "extra", "instanceType": "g6.12xlarge", "nodes": {"min": 0, "max": 2}, "markets": ["on-demand"]}
    model, plan = compile_aws_stack("prod", _extended(tmp_path, overlay, pool))
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
    model, plan = compile_kubernetes_example(_extended(tmp_path, spec, pool))
    after = {r.urn for r in record_side(model, plan)}
    assert sorted(r.urn for r in before if r.urn not in after) == []
    assert any(u.endswith("::orion-pool-labels-extra") for u in after)


# ------------------------------------------------------------------------------ GPU sharing


def test_mig_strategy_is_single_only_for_one_uniform_single_profile_fleet() -> None:
    model, _ = compile_aws_stack("dev")
    assert mig_strategy(model) == "mixed"  # whole GPUs beside MIG slices
    uniform = [dataclasses.replace(p, sharing=Sharing(SharingMode.MIG, profile="all-1g.10gb")) for p in model.pools]
    h100 = [p for p in uniform if p.gpu_model == "H100-SXM-80GB"]
    assert mig_strategy(dataclasses.replace(model, pools=tuple(h100))) == "single"
    layout = Sharing(SharingMode.MIG, layout={"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2})
    assert mig_strategy(dataclasses.replace(model, pools=(dataclasses.replace(h100[0], sharing=layout),))) == "mixed"
    no_mig = tuple(p for p in model.pools if p.sharing.mode is not SharingMode.MIG)
    assert mig_strategy(dataclasses.replace(model, pools=no_mig)) == "single"


@pytest.mark.parametrize("which", SPECS)
def test_gpu_operator_values(which: str) -> None:
    model, _, resources = recorded(which)
    values = _values(resources, "gpu-operator")
    on_aws = which != "kubernetes"
    # The EKS NVIDIA AMI ships driver and toolkit; an existing cluster gets them from the operator.
    assert values["driver"]["enabled"] is not on_aws
    assert values["toolkit"]["enabled"] is not on_aws
    assert values["mig"]["strategy"] == mig_strategy(model)
    assert values["dcgmExporter"]["serviceMonitor"]["enabled"] is False
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
        assert pool_node_labels(pool)["nvidia.com/device-plugin.config"] == name


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
    rules = by_kind(resources, "ClusterRole")[0]["rules"]
    assert rules == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}]


# ------------------------------------------------------------------------- fabric / topology


def test_topology_levels_are_labels_the_nodes_carry() -> None:
    for which, levels in (
        ("dev", [f"topology.k8s.aws/network-node-layer-{i}" for i in (1, 2, 3)] + ["kubernetes.io/hostname"]),
        ("kubernetes", ["kubernetes.io/hostname"]),
    ):
        model, _, resources = recorded(which)
        (topology,) = by_kind(resources, "Topology")
        assert [level["nodeLabel"] for level in topology["spec"]["levels"]] == levels
        flavors = by_kind(resources, "ResourceFlavor")
        fabric = {p.name for p in model.fabric_pools}
        for flavor in flavors:
            pool = flavor["spec"]["nodeLabels"][POOL_LABEL]
            assert ("topologyName" in flavor["spec"]) == (pool in fabric)


def test_sriov_and_network_operator_on_an_rdma_fabric() -> None:
    model, _, resources = recorded("kubernetes")
    fabric = model.network.fabric
    assert fabric is not None and fabric.sriov is not None
    policies = by_kind(resources, "SriovNetworkNodePolicy")
    assert len(policies) == len(model.fabric_pools)
    for policy, pool in zip(policies, model.fabric_pools, strict=True):
        spec = policy["spec"]
        assert spec["numVfs"] == fabric.sriov.vfs_per_nic
        assert spec["nodeSelector"] == dict(pool.node_selector)
        assert spec["isRdma"] is True and spec["nicSelector"] == {"vendor": "15b3"}
        assert policy["metadata"]["namespace"] == releases(resources)["sriov-network-operator"].inputs["namespace"]
    (nic,) = by_kind(resources, "NicClusterPolicy")
    assert nic["metadata"]["name"] == "nic-cluster-policy"
    assert "ofedDriver" in nic["spec"] and "rdmaSharedDevicePlugin" not in nic["spec"]
    assert _values(resources, "network-operator")["nfd"]["enabled"] is False  # the GPU Operator's NFD serves
    assert _values(resources, "gpu-operator")["driver"]["rdma"]["enabled"] is True
    for stack in STACKS:
        assert not {"sriov-network-operator", "network-operator"} & set(releases(recorded(stack)[2]))


# ------------------------------------------------------------------------------- scheduling


@pytest.mark.parametrize("which", SPECS)
def test_flavors_per_pool_and_market(which: str) -> None:
    model, plan, resources = recorded(which)
    flavors = _named(by_kind(resources, "ResourceFlavor"))
    prefix = model.metadata.name
    if which == "kubernetes":
        assert set(flavors) == {f"{prefix}-{p.name}" for p in model.pools}
        for pool in model.pools:
            assert dict(pool.node_selector).items() <= flavors[f"{prefix}-{pool.name}"]["spec"]["nodeLabels"].items()
        return
    expected = {f"{prefix}-{p.name}-{m.value}": (p, m) for p in model.pools for m in p.markets}
    assert set(flavors) == set(expected)
    for name, (pool, market) in expected.items():
        spec = flavors[name]["spec"]
        assert spec["nodeLabels"] == {POOL_LABEL: pool.name, "karpenter.sh/capacity-type": market.value}
        spot = [t for t in spec.get("nodeTaints", []) if t["key"] == SPOT_TAINT_KEY]
        assert bool(spot) == (market.value == "spot")
        assert SPOT_TAINT_KEY not in {t["key"] for t in spec["tolerations"]}
    del plan


@pytest.mark.parametrize("which", SPECS)
def test_cluster_queues_give_each_tenant_its_gpus(which: str) -> None:
    model, plan, resources = recorded(which)
    queues = _named(by_kind(resources, "ClusterQueue"))
    flavors = _named(by_kind(resources, "ResourceFlavor"))
    assert {q["spec"]["cohortName"] for q in queues.values()} == {model.metadata.name}
    local = {(q["metadata"]["namespace"], q["metadata"]["name"]): q for q in by_kind(resources, "LocalQueue")}
    for tenant in model.tenants:
        name = f"{model.metadata.name}-{tenant.name}"
        queue = queues[name]["spec"]
        assert local[(tenant.name, "default")]["spec"]["clusterQueue"] == name
        assert queue["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": tenant.name}
        gpus = 0.0
        for group in queue["resourceGroups"]:
            for flavor in group["flavors"]:
                pool = model.pools_by_name[flavors[flavor["name"]]["spec"]["nodeLabels"][POOL_LABEL]]
                assert pool.name in tenant.pools and isolation_permits(tenant.isolation, pool)
                units = _pool_resources(model, plan, pool.name)
                own = [r for r in flavor["resources"] if r["name"] in units]
                # Every resource of the flavor's GPUs carries the same share of whole GPUs.
                shares = {r["nominalQuota"] / units[r["name"]] for r in own}
                assert len(shares) == 1
                gpus += shares.pop()
                for r in own:
                    assert r["nominalQuota"] + r["borrowingLimit"] == tenant.gpus * units[r["name"]]
                assert all(r["nominalQuota"] == 0 for r in flavor["resources"] if r["name"] not in units)
        assert gpus == pytest.approx(tenant.gpus)


def _pool_resources(model: Platform, plan: Any, pool: str) -> dict[str, int]:
    from components.kubernetes._common import unit_resources

    return unit_resources(model.pools_by_name[pool], plan.pool(pool), mig_strategy(model))


def test_hard_isolation_tenants_never_get_shared_gpus() -> None:
    model, _, resources = recorded("prod")
    partners = next(t for t in model.tenants if t.name == "partners")
    assert partners.isolation == "hard"
    queue = _named(by_kind(resources, "ClusterQueue"))["atlas-partners"]["spec"]
    names = {f["name"] for g in queue["resourceGroups"] for f in g["flavors"]}
    assert names and all(n.startswith("atlas-infer-") for n in names)
    research = _named(by_kind(resources, "ClusterQueue"))["atlas-research"]["spec"]
    shared = {p.name for p in model.pools if p.sharing.mode in (SharingMode.MPS, SharingMode.TIME_SLICING)}
    research_pools = {f["name"].split("-")[1] for g in research["resourceGroups"] for f in g["flavors"]}
    assert not research_pools & shared


def test_split_is_whole_proportional_and_complete() -> None:
    assert split(10, [3, 1]) == [8, 2]
    assert split(7, [1, 1, 1]) == [3, 2, 2]
    assert split(5, [0, 0]) == [3, 2]
    assert split(0, [4, 4]) == [0, 0]
    assert sum(split(64, [128, 32, 40])) == 64


def test_kueue_configuration_keeps_the_chart_default() -> None:
    directory = chart_dir("kueue")
    if directory is None:
        pytest.skip("no copy of the kueue chart's values.yaml")
    values = yaml.safe_load((directory / "values.yaml").read_text(encoding="utf-8"))
    default = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    ours = kueue_config()
    assert {k: v for k, v in ours.items() if k != "resources"} == default
    assert ours["resources"] == {"quotaCheckStrategy": "IgnoreUndeclared"}


# ------------------------------------------------------------------------- tenants / storage


@pytest.mark.parametrize("which", SPECS)
def test_tenant_objects(which: str) -> None:
    model, _, resources = recorded(which)
    namespaces = _named(by_kind(resources, "Namespace"))
    priorities = _named(by_kind(resources, "PriorityClass"))
    critical = priorities[f"{model.metadata.name}-critical"]["value"]
    for tenant in model.tenants:
        ns = namespaces[tenant.name]["metadata"]["labels"]
        assert ns["pod-security.kubernetes.io/enforce"] == "baseline"
        objects = [r.inputs for r in resources if r.inputs.get("metadata", {}).get("namespace") == tenant.name]
        kinds = sorted(o["kind"] for o in objects)
        assert kinds.count("NetworkPolicy") == 3
        assert {"ResourceQuota", "LimitRange", "RoleBinding", "LocalQueue"} <= set(kinds)
        deny = next(o for o in objects if o["metadata"]["name"] == "default-deny")["spec"]
        assert deny == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
        binding = next(o for o in objects if o["kind"] == "RoleBinding")
        assert binding["roleRef"]["name"] == "edit"
        assert binding["subjects"][0] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Group",
            "name": f"gpuplat:{tenant.name}",
        }
        quota = next(o for o in objects if o["kind"] == "ResourceQuota")["spec"]["hard"]
        usable = {
            r for p in model.pools if p.name in tenant.pools for r in _pool_resources(model, recorded(which)[1], p.name)
        }
        for key, value in quota.items():
            assert (int(value) > 0) == (key.removeprefix("requests.") in usable and tenant.gpus > 0), key
        assert priorities[f"{model.metadata.name}-tenant-{tenant.name}"]["value"] < critical


def test_storage_on_aws_is_static_volumes_per_tenant() -> None:
    model, plan, resources = recorded("dev")
    keys = set(releases(resources))
    assert {"aws-fsx-csi-driver", "aws-mountpoint-s3-csi-driver"} <= keys
    classes = _named(by_kind(resources, "StorageClass"))
    assert set(classes) == {f"atlas-{t}" for t in ("hot", "warm", "cold")}
    assert all(c["provisioner"] == "kubernetes.io/no-provisioner" for c in classes.values())
    assert classes["atlas-hot"]["metadata"]["annotations"]["gpuplat.dev/critical-iops-share"] == str(
        model.storage.critical_iops_share
    )
    volumes = _named(by_kind(resources, "PersistentVolume"))
    claims = {
        (c["metadata"]["namespace"], c["metadata"]["name"]): c for c in by_kind(resources, "PersistentVolumeClaim")
    }
    for tenant in model.tenants:
        hot = volumes[f"atlas-hot-{tenant.name}"]["spec"]
        assert hot["csi"]["driver"] == "fsx.csi.aws.com"
        assert hot["csi"]["volumeHandle"] == "fs-0123456789abcdef0"
        assert set(hot["csi"]["volumeAttributes"]) == {"dnsname", "mountname"}
        assert plan.storage.hot is not None and hot["capacity"]["storage"] == f"{plan.storage.hot.capacity_gib}Gi"
        for tier in ("warm", "cold"):
            spec = volumes[f"atlas-{tier}-{tenant.name}"]["spec"]
            assert spec["csi"]["driver"] == "s3.csi.aws.com"
            assert f"prefix {tenant.name}/" in spec["mountOptions"]
            assert ("allow-delete" in spec["mountOptions"]) == (tier == "warm")
        for tier in ("hot", "warm", "cold"):
            claim = claims[(tenant.name, tier)]["spec"]
            assert claim["volumeName"] == f"atlas-{tier}-{tenant.name}"
            assert volumes[claim["volumeName"]]["spec"]["claimRef"] == {"namespace": tenant.name, "name": tier}
    handles = [
        v["spec"]["csi"]["volumeHandle"] for v in volumes.values() if v["spec"]["csi"]["driver"] == "s3.csi.aws.com"
    ]
    assert len(handles) == len(set(handles))


def test_storage_on_kubernetes_uses_the_named_classes() -> None:
    _, _, resources = recorded("kubernetes")
    assert not by_kind(resources, "StorageClass") and not by_kind(resources, "PersistentVolume")
    assert not {"aws-fsx-csi-driver", "aws-mountpoint-s3-csi-driver"} & set(releases(resources))
    priorities = _named(by_kind(resources, "PriorityClass"))
    assert priorities["orion-critical"]["value"] > priorities["orion-standard"]["value"]


# ----------------------------------------------------------------- autoscaling / observability


@pytest.mark.parametrize("which", SPECS)
def test_gpu_utilization_rules_per_pool(which: str) -> None:
    model, _, resources = recorded(which)
    (monitor,) = by_kind(resources, "ServiceMonitor")  # the operator's own is off: exactly one
    endpoint = monitor["spec"]["endpoints"][0]
    assert endpoint["honorLabels"] is True
    assert monitor["spec"]["attachMetadata"] == {"node": True}
    assert {
        "sourceLabels": ["__meta_kubernetes_node_label_gpuplat_dev_pool"],
        "targetLabel": "pool",
        "action": "replace",
    } in endpoint["relabelings"]
    (rule,) = by_kind(resources, "PrometheusRule")
    records, alerts = (g["rules"] for g in rule["spec"]["groups"])
    window = model.autoscaling.window
    assert [r["labels"]["pool"] for r in records] == [p.name for p in model.pools]
    for record, pool in zip(records, model.pools, strict=True):
        assert f'{{pool="{pool.name}"}}[{window}]' in record["expr"]
        assert "avg_over_time(" in record["expr"]
        metric = "DCGM_FI_PROF_GR_ENGINE_ACTIVE" if pool.sharing.mode is SharingMode.MIG else "DCGM_FI_DEV_GPU_UTIL"
        assert metric in record["expr"]
    waste = [a for a in alerts if a["alert"] == "GpuPoolUnderutilized"]
    saturated = [a for a in alerts if a["alert"] == "GpuPoolSaturated"]
    assert len(waste) == len(saturated) == len(model.pools)
    assert all(a["for"] == "1h" and a["expr"].endswith(f"< {model.autoscaling.scale_down_below}") for a in waste)
    assert all(a["for"] == window and a["expr"].endswith(f"> {model.autoscaling.scale_up_above}") for a in saturated)
    assert "keda" in releases(resources)


@pytest.mark.parametrize("which", SPECS)
def test_prometheus_selects_every_monitor_and_keeps_the_retention(which: str) -> None:
    model, _, resources = recorded(which)
    spec = _values(resources, "kube-prometheus-stack")["prometheus"]["prometheusSpec"]
    assert spec["retention"] == model.observability.retention
    for key in ("serviceMonitor", "podMonitor", "rule"):
        assert spec[f"{key}SelectorNilUsesHelmValues"] is False


@pytest.mark.parametrize("which", SPECS)
def test_every_release_is_pinned_from_the_catalog(which: str) -> None:
    from gpuplat.catalog import CHARTS

    _, _, resources = recorded(which)
    for key, release in releases(resources).items():
        chart = CHARTS[key]
        assert release.inputs["version"] == chart.version
        assert release.inputs["chart"] == chart.release_chart
        assert release.inputs["namespace"] == chart.namespace
        assert release.type == RELEASE


def test_resource_counts() -> None:
    """Not a limit: the counts are printed (`pytest -s`) for reviews of the infrastructure size."""
    for which in SPECS:
        resources = recorded(which)[2]
        custom = [r for r in resources if r.custom and r.type != "pulumi:providers:kubernetes"]
        print(f"{which}: {len(custom)} Kubernetes objects and releases, {len(resources)} registrations")
        assert custom
