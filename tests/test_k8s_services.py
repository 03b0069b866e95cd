"""Behaviour of the Kubernetes components that serve the platform's users, both providers.

Kueue flavors and tenant quotas, tenant namespaces, storage tiers, the GPU-utilization rules
and monitoring, and the pinned chart releases (the Kubernetes column of docs/provisioned.md).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest
import yaml

from components.conventions import POOL_LABEL, SPOT_TAINT_KEY
from components.kubernetes._hot_volumes import directory_job_name
from components.kubernetes.observability import MONITORING_NAMESPACE, prometheus_volume_gib
from components.kubernetes.scheduling import kueue_config
from gpuplat.catalog import CHARTS
from gpuplat.model import Market, Platform, SharingMode, isolation_permits
from gpuplat.plan import Plan
from gpuplat.plan.capacity import proportional, unit_resources
from gpuplat.verify.k8s import untolerated
from tests.support_k8s import AWS_REFS, RELEASE, STACKS, by_kind, chart_dir, record_side, recorded, releases

SPECS = ("kubernetes", *STACKS)


def _named(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects}


def _values(which: str, key: str) -> dict[str, Any]:
    return releases(recorded(which)[2])[key].inputs["values"]


def _pool_resources(model: Platform, plan: Plan, pool: str) -> dict[str, int]:
    return unit_resources(plan.pool(pool))


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
    # Only markets the plan gives nodes have a NodePool, so only those get a flavor.
    expected = {
        f"{prefix}-{p.name}-{m.value}": (p, m)
        for p in model.pools
        for m in p.markets
        if plan.pool(p.name).share(m).nodes
    }
    assert set(flavors) == set(expected)
    for name, (pool, market) in expected.items():
        spec = flavors[name]["spec"]
        assert spec["nodeLabels"] == {POOL_LABEL: pool.name, "karpenter.sh/capacity-type": market.value}
        spot = [t for t in spec.get("nodeTaints", []) if t["key"] == SPOT_TAINT_KEY]
        assert bool(spot) == (market.value == "spot")
        # Kueue assigns a flavor only when the pod's tolerations plus the flavor's cover its
        # nodeTaints; a default tenant job tolerates nothing, so the flavor must cover them all.
        assert untolerated(spec.get("nodeTaints", []), spec["tolerations"]) == [], name


def test_no_flavor_for_a_market_without_nodes() -> None:
    # dev: reserved 0 %, so train's reserved market has no NodePool; a flavor there would be
    # every ClusterQueue's first choice for train and never fit.
    model, plan, resources = recorded("dev")
    assert (
        plan.pool("train").share(Market.RESERVED).nodes == 0 and Market.RESERVED in model.pools_by_name["train"].markets
    )
    names = {f["metadata"]["name"] for f in by_kind(resources, "ResourceFlavor")}
    assert "atlas-train-reserved" not in names
    for queue in by_kind(resources, "ClusterQueue"):
        used = {f["name"] for g in queue["spec"]["resourceGroups"] for f in g["flavors"]}
        assert used <= names


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
                shares = {int(r["nominalQuota"]) / units[r["name"]] for r in own}
                assert len(shares) == 1
                gpus += shares.pop()
                for r in own:
                    assert int(r["nominalQuota"]) + int(r["borrowingLimit"]) == tenant.gpus * units[r["name"]]
                assert all(r["nominalQuota"] == "0" for r in flavor["resources"] if r["name"] not in units)
        assert gpus == pytest.approx(tenant.gpus)


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
    assert proportional(10, [3, 1]) == [8, 2]
    assert proportional(7, [1, 1, 1]) == [3, 2, 2]
    assert proportional(5, [0, 0]) == [3, 2]
    assert proportional(0, [4, 4]) == [0, 0]
    assert sum(proportional(64, [128, 32, 40])) == 64


@pytest.mark.parametrize("which", SPECS)
def test_nominal_quotas_never_promise_a_flavor_more_than_it_has(which: str) -> None:
    """Kueue lends only unused quota: promises beyond a flavor's GPUs cannot all be kept."""
    model, plan, resources = recorded(which)
    queues = by_kind(resources, "ClusterQueue")
    capacity = {f.name: f.gpus * next(iter(f.units.values())) for f in plan.flavors}
    resource_of = {f.name: next(iter(f.units)) for f in plan.flavors}
    promised = dict.fromkeys(capacity, 0)
    for queue in queues:
        hard = next(t for t in model.tenants if queue["metadata"]["name"] == f"{model.metadata.name}-{t.name}")
        for group in queue["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                for r in flavor["resources"]:
                    if r["name"] == resource_of[flavor["name"]]:
                        promised[flavor["name"]] += int(r["nominalQuota"])
                    # A hard tenant's guarantee is never lent, so it never waits on a preemption.
                    assert ("lendingLimit" in r) == (hard.isolation == "hard")
                    assert r.get("lendingLimit", "0") == "0"
    assert all(promised[f] <= capacity[f] for f in capacity), (promised, capacity)


# The only keys the platform adds to the chart's manager Configuration (scheduling.py says why).
KUEUE_CHANGES = {"resources", "manageJobsWithoutQueueName", "managedJobsNamespaceSelector", "waitForPodsReady"}


def test_kueue_configuration_keeps_the_chart_default() -> None:
    directory = chart_dir("kueue")
    values = yaml.safe_load((directory / "values.yaml").read_text(encoding="utf-8"))
    default = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    ours = kueue_config()
    assert not KUEUE_CHANGES & set(default)
    frameworks = ours["integrations"]["frameworks"]
    assert set(frameworks) - set(default["integrations"]["frameworks"]) == {"kubeflow.org/pytorchjob"}
    kept = [f for f in frameworks if f != "kubeflow.org/pytorchjob"]
    ours = {**ours, "integrations": {**ours["integrations"], "frameworks": kept}}
    assert ours["metrics"] == {**default["metrics"], "enableClusterQueueResources": True}
    ours = {**ours, "metrics": default["metrics"]}
    assert {k: v for k, v in ours.items() if k not in KUEUE_CHANGES} == default
    assert set(ours) - set(default) == KUEUE_CHANGES
    assert ours["resources"] == {"quotaCheckStrategy": "IgnoreUndeclared"}
    assert ours["manageJobsWithoutQueueName"] is True


def _commented_block(text: str, key: str) -> dict[str, Any]:
    """A block the chart ships commented out (`#key:` and its `#  ` lines), as YAML."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == f"#{key}:")
    indent = lines[start].index("#")
    block = [lines[start]]
    for line in lines[start + 1:]:
        if not line.startswith(" " * indent + "#  "):
            break
        block.append(line)
    return yaml.safe_load("\n".join(line[indent + 1:] for line in block))[key]


def test_kueue_wait_for_pods_ready_uses_the_chart_s_field_names() -> None:
    """The chart documents waitForPodsReady only in a comment; a misspelt key would be ignored."""
    example = _commented_block((chart_dir("kueue") / "values.yaml").read_text(encoding="utf-8"), "waitForPodsReady")
    ours = kueue_config(requeue_limit=3)["waitForPodsReady"]  # every key, the limit's too
    assert set(ours) <= set(example), set(ours) - set(example)
    assert set(ours["requeuingStrategy"]) <= set(example["requeuingStrategy"])


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A Kubernetes LabelSelector, as the API server evaluates it."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    tests = {
        "In": lambda e: labels.get(e["key"]) in e["values"],
        "NotIn": lambda e: labels.get(e["key"]) not in e["values"],
        "Exists": lambda e: e["key"] in labels,
        "DoesNotExist": lambda e: e["key"] not in labels,
    }
    return all(tests[e["operator"]](e) for e in selector.get("matchExpressions", []))


@pytest.mark.parametrize("which", SPECS)
def test_emitted_kueue_configuration_admits_what_the_platform_relies_on(which: str) -> None:
    config = yaml.safe_load(_values(which, "kueue")["managerConfig"]["controllerManagerConfigYaml"])
    # Quotas are GPUs only: Kueue's default BlockUndeclared would refuse every job asking for CPU.
    assert config["resources"]["quotaCheckStrategy"] == "IgnoreUndeclared"
    # A workload whose market has no capacity is evicted and requeued instead of holding quota.
    wait = config["waitForPodsReady"]
    assert wait["timeout"] == "30m" and wait["blockAdmission"] is False
    # Requeued until capacity comes, unless the spec sets a limit (scheduling.requeueLimit).
    assert wait["requeuingStrategy"].get("backoffLimitCount") == recorded(which)[0].scheduling.requeue_limit
    # A running workload that loses a pod with its node (a failed GPU) is evicted and requeued
    # when the replacement is not ready in time, instead of holding its quota on one lost rank.
    assert wait["recoveryTimeout"] == "10m"
    # Gang admission of PyTorchJobs, not one pod at a time through the pod integration.
    assert {"kubeflow.org/pytorchjob", "pod"} <= set(config["integrations"]["frameworks"])


@pytest.mark.parametrize("which", SPECS)
def test_kueue_manages_unlabelled_jobs_in_tenant_namespaces_only(which: str) -> None:
    model, _, resources = recorded(which)
    config = yaml.safe_load(_values(which, "kueue")["managerConfig"]["controllerManagerConfigYaml"])
    assert config["manageJobsWithoutQueueName"] is True
    selector = config["managedJobsNamespaceSelector"]
    namespaces = {n["metadata"]["name"]: n["metadata"].get("labels", {}) for n in by_kind(resources, "Namespace")}
    selected = {name for name, labels in namespaces.items() if _selects(selector, labels)}
    assert selected == {t.name for t in model.tenants}
    # Namespaces the platform does not create (kube-system, the charts' own) carry no labels of ours.
    assert not _selects(selector, {"kubernetes.io/metadata.name": "kube-system"})


# ------------------------------------------------------------------------- tenants / storage


@pytest.mark.parametrize("which", SPECS)
def test_tenant_objects(which: str) -> None:
    model, _, resources = recorded(which)
    namespaces = _named(by_kind(resources, "Namespace"))
    priorities = _named(by_kind(resources, "PriorityClass"))
    critical = priorities[f"{model.metadata.name}-critical"]["value"]
    for tenant in model.tenants:
        ns = namespaces[tenant.name]["metadata"]["labels"]
        fabric = any(model.pools_by_name[p].fabric for p in tenant.pools)
        assert ns["pod-security.kubernetes.io/enforce"] == ("privileged" if fabric else "baseline")
        objects = [r.inputs for r in resources if r.inputs.get("metadata", {}).get("namespace") == tenant.name]
        kinds = sorted(o["kind"] for o in objects)
        assert kinds.count("NetworkPolicy") == (5 if which == "kubernetes" else 6)
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


def _quotas(resources: tuple[Any, ...]) -> dict[str, dict[str, int]]:
    return {
        q["metadata"]["namespace"]: {k.removeprefix("requests."): int(v) for k, v in q["spec"]["hard"].items()}
        for q in by_kind(resources, "ResourceQuota")
    }


def test_quota_backstop_is_what_the_tenants_gpus_can_yield() -> None:
    _, _, resources = recorded("prod")
    hard = _quotas(resources)
    # research (hard isolation) has no time-sliced or MPS pool: exactly its 128 GPUs.
    assert hard["research"]["nvidia.com/gpu"] == 128
    # product's 64 GPUs: replicas are their own resource, so whole GPUs are exactly 64, and the
    # replicas are what its GPUs can yield, most per GPU first, each pool up to its size:
    # notebooks (MPS x8, 16 GPUs), dev (time-slicing x4, 24 GPUs). Not 64 x 8.
    assert hard["product"]["nvidia.com/gpu"] == 64
    assert hard["product"]["nvidia.com/gpu.shared"] == 16 * 8 + 24 * 4
    # infer has 64 GPUs of 7 x 1g.10gb, fewer than research's 128.
    assert hard["research"]["nvidia.com/mig-1g.10gb"] == 64 * 7


@pytest.mark.parametrize("which", SPECS)
def test_quota_admits_a_tenants_gpus_on_any_one_allowed_pool(which: str) -> None:
    model, plan, resources = recorded(which)
    hard = _quotas(resources)
    capacity: dict[str, int] = {}
    for flavor in plan.flavors:
        capacity[flavor.pool] = capacity.get(flavor.pool, 0) + flavor.gpus
    for tenant in model.tenants:
        allowed = [p for p in model.pools if p.name in tenant.pools and isolation_permits(tenant.isolation, p)]
        for resource, ceiling in hard[tenant.name].items():
            per_gpu = [_pool_resources(model, plan, p.name).get(resource, 0) for p in allowed]
            for pool, units in zip(allowed, per_gpu, strict=True):
                assert ceiling >= min(tenant.gpus, capacity.get(pool.name, 0)) * units, (tenant.name, resource)
            assert ceiling <= tenant.gpus * max(per_gpu, default=0), (tenant.name, resource)


def test_storage_on_aws_is_static_volumes_per_tenant() -> None:
    model, plan, resources = recorded("dev")
    keys = set(releases(resources))
    assert {"aws-fsx-csi-driver", "aws-mountpoint-s3-csi-driver"} <= keys
    classes = _named(by_kind(resources, "StorageClass"))
    tiers = {f"atlas-{t}" for t in ("hot", "warm", "cold")}
    assert set(classes) == tiers | {"atlas-ebs-gp3"}  # and Prometheus's
    assert all(classes[c]["provisioner"] == "kubernetes.io/no-provisioner" for c in tiers)
    assert classes["atlas-hot"]["metadata"]["annotations"]["gpuplat.dev/critical-iops-share"] == str(
        model.storage.critical_iops_share
    )
    volumes = _named(by_kind(resources, "PersistentVolume"))
    claims = {
        (c["metadata"]["namespace"], c["metadata"]["name"]): c for c in by_kind(resources, "PersistentVolumeClaim")
    }
    assert plan.storage.hot is not None
    for tenant in model.tenants:
        hot = volumes[f"atlas-hot-{tenant.name}"]["spec"]
        assert hot["csi"]["driver"] == "fsx.csi.aws.com"
        assert set(hot["csi"]["volumeAttributes"]) == {"dnsname", "mountname"}
        for tier in ("warm", "cold"):
            spec = volumes[f"atlas-{tier}-{tenant.name}"]["spec"]
            assert spec["csi"]["driver"] == "s3.csi.aws.com"
            assert f"prefix {tenant.name}/" in spec["mountOptions"]
            assert ("allow-delete" in spec["mountOptions"]) == (tier == "warm")
        for tier in ("hot", "warm", "cold"):
            claim = claims[(tenant.name, tier)]["spec"]
            assert claim["volumeName"] == f"atlas-{tier}-{tenant.name}"
            assert volumes[claim["volumeName"]]["spec"]["claimRef"] == {"namespace": tenant.name, "name": tier}


def test_every_volume_has_its_own_handle() -> None:
    """Two PVs with one volumeHandle are one volume to Kubernetes: the second's pods never start."""
    for which in STACKS:
        volumes = by_kind(recorded(which)[2], "PersistentVolume")
        handles = [v["spec"]["csi"]["volumeHandle"] for v in volumes]  # FSx and S3 alike
        assert len(handles) == len(set(handles)), which
        assert len(volumes) > 3 * len(recorded(which)[0].tenants)  # every tier's, and the roots


@pytest.mark.parametrize("which", STACKS)
def test_a_tenants_hot_volume_mounts_only_its_own_directory(which: str) -> None:
    model, plan, resources = recorded(which)
    volumes = _named(by_kind(resources, "PersistentVolume"))
    file_systems = {
        "critical": (AWS_REFS["file_system_id"], AWS_REFS["dns_name"], AWS_REFS["mount_name"]),
        "standard": (
            AWS_REFS["standard_file_system_id"],
            AWS_REFS["standard_dns_name"],
            AWS_REFS["standard_mount_name"],
        ),
    }
    assert plan.storage.hot is not None
    for tenant in model.tenants:
        which_fs = "standard" if tenant.name in plan.storage.hot.standard_tenants else "critical"
        assert (which_fs == "critical") == (tenant.priority in ("high", "critical"))
        fs_id, dns, mount = file_systems[which_fs]
        csi = volumes[f"atlas-hot-{tenant.name}"]["spec"]["csi"]
        assert csi["volumeHandle"] == f"{fs_id}::{tenant.name}"
        assert csi["volumeAttributes"] == {"dnsname": dns, "mountname": f"{mount}/{tenant.name}"}
    # Only the root volumes in kube-system (for the directory Jobs) mount a file system's root.
    roots = {
        n: v["spec"]
        for n, v in volumes.items()
        if v["spec"]["csi"]["volumeAttributes"].get("mountname")
        in (AWS_REFS["mount_name"], AWS_REFS["standard_mount_name"])
    }
    assert all(spec["claimRef"]["namespace"] == "kube-system" for spec in roots.values())
    assert all(spec["csi"]["volumeHandle"].endswith("::/") for spec in roots.values())
    assert set(roots) <= {"atlas-fsx-root", "atlas-fsx-standard-root"}


def test_a_job_creates_each_tenants_directory_before_its_volume() -> None:
    model, plan, resources = recorded("prod")
    jobs = {r.inputs["metadata"]["name"]: r for r in resources if r.inputs.get("kind") == "Job"}
    assert plan.storage.hot is not None
    for tenant in model.tenants:
        job = jobs[f"atlas-hot-dir-{tenant.name}"]
        assert job.inputs["metadata"]["namespace"] == "kube-system"
        pod = job.inputs["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        assert container["command"][-1] == tenant.name
        assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
        root = "atlas-fsx-standard-root" if tenant.name in plan.storage.hot.standard_tenants else "atlas-fsx-root"
        assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == root
        pv = next(r for r in resources if r.name == f"atlas-storage-classes-pv-hot-{tenant.name}")
        assert job.urn in pv.options["dependsOn"]
        assert job.options["deleteBeforeReplace"] is True


def test_directory_job_names_stay_label_values() -> None:
    name = directory_job_name("atlas", "t" * 63)
    assert len(name) <= 63 and name != directory_job_name("atlas", "t" * 62 + "u")
    assert directory_job_name("atlas", "research") == "atlas-hot-dir-research"


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
    # The operator's own monitor is off: exactly one scrapes the exporter.
    monitors = by_kind(resources, "ServiceMonitor")
    (monitor,) = [m for m in monitors if "nvidia-dcgm-exporter" in str(m["spec"]["selector"])]
    endpoint = monitor["spec"]["endpoints"][0]
    assert endpoint["honorLabels"] is True
    assert monitor["spec"]["attachMetadata"] == {"node": True}
    assert {
        "sourceLabels": ["__meta_kubernetes_node_label_gpuplat_dev_pool"],
        "targetLabel": "pool",
        "action": "replace",
    } in endpoint["relabelings"]
    (rule,) = [r for r in by_kind(resources, "PrometheusRule") if r["metadata"]["name"].endswith("-gpu-utilization")]
    rules, alerts = (g["rules"] for g in rule["spec"]["groups"])
    window = model.autoscaling.window
    records = [r for r in rules if r["record"] == f"pool:gpu_utilization:ratio_avg_{window}"]
    pools = sorted(model.pools, key=lambda p: p.name)  # by name: the spec's order means nothing
    assert [r["labels"]["pool"] for r in records] == [p.name for p in pools]
    for record, pool in zip(records, pools, strict=True):
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
    model = recorded(which)[0]
    spec = _values(which, "kube-prometheus-stack")["prometheus"]["prometheusSpec"]
    assert spec["retention"] == model.observability.retention
    for key in ("serviceMonitor", "podMonitor", "rule"):
        assert spec[f"{key}SelectorNilUsesHelmValues"] is False


@pytest.mark.parametrize("which", SPECS)
def test_prometheus_keeps_its_retention_on_a_persistent_volume(which: str) -> None:
    model, _, resources = recorded(which)
    spec = _values(which, "kube-prometheus-stack")["prometheus"]["prometheusSpec"]
    claim = spec["storageSpec"]["volumeClaimTemplate"]["spec"]
    assert "emptyDir" not in spec["storageSpec"]
    assert claim["accessModes"] == ["ReadWriteOnce"]
    gib = int(claim["resources"]["requests"]["storage"].removesuffix("Gi"))
    assert gib == prometheus_volume_gib(model) >= 20
    assert int(spec["retentionSize"].removesuffix("GB")) < gib  # Prometheus trims before the disk fills
    classes = _named(by_kind(resources, "StorageClass"))
    if which == "kubernetes":
        assert "storageClassName" not in claim  # the cluster's default class
        return
    gp3 = classes[claim["storageClassName"]]
    assert gp3["provisioner"] == "ebs.csi.aws.com"
    assert gp3["parameters"]["type"] == "gp3" and gp3["parameters"]["encrypted"] == "true"
    assert gp3["volumeBindingMode"] == "WaitForFirstConsumer"


def test_prometheus_volume_grows_with_retention_and_fleet() -> None:
    model = recorded("prod")[0]
    longer = dataclasses.replace(model, observability=dataclasses.replace(model.observability, retention="60d"))
    assert prometheus_volume_gib(longer) > prometheus_volume_gib(model)
    # 30 d, 58 pool nodes + 4: (50k + 5k x 62) series / 30 s x 2592000 s x 2 B x 1.5 = 87 GiB.
    assert prometheus_volume_gib(model) == 87


@pytest.mark.parametrize("which", SPECS)
def test_every_release_is_pinned_from_the_catalog(which: str) -> None:
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


@pytest.mark.parametrize("name", ["monitoring", "kube-system", "atlas-system"])
def test_a_tenant_cannot_take_a_namespace_someone_else_owns(name: str) -> None:
    model, plan, _ = recorded("dev")
    clash = dataclasses.replace(model, tenants=(dataclasses.replace(model.tenants[0], name=name),))
    with pytest.raises(ValueError, match="namespace"):
        record_side(clash, plan)


def test_without_queueing_no_kueue_is_installed() -> None:
    model, plan, _ = recorded("dev")
    plain = dataclasses.replace(model, scheduling=dataclasses.replace(model.scheduling, queueing="none"))
    resources = tuple(record_side(plain, plan))
    assert "kueue" not in releases(resources)
    assert not [r for r in resources if str(r.inputs.get("apiVersion", "")).startswith("kueue.x-k8s.io/")]


# ------------------------------------------------------------------------------ GPU health


@pytest.mark.parametrize("which", SPECS)
def test_a_faulting_gpu_raises_an_alert_naming_its_node(which: str) -> None:
    model, _, resources = recorded(which)
    (rule,) = [r for r in by_kind(resources, "PrometheusRule") if r["metadata"]["name"].endswith("-gpu-health")]
    assert rule["metadata"]["name"] == f"{model.metadata.name}-gpu-health"
    assert rule["metadata"]["namespace"] == MONITORING_NAMESPACE  # where Prometheus looks (Observability)
    alerts = {a["alert"]: a for group in rule["spec"]["groups"] for a in group["rules"]}
    assert set(alerts) == {"GpuFatalXid", "GpuRowRemapFailure", "GpuUncorrectableRowsRemapped",
                           "GpuDoubleBitEccErrors", "GpuNvlinkRecoveryErrors", "GpuNvlinkCorrectedErrors"}
    for alert in alerts.values():
        # Aggregated per node and GPU: the alert tells the on-call which node to fence.
        assert "by (node, pool, gpu)" in alert["expr"]
        assert "{{ $labels.node }}" in alert["annotations"]["summary"]
    # A GPU that fell off the bus (XID 79) is fatal; an application's own fault (XID 13, 43) is not.
    fatal = {int(code) for code in re.findall(r"DCGM_FI_DEV_XID_ERRORS == (\d+)", alerts["GpuFatalXid"]["expr"])}
    assert {48, 79, 95} <= fatal and not {13, 43} & fatal
    assert alerts["GpuFatalXid"]["labels"]["severity"] == "critical"
