"""The e2e suite's own logic, checked without the binaries it drives (those run in `make e2e`)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

from e2e import contention, hami, jobs, karpenter, kueue, mutations, quota, topology
from e2e import floor as floor_
from e2e.stack import Stack, Target
from e2e.tools import build

TOOLS = Path(__file__).resolve().parent.parent / "e2e" / "tools"


def test_every_tool_set_names_its_pinned_version() -> None:
    versions = {t.name: t.release or t.version() for t in build.TOOL_SETS}
    assert versions["kueue"] == "v0.19.2"  # the version the platform installs (catalog chart)
    assert versions["karpenter"] == "v1.15.0"
    assert all(re.fullmatch(r"v?\d+\.\d+\.\d+", v) for v in versions.values()), versions


def _locked(package: str) -> tuple[int, ...]:
    lock = (TOOLS.parent.parent / "requirements-dev.lock").read_text()
    found = re.search(rf"^{re.escape(package)}==([\d.]+)", lock, re.M)
    assert found is not None
    return tuple(int(p) for p in found.group(1).split("."))


def test_the_pulumi_cli_is_not_older_than_the_sdk_the_program_runs_with() -> None:
    # The CLI must understand every request the locked SDK makes; a newer CLI does (the engine
    # keeps old SDKs working), an older one need not.
    (cli,) = [t for t in build.TOOL_SETS if t.name == "pulumi"]
    assert tuple(int(p) for p in cli.version().removeprefix("v").split(".")) >= _locked("pulumi")
    assert "github.com/pulumi/pulumi/sdk/v3/go/common/version.Version" in cli.ldflags()
    assert cli.version() in cli.ldflags()  # the Automation API reads the CLI's version


def test_the_kubernetes_provider_is_stamped_with_its_release_not_the_pseudo_version() -> None:
    (provider,) = [t for t in build.TOOL_SETS if t.name == "pulumi-kubernetes"]
    assert provider.version().startswith("v4.0.0-")  # the only form the proxy serves it in
    assert f"version.Version={provider.release} " in provider.ldflags() + " "
    assert {Path(e).name for e in provider.embeds} == {"schema.json", "terraform-mapping.json"}


def test_each_minor_s_control_plane_pins_a_release_of_that_minor_and_its_staging_modules() -> None:
    planes = [t for t in build.TOOL_SETS if t.module == build.KUBERNETES]
    assert sorted(t.name for t in planes) == sorted(p.name for p in TOOLS.glob("kubernetes-*"))
    assert [t.name for t in planes] == [f"kubernetes-{m}" for m in build.KUBERNETES_MINORS]
    for minor in build.KUBERNETES_MINORS:
        gomod = (TOOLS / f"kubernetes-{minor}" / "go.mod").read_text()
        version = re.search(r"^\s*(?:require )?k8s.io/kubernetes (v1\.(\d+)\.(\d+))", gomod, re.M)
        assert version is not None and f"1.{version.group(2)}" == minor
        replaced = re.findall(r"^\t(k8s\.io/[\w.-]+) => \1 (\S+)$", gomod, re.M)
        assert len(replaced) > 20  # every staging module, not a hand-picked few
        assert {v for _, v in replaced} == {f"v0.{version.group(2)}.{version.group(3)}"}


def test_every_shipped_target_runs_on_a_built_minor_in_eks_standard_support() -> None:
    """The suite builds a control plane per minor a shipped stack targets (at most two), and the
    shipped examples are on minors EKS supports at the standard rate, with a pinned node AMI."""
    from ruamel.yaml import YAML

    from e2e.suite import DEPLOY_TARGETS, TARGETS
    from gpuplat.catalog.eks import NODE_AMI_ALIASES, support_phase
    from gpuplat.scaffold import kubernetes_version

    root = TOOLS.parent.parent
    specs = {t.spec or root / "platform" / "platform.yaml" for t in (*TARGETS, *DEPLOY_TARGETS)}
    minors = {str(YAML(typ="safe").load(path.read_text())["target"]["kubernetesVersion"]) for path in specs}
    minors.add(kubernetes_version())  # the project `gpuplat init` writes (target init-kubernetes-pulumi)
    assert minors == set(build.KUBERNETES_MINORS) and len(minors) <= 2
    for minor in minors:
        assert support_phase(minor) == "standard" and minor in NODE_AMI_ALIASES
    for overlay in (root / "stacks").glob("*.yaml"):
        assert "kubernetesVersion" not in overlay.read_text()  # the stacks keep the base's minor


def test_a_stack_runs_on_the_minor_its_cluster_or_spec_names() -> None:
    eks = {"type": "aws:eks/cluster:Cluster", "inputs": {"version": "1.36"}}
    assert Stack(Target("a"), [eks], {"kubernetes": {"version": "1.36"}}, []).kubernetes_minor == "1.36"
    assert Stack(Target("k"), [], {"kubernetes": {"version": "1.35"}}, []).kubernetes_minor == "1.35"


def test_every_minor_gets_the_common_tools_and_its_own_control_plane(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("GPUPLAT_E2E_CACHE", str(tmp_path))
    for tool_set in build.TOOL_SETS:
        (build.set_dir(tool_set) / "bin").mkdir(parents=True)
        names = list(build.KUBERNETES_TOOLS) if tool_set.module == build.KUBERNETES else [tool_set.name]
        (build.set_dir(tool_set) / "manifest.json").write_text(json.dumps({"binaries": names}))
    toolbox = build.binaries()
    assert set(toolbox) == set(build.KUBERNETES_MINORS)
    for minor, tools in toolbox.items():
        assert tools["kube-apiserver"].parent.parent.name.startswith(f"kubernetes-{minor}-")
        assert tools["kubectl"].parent.parent.name.startswith(f"kubernetes-{minor}-")
        assert tools["kueue"].parent.parent.name.startswith("kueue-")


def test_the_cache_key_follows_the_pins(tmp_path: Path, monkeypatch: Any) -> None:
    tool_set = build.ToolSet("etcd", "go.etcd.io/etcd/server/v3", {".": "etcd"})
    key = tool_set.key()
    assert key == tool_set.key()
    copy = tmp_path / "etcd"
    copy.mkdir()
    for path in (TOOLS / "etcd").iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    monkeypatch.setattr(build, "HERE", tmp_path)
    assert tool_set.key() == key  # the same files give the same key wherever the clone is
    (copy / "go.mod").write_text((copy / "go.mod").read_text().replace("v3.6.17", "v3.6.16"))
    assert tool_set.key() != key


def _stack(resources: list[dict[str, Any]], plan: dict[str, Any]) -> Stack:
    return Stack(Target("t"), resources, plan, [])


def _nodepool(name: str, instance: str, market: str, zones: list[str]) -> dict[str, Any]:
    requirements = [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [instance]},
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [market]},
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": zones}]
    return {"type": "kubernetes:karpenter.sh/v1:NodePool",
            "inputs": {"metadata": {"name": name}, "spec": {"template": {"metadata": {"labels": {}},
                                                                        "spec": {"requirements": requirements}}}}}


def test_instance_types_come_from_the_catalog_with_reservations_sized_by_the_plan() -> None:
    plan = {"pools": [{"name": "train", "instanceType": "p5.48xlarge",
                       "markets": {"reserved": {"nodes": 3}, "spot": {"nodes": 2}, "onDemand": {"nodes": 1}}}]}
    stack = _stack([_nodepool("train-reserved", "p5.48xlarge", "reserved", ["us-east-1a"])], plan)
    (p5,) = karpenter.instance_types(stack)
    assert p5["resources"]["nvidia.com/gpu"] == "8" and p5["resources"]["vpc.amazonaws.com/efa"] == "32"
    reserved = [o for o in p5["offerings"] if o["Requirements"][0]["values"] == ["reserved"]]
    assert [o["ReservationCapacity"] for o in reserved] == [3]
    keys = {r["key"] for r in reserved[0]["Requirements"]}
    assert karpenter.RESERVATION_LABEL in keys


def test_kueue_runs_with_the_emitted_configuration_except_where_it_listens(tmp_path: Path) -> None:
    emitted = {"resources": {"quotaCheckStrategy": "IgnoreUndeclared"}, "waitForPodsReady": {"enable": True},
               "integrations": {"frameworks": ["batch/job"]}, "webhook": {"port": 9443},
               "manageJobsWithoutQueueName": True,
               "metrics": {"bindAddress": ":8443", "enableClusterQueueResources": True}}
    local = kueue.local_configuration(emitted, 1234, 1235, tmp_path, 1236)
    for key in ("resources", "waitForPodsReady", "integrations", "manageJobsWithoutQueueName"):
        assert local[key] == emitted[key]
    assert local["webhook"] == {"host": "127.0.0.1", "port": 1234, "certDir": str(tmp_path)}
    assert local["internalCertManagement"] == {"enable": False}
    # Metrics on loopback (e2e/kueue_metrics.py forwards the pod's address there), as configured otherwise.
    assert local["metrics"] == {"bindAddress": "127.0.0.1:1236", "enableClusterQueueResources": True}


def test_the_reference_job_asks_only_for_the_pool_and_its_unit() -> None:
    job = jobs.reference_job("research", "infer", "nvidia.com/mig-1g.10gb")
    pod = job["spec"]["template"]["spec"]
    assert job["metadata"]["namespace"] == "research"
    assert job["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "default"}
    assert pod["nodeSelector"] == {"gpuplat.dev/pool": "infer"}
    assert "tolerations" not in pod  # Kueue's flavor adds what the pool's nodes need
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/mig-1g.10gb": "1"}
    assert len(job["metadata"]["name"]) <= 63


def test_stand_in_charts_carry_the_catalog_version_and_only_the_upstream_crds(tmp_path: Path) -> None:
    from ruamel.yaml import YAML

    from e2e.engine import stand_in_charts
    from gpuplat.catalog.charts import CHARTS

    charts = stand_in_charts(tmp_path)
    yaml = YAML(typ="safe")
    for key, chart in CHARTS.items():
        meta = yaml.load((charts / key / "Chart.yaml").read_text())
        assert (meta["name"], meta["version"]) == (chart.chart, chart.version.removeprefix("v"))
        assert list((charts / key / "templates").iterdir()) == []  # nothing but CRDs is installed
    kueue_crds = list(yaml.load_all((charts / "kueue" / "crds" / "crds.yaml").read_text()))
    assert {c["kind"] for c in kueue_crds} == {"CustomResourceDefinition"}
    assert "clusterqueues.kueue.x-k8s.io" in {c["metadata"]["name"] for c in kueue_crds}
    assert not (charts / "hami" / "crds").exists()


def _recorded(urn: str, type_: str, inputs: dict[str, Any], parent: str | None = "urn:p") -> dict[str, Any]:
    return {"urn": urn, "type": type_, "parent": parent, "custom": True, "inputs": inputs}


def test_the_real_preview_may_add_defaults_but_not_lose_or_change_a_recorded_input() -> None:
    from e2e.deploy import compare_preview

    recorded = [
        _recorded("urn:ns", "kubernetes:core/v1:Namespace", {"metadata": {"name": "a", "labels": {"x": "1"}}}),
        _recorded("urn:rel", "kubernetes:helm.sh/v3:Release",
                  {"chart": "keda", "repositoryOpts": {"repo": "https://kedacore.github.io/charts"},
                   "version": "2.20.2"}),
    ]
    same = [
        {"op": "create", "urn": "urn:ns", "newState": {
            "type": "kubernetes:core/v1:Namespace", "parent": "urn:p",
            "inputs": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a", "labels": {"x": "1"}}}}},
        {"op": "create", "urn": "urn:rel", "newState": {
            "type": "kubernetes:helm.sh/v3:Release", "parent": "urn:p",
            "inputs": {"chart": "/tmp/charts/keda", "version": "2.20.2", "timeout": 300}}},
    ]
    assert compare_preview(recorded, same) == []
    relabelled = {"metadata": {"name": "a", "labels": {"x": "2"}}}
    changed = [dict(same[0], newState={**same[0]["newState"], "inputs": relabelled}), dict(same[1], urn="urn:other")]
    problems = compare_preview(recorded, changed)
    assert any("metadata.labels.x" in p for p in problems)
    assert any("only the recording has urn:rel" in p for p in problems)
    assert any("only the real engine plans urn:other" in p for p in problems)


def test_replacement_steps_count_as_one_replace() -> None:
    from e2e.edits import real_changes

    steps = [{"op": "same", "urn": "a"}, {"op": "create-replacement", "urn": "b"}, {"op": "replace", "urn": "b"},
             {"op": "delete-replaced", "urn": "b"}, {"op": "update", "urn": "c"}, {"op": "delete", "urn": "d"}]
    assert real_changes(steps) == {"b": "replace", "c": "update", "d": "delete"}


def test_policy_violations_and_the_rules_that_ran_come_from_the_engines_event_log(tmp_path: Path) -> None:
    import json

    from e2e.deploy import policy_events

    log = tmp_path / "events.jsonl"
    events = [{"sequence": 1, "policyAnalyzeSummaryEvent": {"resourceUrn": "u1", "passed": ["no-helm-v4-chart"],
                                                            "failed": ["karpenter-gpu-limit"]}},
              {"sequence": 2, "policyEvent": {"resourceUrn": "u1", "policyName": "karpenter-gpu-limit",
                                              "message": "m", "enforcementLevel": "mandatory"}},
              {"sequence": 3, "summaryEvent": {}}]
    log.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    assert policy_events(log) == ({("karpenter-gpu-limit", "u1")}, {"no-helm-v4-chart", "karpenter-gpu-limit"})
    assert policy_events(tmp_path / "absent.jsonl") == (set(), set())


def _queue(tenant: str, flavors: dict[str, dict[str, int]], cohort: str = "c", **preemption: str) -> dict[str, Any]:
    entries = [{"name": f, "resources": [{"name": "nvidia.com/gpu", **q}]} for f, q in flavors.items()]
    selector = {"matchLabels": {"kubernetes.io/metadata.name": tenant}}
    return {"metadata": {"name": f"cq-{tenant}"},
            "spec": {"cohortName": cohort, "namespaceSelector": selector, "preemption": preemption,
                     "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": entries}]}}


def _flavor(name: str, pool: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"nodeLabels": {"gpuplat.dev/pool": pool,
                                                                "karpenter.sh/capacity-type": name}, **spec}}


def test_a_job_can_hold_one_flavor_at_most_not_the_sum_of_the_pool_s_flavors() -> None:
    # Kueue gives a pod set one flavor: 3 nominal + 2 borrowed in either, never 10 in both.
    hard = _queue("hard", {"spot": {"nominalQuota": 8, "lendingLimit": 0}, "on-demand": {"nominalQuota": 8}})
    soft = _queue("soft", {"spot": {"nominalQuota": 3, "borrowingLimit": 5},
                           "on-demand": {"nominalQuota": 3, "borrowingLimit": 2}})
    flavors = [_flavor("spot", "train"), _flavor("on-demand", "train")]
    assert quota.ceiling([hard, soft], soft, "spot", "nvidia.com/gpu") == 3  # the hard owner lends none
    assert quota.ceiling([hard, soft], soft, "on-demand", "nvidia.com/gpu") == 5  # borrowingLimit 2 < 8 lent
    assert quota.pool_ceiling([hard, soft], soft, flavors, "train", "nvidia.com/gpu") == 5
    assert quota.pool_ceiling([hard, soft], soft, flavors, "infer", "nvidia.com/gpu") is None
    # No borrowingLimit: all the cohort lends; no cohort: nothing to borrow.
    unbounded = _queue("soft", {"on-demand": {"nominalQuota": 3}})
    assert quota.ceiling([hard, unbounded], unbounded, "on-demand", "nvidia.com/gpu") == 11
    alone = _queue("alone", {"on-demand": {"nominalQuota": 3, "borrowingLimit": 9}}, cohort="")
    assert quota.ceiling([hard, alone], alone, "on-demand", "nvidia.com/gpu") == 3


def test_the_borrowing_scenario_prefers_a_tenant_its_borrowing_limit_stops() -> None:
    lender = _queue("lender", {"od": {"nominalQuota": 10}, "spot": {"nominalQuota": 10}})
    borrower = _queue("borrower", {"od": {"nominalQuota": 2, "borrowingLimit": 20},
                                   "spot": {"nominalQuota": 4, "borrowingLimit": 3}})
    slots = quota.slots([lender, borrower], [_flavor("od", "p"), _flavor("spot", "p")])
    chosen = quota.borrowing_slot(slots)
    assert chosen is not None and (chosen.tenant, chosen.flavor, chosen.ceiling) == ("borrower", "spot", 7)
    # A flavor with a Topology takes only jobs asking for a placement: not used for quota scenarios.
    tas = quota.slots([lender, borrower], [_flavor("od", "p", topologyName="fabric"), _flavor("spot", "p")])
    assert {s.flavor for s in tas} == {"spot"}


def test_reclaim_needs_a_lender_whose_loan_no_third_queue_covers() -> None:
    owner = _queue("owner", {"od": {"nominalQuota": 4}}, reclaimWithinCohort="Any")
    guest = _queue("guest", {"od": {"nominalQuota": 2, "borrowingLimit": 3}})
    flavors = [_flavor("od", "p")]
    pair = quota.reclaim_pair(quota.slots([owner, guest], flavors))
    assert pair is not None and (pair.borrower.tenant, pair.lender.tenant, pair.policy) == ("guest", "owner", "Any")
    # A third queue lending 3 covers the guest's loan: the owner's claim fits without reclaiming
    # (the owner itself borrows nothing here, or it would be a borrower the guest reclaims from).
    owner = _queue("owner", {"od": {"nominalQuota": 4, "borrowingLimit": 0}}, reclaimWithinCohort="Any")
    third = _queue("third", {"od": {"nominalQuota": 3, "borrowingLimit": 0}})
    assert quota.reclaim_pair(quota.slots([owner, guest, third], flavors)) is None
    # A hard owner lends nothing, so nothing of it is reclaimed: it is the one that borrows.
    hard = _queue("owner", {"od": {"nominalQuota": 4, "lendingLimit": 0}})
    pair = quota.reclaim_pair(quota.slots([hard, guest], flavors))
    assert pair is not None
    assert (pair.borrower.tenant, pair.borrower.borrow, pair.lender.tenant) == ("owner", 2, "guest")


def test_preemption_is_predicted_from_the_emitted_policies() -> None:
    assert quota.reclaim_expected("Any", 100, 0)
    assert not quota.reclaim_expected("LowerPriority", 0, 0) and quota.reclaim_expected("LowerPriority", 0, 1)
    assert not quota.reclaim_expected("Never", 0, 100)
    queue = _queue("t", {"od": {"nominalQuota": 1}}, withinClusterQueue="LowerPriority")
    assert quota.within_queue_expected(queue, 0, 10000) and not quota.within_queue_expected(queue, 10, 10)
    assert not quota.within_queue_expected(_queue("t", {"od": {"nominalQuota": 1}}), 0, 10000)


def test_contending_work_is_pinned_to_its_flavor_by_the_flavor_s_own_labels() -> None:
    owner = _queue("owner", {"spot": {"nominalQuota": 4}})
    (slot,) = quota.slots([owner], [_flavor("spot", "train")])
    pod = contention.holder_pod(slot, 4, "holder", "x-standard")
    assert pod["kind"] == "Pod" and pod["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "default"}
    assert pod["spec"]["nodeSelector"] == {"gpuplat.dev/pool": "train", "karpenter.sh/capacity-type": "spot"}
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "4"}
    assert pod["spec"]["priorityClassName"] == "x-standard"
    job = contention.pinned_job(slot, 3, "claim")
    assert job["spec"]["parallelism"] == 3 and "tolerations" not in job["spec"]["template"]["spec"]
    assert job["spec"]["template"]["spec"]["nodeSelector"] == pod["spec"]["nodeSelector"]


def test_the_floor_moves_between_keda_s_bounds() -> None:
    def floor(name: str, replicas: int) -> dict[str, Any]:
        return {"type": "kubernetes:apps/v1:Deployment",
                "inputs": {"metadata": {"name": name, "labels": {"gpuplat.dev/pool": name[15:]}},
                           "spec": {"replicas": replicas}}}

    def scaled(name: str, low: int, high: int) -> dict[str, Any]:
        return {"type": floor_.SCALED_OBJECT, "inputs": {"spec": {"scaleTargetRef": {"name": name},
                                                                  "minReplicaCount": low, "maxReplicaCount": high}}}

    stack = _stack([floor("capacity-floor-train", 1), scaled("capacity-floor-train", 1, 3),
                    floor("capacity-floor-fixed", 2), scaled("capacity-floor-fixed", 2, 2),
                    floor("capacity-floor-none", 0)], {"pools": []})
    assert [(d["metadata"]["name"], low, high) for d, low, high in floor_.floors(stack)] == [
        ("capacity-floor-train", 1, 3)]  # a floor KEDA cannot move, or without a ScaledObject, is not scaled


def test_the_topology_only_predictions_come_from_verify_s_own_words() -> None:
    def journey(pool: str, detail: str) -> dict[str, Any]:
        return {"tenant": "t", "pool": pool, "resource": "nvidia.com/gpu",
                "steps": [{"step": "topology", "ok": True, "detail": detail}]}

    stack = Stack(Target("t"), [], {}, [journey("a", f"... ClusterQueue q {topology.IMPLIED}, so ..."),
                                        journey("b", f'... waits ("Flavor f {topology.REFUSED}")'),
                                        {"tenant": "t", "pool": "c", "resource": "x", "steps": []}])
    assert topology.predictions(stack) == {("t", "a", "nvidia.com/gpu"): True, ("t", "b", "nvidia.com/gpu"): False}


def test_the_old_hami_overlay_declares_memory_and_cores_no_device_plugin_registers() -> None:
    overlay = {"metadata": {"name": "frac-units"}, "spec": {"capacity": {"nvidia.com/gpu.fractional": "16"}}}
    old = hami.old_overlay(overlay, {"gpuModel": "L40S-48GB", "gpusPerNode": 4})
    memory = str(int(44.7 * 1024) * 4)  # the catalog's usable memory of an L40S, per node of 4
    assert old["spec"]["capacity"] == {"nvidia.com/gpu.fractional": "16", "nvidia.com/gpumem": memory,
                                       "nvidia.com/gpucores": "400"}
    assert overlay["spec"]["capacity"] == {"nvidia.com/gpu.fractional": "16"}  # the emitted one untouched
    job = hami.hami_job("apps", "frac")
    limits = job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert set(limits) == {"nvidia.com/gpu.fractional", "nvidia.com/gpumem", "nvidia.com/gpucores"}


def test_a_zero_number_the_provider_drops_is_a_difference_a_false_flag_is_not() -> None:
    from e2e.deploy import input_differences

    assert input_differences({"spec": {"globalDefault": False, "name": ""}}, {"spec": {}}) == []
    assert input_differences({"spec": {"replicas": 0}}, {"spec": {}}) != []


def _breakable_stack() -> Stack:
    from components.kubernetes.pod_security import validations

    config = "resources:\n  quotaCheckStrategy: IgnoreUndeclared\nmanageJobsWithoutQueueName: true\n"
    release = {"name": "kueue", "values": {"managerConfig": {"controllerManagerConfigYaml": config}}}
    policy = {"kind": "ValidatingAdmissionPolicy", "metadata": {"name": "tenant-pod-security"},
              "spec": {"validations": [{"expression": e, "message": m} for e, m in validations("1.33")]}}
    gpu = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    spot_taint = {"key": "gpuplat.dev/spot", "value": "true", "effect": "NoSchedule"}
    spot = {"kind": "ResourceFlavor", "metadata": {"name": "x-frac-spot"},
            "spec": {"nodeLabels": {"gpuplat.dev/pool": "frac", "karpenter.sh/capacity-type": "spot"},
                     "nodeTaints": [spot_taint], "tolerations": [gpu, {**spot_taint, "operator": "Equal"}]}}
    resources = [{"type": "kubernetes:helm.sh/v3:Release", "inputs": release},
                 {"type": "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", "inputs": policy},
                 {"type": "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor", "inputs": spot}]
    return Stack(Target("t"), resources, {}, [])


def test_each_breaking_edit_changes_its_value_and_nothing_else() -> None:
    stack = _breakable_stack()
    before = copy.deepcopy(stack.resources)
    edits = {m.name: m.edit(stack) for m in mutations.MUTATIONS}
    assert stack.resources == before  # the recording itself is never edited

    index, release = edits["kueue-quota-check-strategy"] or (0, {})
    assert index == 0
    assert kueue.release_configuration(release) == {"resources": {}, "manageJobsWithoutQueueName": True}

    index, policy = edits["pod-security-ipc-lock"] or (0, {})
    assert index == 1
    edited = [v["expression"] for v in policy["spec"]["validations"]]
    original = [v["expression"] for v in before[1]["inputs"]["spec"]["validations"]]
    changed = [(a, b) for a, b in zip(original, edited, strict=True) if a != b]
    assert len(changed) == 1 and "'IPC_LOCK'" in changed[0][0] and "'IPC_LOCK'" not in changed[0][1]
    assert "'SYS_CHROOT'" in changed[0][1]  # the rest of baseline's list stays

    index, flavor = edits["spot-flavor-toleration"] or (0, {})
    assert index == 2
    assert flavor["spec"]["tolerations"] == [before[2]["inputs"]["spec"]["tolerations"][0]]  # the GPU one
    assert flavor["spec"]["nodeTaints"] == before[2]["inputs"]["spec"]["nodeTaints"]


def test_a_stack_that_emits_none_of_the_objects_gets_no_edit() -> None:
    stack = Stack(Target("t"), [{"type": "kubernetes:core/v1:Namespace", "inputs": {"metadata": {"name": "a"}}}],
                  {}, [])
    assert [m.edit(stack) for m in mutations.MUTATIONS] == [None] * len(mutations.MUTATIONS)


def test_kwok_keeps_a_node_not_ready_until_the_agents_booted_it(tmp_path: Path) -> None:
    import json

    from e2e import nodes
    from e2e.cluster import BOOTED, Cluster

    cluster = Cluster("c", tmp_path, {})
    tmp_path.mkdir(exist_ok=True)
    documents = cluster._kwokctl_configuration().read_text().split("\n---\n")  # pyright: ignore[reportPrivateUsage]
    config, *stages = [json.loads(d) for d in documents]
    assert config["kind"] == "KwokctlConfiguration" and [s["kind"] for s in stages] == ["Stage"] * 6
    args = {a["key"]: a for p in config["componentsPatches"] if p["name"] == "kwok-controller" for a in p["extraArgs"]}
    assert args["manage-all-nodes"] == {"key": "manage-all-nodes", "value": "false", "override": True}
    assert args["manage-nodes-with-label-selector"]["value"] == f"{BOOTED}=true"
    # Nodes the suite makes itself (system nodes, on-prem GPU nodes) exist booted, as on a cluster.
    assert nodes.node("system-0", {}, {"cpu": "8"})["metadata"]["labels"][BOOTED] == "true"


def test_nodes_carry_eks_network_node_labels_only_where_ec2_describes_their_topology() -> None:
    from e2e.suite import eks_topology_labels

    assert eks_topology_labels({"name": "train", "instanceType": "p5.48xlarge"}) == {
        f"topology.k8s.aws/network-node-layer-{i}": f"nn-{i}-train" for i in (1, 2, 3)
    }
    assert len(eks_topology_labels({"name": "b", "instanceType": "p6-b200.48xlarge"})) == 4
    assert eks_topology_labels({"name": "x", "instanceType": "g5.12xlarge"}) == {}
    assert eks_topology_labels({"name": "onprem", "instanceType": None}) == {}


def test_quota_scenarios_skip_ceilings_the_namespace_quota_refuses() -> None:
    """A soft tenant on a pool soft quotas oversubscribe: Kueue would let it borrow 54 units where
    the pool holds 48, and the namespace quota (the pool's capacity) refuses that pod first."""
    owner = _queue("owner", {"od": {"nominalQuota": 30}})
    borrower = _queue("borrower", {"od": {"nominalQuota": 12, "borrowingLimit": 54}})
    found = quota.slots([owner, borrower], [_flavor("od", "p")])
    rq = [{"metadata": {"namespace": "borrower"}, "spec": {"hard": {"requests.nvidia.com/gpu": "48"}}},
          {"metadata": {"namespace": "owner"}, "spec": {"hard": {"requests.nvidia.com/gpu": "30"}}}]
    assert {(s.tenant, s.ceiling) for s in found} == {("owner", 42), ("borrower", 42)}
    assert {s.tenant for s in quota.within_namespace_quota(found, rq)} == {"borrower"}


def test_the_emitted_namespace_quotas_name_their_namespace() -> None:
    from tests.support_verify import objects, recorded

    quotas = objects(recorded("dev")[2], "ResourceQuota")
    assert quotas and all(q["metadata"]["namespace"] and q["spec"]["hard"] for q in quotas)


def test_the_engines_refusals_are_read_in_both_of_its_wordings() -> None:
    """pulumi refuses a protected replace in the step generator's words and a protected delete in
    the delete step's (pkg/resource/deploy step.go), also inside --json output's escaped strings."""
    from e2e.edits import engine_refusals

    urn = "urn:pulumi:dev::p::gpuplat:index:Tenant$kubernetes:core/v1:Namespace::a-ns"
    deleted = f'error: resource "{urn}" cannot be deleted\nbecause it is protected.'
    replaced = f'{{"message": "unable to replace resource \\"{urn}x\\"\\nas it is currently marked"}}'
    assert engine_refusals(deleted + replaced) == {urn: "delete", f"{urn}x": "replace"}
