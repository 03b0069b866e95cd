"""A fleet (examples/fleet/): the manager's MultiKueue objects and queues, the workers' queues and
credentials, checked against Kueue's CRDs and the Kubernetes schema, and against the spec.

Expected values come from the spec (members' order, the workers' recorded ClusterQueues), not
from the fleet code under test."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from components.kubernetes.fleet_worker import manager_rules, worker_kubeconfig
from components.kubernetes.scheduling import FLEET_FRAMEWORKS, kueue_config
from gpuplat.compile import Sources, compile_sources
from gpuplat.model import Platform
from gpuplat.plan import Plan
from gpuplat.preview import RecordedResource, record_program
from tests.support_k8s import PROJECT, by_kind, crd_errors, is_custom_resource, kubernetes_objects

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "fleet"


@functools.cache
def compiled(member: str) -> tuple[Platform, Plan]:
    result = compile_sources(Sources(EXAMPLE / f"{member}.yaml", None))
    assert result.ok and result.model is not None and result.plan is not None, result.diagnostics
    return result.model, result.plan


@functools.cache
def recorded(member: str, stack: str | None = None) -> tuple[RecordedResource, ...]:
    model, plan = compiled(member)

    def program() -> None:
        import pulumi_kubernetes as k8s

        from components.kubernetes import AwsStorageRefs, build_kubernetes_side
        from tests.support_k8s import AWS_REFS

        provider = k8s.Provider("k8s")
        aws = model.target.provider.value == "aws"
        refs = AwsStorageRefs(**AWS_REFS) if aws else None
        server = "https://0123456789ABCDEF.gr7.us-east-1.eks.amazonaws.com" if aws else None
        build_kubernetes_side(None, model.metadata.name, model, plan, provider, storage=refs, api_server=server)

    return tuple(record_program(program, project=PROJECT, stack=stack or member))


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the members' `spec` paths are relative to the project


def _spec(member: str) -> dict[str, Any]:
    return yaml.safe_load((EXAMPLE / f"{member}.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("member", ["hub", "onprem", "cloud"])
def test_every_fleet_object_is_valid_for_kueue_and_kubernetes(member: str) -> None:
    model, _ = compiled(member)
    fleet_objects = [r for r in kubernetes_objects(recorded(member)) if "-fleet-" in r.name]
    assert fleet_objects
    for resource in fleet_objects:
        obj = dict(resource.inputs)
        if is_custom_resource(resource):
            assert crd_errors(obj) == [], resource.name
            continue
        if obj.get("stringData") == "<secret>":
            obj["stringData"] = {"kubeconfig": "the recording never shows it"}
        kubernetes_validate.validate(obj, model.target.kubernetes_version, strict=True)


def test_manager_dispatches_to_the_workers_in_the_specs_order() -> None:
    spec = _spec("hub")["fleet"]
    workers = [m["name"] for m in spec["members"] if m["name"] != spec["manager"]]
    (config,) = by_kind(recorded("hub"), "MultiKueueConfig")
    assert config["spec"]["clusters"] == [f"{spec['name']}-{w}" for w in workers]
    clusters = {c["metadata"]["name"]: c for c in by_kind(recorded("hub"), "MultiKueueCluster")}
    secrets = {
        s["metadata"]["name"]: s
        for s in by_kind(recorded("hub"), "Secret")
        if s["metadata"]["namespace"] == "kueue-system"
    }
    for name in config["spec"]["clusters"]:
        location = clusters[name]["spec"]["clusterSource"]["kubeConfig"]["location"]
        assert secrets[location]["stringData"] == "<secret>"  # read from the worker's stack, never shown
    (check,) = by_kind(recorded("hub"), "AdmissionCheck")
    assert check["spec"]["controllerName"] == "kueue.x-k8s.io/multikueue"
    assert check["spec"]["parameters"]["name"] == config["metadata"]["name"]


def test_manager_reads_each_worker_from_its_stack() -> None:
    refs = sorted(str(r.inputs["name"]) for r in recorded("hub") if r.type == "pulumi:pulumi:StackReference")
    assert refs == ["organization/gpu-platform/cloud", "organization/gpu-platform/onprem"]


def _nominal(cluster_queue: dict[str, Any], resource: str) -> int:
    return sum(
        int(q["nominalQuota"])
        for group in cluster_queue["spec"]["resourceGroups"]
        for flavor in group["flavors"]
        for q in flavor["resources"]
        if q["name"] == resource
    )


def test_manager_quota_is_the_sum_of_the_workers_queues() -> None:
    spec = _spec("hub")["fleet"]
    reach = {t["name"]: t["members"] for t in spec["tenants"]}
    manager_queues = {
        q["spec"]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]: q
        for q in by_kind(recorded("hub"), "ClusterQueue")
        if q.get("spec", {}).get("admissionChecksStrategy")
    }
    assert set(manager_queues) == set(reach)
    for tenant, workers in reach.items():
        expected = 0
        for worker in workers:
            model, _ = compiled(worker)
            own = [
                q
                for q in by_kind(recorded(worker), "ClusterQueue")
                if q["metadata"]["name"] == f"{model.metadata.name}-{tenant}"
            ]
            expected += _nominal(own[0], "nvidia.com/gpu")
        assert _nominal(manager_queues[tenant], "nvidia.com/gpu") == expected > 0


@pytest.mark.parametrize("worker", ["onprem", "cloud"])
def test_worker_feeds_the_fleet_queue_into_the_tenants_own_queue(worker: str) -> None:
    spec = _spec(worker)
    fleet = spec["fleet"]
    reach = {t["name"]: t["members"] for t in fleet["tenants"]}
    queues = {
        (q["metadata"]["namespace"], q["metadata"]["name"]): q["spec"]["clusterQueue"]
        for q in by_kind(recorded(worker), "LocalQueue")
    }
    for tenant in spec["tenants"]:
        key = (tenant["name"], fleet.get("queue", "fleet"))
        if worker in reach.get(tenant["name"], [worker]):
            assert queues[key] == queues[(tenant["name"], "default")]
        else:
            assert key not in queues


def test_worker_grants_the_manager_only_what_multikueue_uses() -> None:
    (role,) = [r for r in by_kind(recorded("onprem"), "ClusterRole") if r["metadata"]["name"].startswith("multikueue-")]
    granted = {
        (g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]
    }
    assert ("kueue.x-k8s.io", "workloads", "create") in granted
    assert ("batch", "jobs", "create") in granted
    assert not any("*" in item for item in granted)
    assert not any(r in ("secrets", "nodes", "clusterroles", "rolebindings") for _, r, _ in granted)
    assert len(role["rules"]) == len(manager_rules())


def test_worker_kubeconfig_names_one_cluster_user_and_context() -> None:
    text = worker_kubeconfig("atlas", "onprem", "https://api.example.com:6443", "Q0E=", "tok")
    config = yaml.safe_load(text)
    context = next(c for c in config["contexts"] if c["name"] == config["current-context"])["context"]
    cluster = next(c for c in config["clusters"] if c["name"] == context["cluster"])["cluster"]
    user = next(u for u in config["users"] if u["name"] == context["user"])["user"]
    assert (cluster["server"], user["token"]) == ("https://api.example.com:6443", "tok")


def test_only_the_manager_runs_the_incremental_dispatcher_one_worker_at_a_time() -> None:
    assert kueue_config(fleet_manager=True)["multiKueue"] == {
        "dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-incremental",
        "incrementalDispatcherConfig": {"stepSize": 1},
    }
    assert "multiKueue" not in kueue_config()


def test_the_manager_watches_on_workers_only_kinds_every_worker_serves_and_grants() -> None:
    # MultiKueue watches, on each worker, the kind of every framework the manager enables that has
    # an adapter; one kind the worker does not serve (no JobSet / Ray CRD) keeps it disconnected.
    enabled = set(kueue_config(fleet_manager=True)["integrations"]["frameworks"])
    assert enabled <= {"batch/job", "pod", "deployment", "statefulset"}  # served by every API server
    assert "ray.io/rayjob" in kueue_config()["integrations"]["frameworks"]  # a platform that is no manager keeps all
    (role,) = [r for r in by_kind(recorded("onprem"), "ClusterRole") if r["metadata"]["name"].startswith("multikueue-")]
    granted = {
        (g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]
    }
    for framework in enabled & set(FLEET_FRAMEWORKS):
        group, resource = FLEET_FRAMEWORKS[framework]
        assert {(group, resource, verb) for verb in ("create", "delete", "get", "list", "watch")} <= granted


def test_a_stack_that_is_no_member_is_refused() -> None:
    with pytest.raises(Exception, match="is not a member of fleet atlas"):
        recorded("onprem", stack="dev")


def test_rotation_is_an_edit_of_the_generation() -> None:
    (token,) = [
        s for s in by_kind(recorded("onprem"), "Secret") if s.get("type") == "kubernetes.io/service-account-token"
    ]
    assert token["metadata"]["name"].endswith(f"-token-{_spec('onprem')['fleet'].get('credentialGeneration', 0)}")


def test_plan_shows_members_order_reach_combined_quota_and_cost() -> None:
    from gpuplat.render.plan import plan_json, plan_text

    model, plan = compiled("hub")
    document = plan_json(model, plan)["clusterFleet"]
    spec = _spec("hub")["fleet"]
    assert [m["name"] for m in document["members"]] == [m["name"] for m in spec["members"]]
    assert [m["dispatchPosition"] for m in document["members"]] == [None, 1, 2]
    cloud_model, cloud_plan = compiled("cloud")
    assert cloud_plan.cost is not None
    assert document["members"][2]["monthlyUsd"] == cloud_plan.cost.total_monthly_usd
    research = next(t for t in document["tenants"] if t["name"] == "research")
    assert research["workers"] == ["onprem", "cloud"]
    onprem_research = next(t for t in compiled("onprem")[0].tenants if t.name == "research")
    cloud_research = next(t for t in cloud_model.tenants if t.name == "research")
    # every GPU of the two workers' research quotas is a whole GPU (exclusive pools)
    assert research["combinedQuota"] == {"nvidia.com/gpu": onprem_research.gpus + cloud_research.gpus}
    text = plan_text(model, plan)
    assert "Fleet atlas" in text and "onprem > cloud" in text


def test_comment_shows_the_fleet_delta_when_a_member_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from gpuplat.render.comment_fleet import fleet_section
    from gpuplat.render.plan import plan_json

    base_root = tmp_path / "base"
    shutil.copytree(EXAMPLE, base_root / "examples" / "fleet")
    onprem = base_root / "examples" / "fleet" / "onprem.yaml"
    onprem.write_text(
        onprem.read_text(encoding="utf-8").replace("name: research, gpus: 32", "name: research, gpus: 16")
    )
    monkeypatch.chdir(base_root)
    before = compile_sources(Sources(Path("examples/fleet/hub.yaml"), None))
    assert before.ok and before.model is not None and before.plan is not None, before.diagnostics
    base = plan_json(before.model, before.plan)
    monkeypatch.chdir(ROOT)
    head = plan_json(*compiled("hub"))
    section = fleet_section(head, base)
    assert section is not None and "changed by this pull request" in section
    assert "48 nvidia.com/gpu → 64 nvidia.com/gpu" in section
    assert fleet_section(head, head) is not None and "changed" not in str(fleet_section(head, head))
