"""The e2e suite's own logic, checked without the binaries it drives (those run in `make e2e`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from e2e import jobs, karpenter, kueue
from e2e.stack import Stack, Target
from e2e.tools import build

TOOLS = Path(__file__).resolve().parent.parent / "e2e" / "tools"


def test_every_tool_set_names_its_pinned_version() -> None:
    versions = {t.name: t.version() for t in build.TOOL_SETS}
    assert versions["kueue"] == "v0.19.2"  # the version the platform installs (catalog chart)
    assert versions["karpenter"] == "v1.14.1"
    assert all(re.fullmatch(r"v\d+\.\d+\.\d+", v) for v in versions.values()), versions


def test_kubernetes_staging_modules_are_replaced_by_the_matching_release() -> None:
    gomod = (TOOLS / "kubernetes" / "go.mod").read_text()
    version = re.search(r"^\s*(?:require )?k8s.io/kubernetes (v1\.(\d+)\.(\d+))", gomod, re.M)
    assert version is not None
    replaced = re.findall(r"^\t(k8s\.io/[\w.-]+) => \1 (\S+)$", gomod, re.M)
    assert len(replaced) > 20  # every staging module, not a hand-picked few
    assert {v for _, v in replaced} == {f"v0.{version.group(2)}.{version.group(3)}"}


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
               "manageJobsWithoutQueueName": True}
    local = kueue.local_configuration(emitted, 1234, 1235, tmp_path)
    for key in ("resources", "waitForPodsReady", "integrations", "manageJobsWithoutQueueName"):
        assert local[key] == emitted[key]
    assert local["webhook"] == {"host": "127.0.0.1", "port": 1234, "certDir": str(tmp_path)}
    assert local["internalCertManagement"] == {"enable": False}


def test_the_reference_job_asks_only_for_the_pool_and_its_unit() -> None:
    job = jobs.reference_job("research", "infer", "nvidia.com/mig-1g.10gb")
    pod = job["spec"]["template"]["spec"]
    assert job["metadata"]["namespace"] == "research"
    assert job["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "default"}
    assert pod["nodeSelector"] == {"gpuplat.dev/pool": "infer"}
    assert "tolerations" not in pod  # Kueue's flavor adds what the pool's nodes need
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/mig-1g.10gb": "1"}
    assert len(job["metadata"]["name"]) <= 63
