"""The first week in a generated project's README, held to what the project emits.

- The tenant's first job is a valid Job whose namespace, LocalQueue, GPU resource, Pod Security
  level, LimitRange and ResourceQuota are the ones the recorded dev stack creates; the kubectl
  lines name that job and namespace.
- Tearing down dev names exactly what the components protect and retain, the EKS cluster by its
  physical name; its state edit clears retainOnDelete from an export of those resources; the AWS
  CLI calls it uses exist in the EKS API model.
- On an existing cluster: every Helm release a kubernetes stack installs is listed with its
  namespace, and the claim about `nodes.max` is the validator's (GP284).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from ruamel.yaml import YAML

from gpuplat.cli import main
from gpuplat.verify.k8s import quantity as parse_quantity
from tests.support_k8s import recorded

NAME, TEAM, POOL = "lab", "ml-platform", "gpu"
RELEASE = "kubernetes:helm.sh/v3:Release"


def quantity(value: Any) -> Decimal:
    parsed = parse_quantity(value)
    assert parsed is not None, value
    return parsed


def _blocks(readme: str, section: str, lang: str) -> list[str]:
    body = readme.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{lang}\n(.*?)```", body, re.S)


@pytest.fixture(scope="module", params=["aws", "kubernetes"])
def project(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A new project of each provider, its README, and its recorded dev stack."""
    provider: str = request.param
    root = tmp_path_factory.mktemp(provider) / NAME
    argv = [sys.executable, "-m", "gpuplat.cli", "init", str(root), "--provider", provider, "--gpuplat-from", "index"]
    argv += ["--region", "eu-west-1"] if provider == "aws" else []
    assert subprocess.run(argv, capture_output=True, text=True, check=False).returncode == 0
    preview = [sys.executable, "-m", "gpuplat.cli", "preview", "--stack", "dev", "--format", "json"]
    done = subprocess.run(preview, cwd=root, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    yield {
        "provider": provider,
        "root": root,
        "readme": (root / "README.md").read_text(),
        "resources": json.loads(done.stdout)["resources"],
    }


def _objects(resources: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r["inputs"] for r in resources if r["type"].startswith("kubernetes:") and r["inputs"].get("kind") == kind]


def _job(readme: str) -> dict[str, Any]:
    (manifest,) = _blocks(readme, "A tenant's first GPU job", "yaml")
    return YAML(typ="safe").load(manifest)


def test_the_first_job_is_a_valid_job_the_tenants_queue_admits(project: dict[str, Any]) -> None:
    job, resources = _job(project["readme"]), project["resources"]
    version = min(kubernetes_validate.utils.latest_version(), "1.33", key=lambda v: tuple(map(int, v.split("."))))
    kubernetes_validate.validate(job, version, strict=True)
    namespace, queue = job["metadata"]["namespace"], job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    (ns,) = [n for n in _objects(resources, "Namespace") if n["metadata"]["name"] == namespace]
    assert ns["metadata"]["labels"]["gpuplat.dev/tenant"] == TEAM
    # The pod sets no security context: Pod Security must not enforce `restricted` on it.
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] in ("baseline", "privileged")
    (local,) = [q for q in _objects(resources, "LocalQueue") if (q["metadata"]["namespace"], q["metadata"]["name"])
                == (namespace, queue)]
    named = local["spec"]["clusterQueue"]
    (cluster,) = [q for q in _objects(resources, "ClusterQueue") if q["metadata"]["name"] == named]
    (container,) = job["spec"]["template"]["spec"]["containers"]
    (gpu,) = [k for k in container["resources"]["limits"] if k.startswith("nvidia.com/")]
    quotas = [
        quantity(r["nominalQuota"])
        for group in cluster["spec"]["resourceGroups"]
        for flavor in group["flavors"]
        for r in flavor["resources"]
        if r["name"] == gpu
    ]
    assert sum(quotas) >= quantity(container["resources"]["limits"][gpu])
    requests = {**container["resources"]["requests"], f"requests.{gpu}": container["resources"]["limits"][gpu]}
    for quota in [q for q in _objects(resources, "ResourceQuota") if q["metadata"]["namespace"] == namespace]:
        for key, hard in quota["spec"]["hard"].items():
            asked = requests.get(key, requests.get(key.removeprefix("requests.")))
            assert asked is None or quantity(asked) <= quantity(hard), key
    for limits in [r for r in _objects(resources, "LimitRange") if r["metadata"]["namespace"] == namespace]:
        assert all("max" not in item for item in limits["spec"]["limits"])  # nothing caps what the job asks


def test_the_readme_cites_only_commands_that_exist_and_links_nowhere(project: dict[str, Any]) -> None:
    from gpuplat.commands import ABOUT

    readme = project["readme"]
    cited = set(re.findall(r"`gpuplat ([a-z]+)", readme)) | set(re.findall(r"^gpuplat ([a-z]+)", readme, re.M))
    assert cited and cited <= set(ABOUT), cited - set(ABOUT)
    assert re.findall(r"https?://\S+", readme) == []  # no page that may not exist (an index's, a repository's)


def test_the_kubectl_lines_name_that_job(project: dict[str, Any]) -> None:
    job = _job(project["readme"])
    (lines,) = _blocks(project["readme"], "A tenant's first GPU job", "sh")
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
    commands = [line.split("#")[0].split() for line in lines.splitlines()]
    assert commands[0] == ["kubectl", "apply", "-f", f"{name}.yaml"]
    for command in commands[1:]:
        assert command[:3] == ["kubectl", "-n", namespace]
    assert commands[3][3:7] == ["get", "pods", "-l", f"job-name={name}"] and commands[4][-1] == f"job/{name}"
    assert any(c[3:5] == ["get", "workloads"] for c in commands)


def _protected(resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in resources if r["options"].get("protect") or r["options"].get("retainOnDelete")]


def test_tearing_down_dev_names_what_the_components_protect(project: dict[str, Any]) -> None:
    readme, resources = project["readme"], project["resources"]
    (steps,) = _blocks(readme, "Tearing down dev", "sh")
    kept = _protected(resources)
    kinds = sorted({r["type"] for r in kept})
    assert "pulumi state unprotect --all --yes --stack dev" in steps and "pulumi destroy --stack dev" in steps
    namespaces = [r["inputs"]["metadata"]["name"] for r in kept if r["type"] == "kubernetes:core/v1:Namespace"]
    assert namespaces == [TEAM]
    if project["provider"] == "kubernetes":
        assert kinds == ["kubernetes:core/v1:Namespace"]
        assert all(r["options"].get("retainOnDelete") for r in kept)  # so destroy leaves it: deleted by hand
        assert f"kubectl delete namespace {TEAM}" in steps
        return
    assert kinds == ["aws:eks/cluster:Cluster", "aws:kms/key:Key", "kubernetes:core/v1:Namespace"]
    assert all(r["options"].get("protect") and r["options"].get("retainOnDelete") for r in kept)
    assert "cluster, its KMS key and each tenant's namespace" in readme
    (cluster,) = [r for r in kept if r["type"] == "aws:eks/cluster:Cluster"]
    assert cluster["inputs"]["deletionProtection"] is True  # why the README turns it off first
    assert f"--name {cluster['inputs']['name']} --no-deletion-protection" in steps
    assert f"aws eks wait cluster-active --region eu-west-1 --name {cluster['inputs']['name']}" in steps


def test_the_state_edit_clears_retain_on_delete_and_nothing_else(project: dict[str, Any], tmp_path: Path) -> None:
    if project["provider"] != "aws":
        pytest.skip("provider kubernetes leaves the retained namespace and deletes it with kubectl")
    (steps,) = _blocks(project["readme"], "Tearing down dev", "sh")
    (edit,) = [line for line in steps.splitlines() if line.startswith("python3 -c ")]
    # An export as `pulumi stack export` writes it (apitype.DeploymentV3: resources with urn, type, protect,
    # retainOnDelete), of the recorded stack.
    resources = [
        {"urn": r["urn"], "type": r["type"], "custom": r["custom"], "protect": bool(r["options"].get("protect")),
         **({"retainOnDelete": True} if r["options"].get("retainOnDelete") else {})}
        for r in project["resources"]
    ]
    state = tmp_path / "dev-state.json"
    state.write_text(json.dumps({"version": 3, "deployment": {"manifest": {}, "resources": resources}}))
    done = subprocess.run(["bash", "-c", edit.replace("dev-state.json", str(state))], check=False,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    after = json.loads(state.read_text())["deployment"]["resources"]
    assert [{k: v for k, v in r.items() if k != "retainOnDelete"} for r in resources] == after


def test_the_aws_calls_of_the_teardown_exist() -> None:
    import botocore.session

    session = botocore.session.get_session()
    update = session.get_service_model("eks").operation_model("UpdateClusterConfig")
    members: dict[str, Any] = update.input_shape.members  # pyright: ignore[reportAttributeAccessIssue]
    assert members["deletionProtection"].type_name == "boolean"  # --no-deletion-protection
    assert "ClusterActive" in session.get_waiter_model("eks").waiter_names  # aws eks wait cluster-active


def test_on_an_existing_cluster_every_helm_release_is_listed(project: dict[str, Any]) -> None:
    if project["provider"] != "kubernetes":
        assert "## On a cluster that already runs things" not in project["readme"]
        return
    section = project["readme"].split("\n## On a cluster that already runs things\n", 1)[1]
    _, _, example = recorded("kubernetes")  # the kubernetes example (a RoCE fabric with SR-IOV) and this project
    for release in [*[r.inputs for r in example if r.type == RELEASE], *_releases(project["resources"])]:
        chart = str(release["chart"]).rsplit("/", 1)[-1]
        assert f"chart `{chart}` " in section and f"namespace `{release['namespace']}`" in section, chart
    assert "The spec has no setting to leave one of them out." in section


def _releases(resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r["inputs"] for r in resources if r["type"] == RELEASE]


def test_nodes_max_bounds_each_tenants_quota_as_the_readme_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["init", NAME, "--provider", "kubernetes", "--nodes-max", "2", "--gpuplat-from", "index"]) == 0
    readme = " ".join((tmp_path / NAME / "README.md").read_text().split())
    assert "`nodes.max` × the GPUs per node" in readme and "is an error, GP284" in readme
    overlay = tmp_path / NAME / "stacks" / "dev.yaml"
    overlay.write_text(overlay.read_text().replace(f"{{name: {TEAM}, gpus: 8}}", f"{{name: {TEAM}, gpus: 9}}"))
    capsys.readouterr()
    monkeypatch.chdir(tmp_path / NAME)
    assert main(["check", "--stack", "dev"]) == 1  # dev has nodes.max 1 of 8 GPUs: 9 is past it
    assert " error GP284 " in capsys.readouterr().out
