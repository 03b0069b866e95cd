"""The rail requests the API server adds on Kubernetes 1.36+ (components/kubernetes/rail_requests.py):
the emitted MutatingAdmissionPolicy and binding validate against the Kubernetes schema of the
target, its CEL variables (run as the API server runs them, the variables in order) turn a pod's
network annotation into what the network-resources injector would add, and the JSON patch it
emits touches the first container only. The e2e suite runs it on the real API server
(`rail-injector-mutation`)."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path
from typing import Any

import celpy
import celpy.celtypes
import kubernetes_validate
import yaml
from celpy.adapter import json_to_cel

from tests.support_k8s import ROOT, by_kind, compile_kubernetes_example, record_side, releases

ONPREM = ROOT / "e2e" / "specs" / "onprem.yaml"
ANNOTATION = "k8s.v1.cni.cncf.io/networks"


@functools.cache
def _recorded(version: str) -> tuple[Any, tuple[Any, ...]]:
    spec = yaml.safe_load(ONPREM.read_text(encoding="utf-8"))
    spec["target"]["kubernetesVersion"] = version
    path = Path(tempfile.mkdtemp()) / f"onprem-{version}.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    model, plan = compile_kubernetes_example(path)
    return model, tuple(record_side(model, plan))


def _policy() -> dict[str, Any]:
    _, resources = _recorded("1.36")
    (policy,) = by_kind(resources, "MutatingAdmissionPolicy")
    return policy


# The Kubernetes CEL string library's `split` and `trim` (cel-go ext/strings), which celpy lacks.
def _split(text: celpy.celtypes.StringType, sep: celpy.celtypes.StringType) -> celpy.celtypes.ListType:
    return celpy.celtypes.ListType([celpy.celtypes.StringType(p) for p in str(text).split(str(sep))])


def _trim(text: celpy.celtypes.StringType) -> celpy.celtypes.StringType:
    return celpy.celtypes.StringType(str(text).strip())


def _variables(policy: dict[str, Any], pod: dict[str, Any]) -> dict[str, Any]:
    env = celpy.Environment()
    activation: dict[str, Any] = {"object": json_to_cel(pod), "request": json_to_cel({"namespace": "pretrain"})}
    found: dict[str, Any] = {}
    for variable in policy["spec"]["variables"]:
        activation["variables"] = celpy.celtypes.MapType({celpy.celtypes.StringType(k): v for k, v in found.items()})
        program = env.program(env.compile(variable["expression"]), functions={"split": _split, "trim": _trim})
        found[variable["name"]] = program.evaluate(activation)
    return found


def _pod(networks: str | None, side: dict[str, Any] | None = None) -> dict[str, Any]:
    annotations = {ANNOTATION: networks} if networks is not None else {}
    return {"metadata": {"name": "p", "annotations": annotations},
            "spec": {"containers": [{"name": "main", "resources": {}}, {"name": "side", "resources": side or {}}]}}


def added(pod: dict[str, Any]) -> dict[str, int]:
    """What the mutation adds to the first container (requests and limits alike)."""
    found = _variables(_policy(), pod)
    return {str(r): sum(1 for x in found["requested"] if x == r) for r in found["missing"]}


def test_the_policy_and_binding_are_valid_for_the_target_version() -> None:
    model, resources = _recorded("1.36")
    objects = [*by_kind(resources, "MutatingAdmissionPolicy"), *by_kind(resources, "MutatingAdmissionPolicyBinding")]
    assert [o["kind"] for o in objects] == ["MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"]
    for obj in objects:
        kubernetes_validate.validate(obj, model.target.kubernetes_version, strict=True)
    binding = objects[1]["spec"]
    assert binding["policyName"] == objects[0]["metadata"]["name"] == "vega-rail-requests"
    assert binding["matchResources"]["namespaceSelector"] == {
        "matchExpressions": [{"key": "gpuplat.dev/tenant", "operator": "Exists"}]}


def test_before_1_36_no_policy_and_the_injector_alone() -> None:
    _, resources = _recorded("1.35")
    assert by_kind(resources, "MutatingAdmissionPolicy") == []
    assert releases(resources)["sriov-network-operator"].inputs["values"]["operator"]["admissionControllers"][
        "enabled"] is True
    _, resources = _recorded("1.36")  # beside the policy the injector stays on (docs/tenants.md)
    assert releases(resources)["sriov-network-operator"].inputs["values"]["operator"]["admissionControllers"][
        "enabled"] is True


def test_each_named_rail_network_adds_its_resource_once_per_naming() -> None:
    assert added(_pod("pretrain-rail0,pretrain-rail1")) == {"openshift.io/rdma_rail0": 1, "openshift.io/rdma_rail1": 1}
    # Spaces, an interface name and the pod's own namespace written out read as the injector reads them.
    assert added(_pod(" pretrain-rail0 , pretrain/pretrain-rail0@net2,pretrain-dpdk-rail3")) == {
        "openshift.io/rdma_rail0": 2, "openshift.io/dpdk_rail3": 1}


def test_nothing_is_added_where_the_injector_adds_nothing_here() -> None:
    assert added(_pod(None)) == {}
    assert added(_pod("")) == {}
    assert added(_pod("macvlan-conf")) == {}  # not a rail network: no resource
    assert added(_pod('[{"name": "pretrain-rail0"}]')) == {}  # the JSON form is the injector's
    # A resource some container already asks for is left as it is (the injector without --honor-resources).
    assert added(_pod("pretrain-rail0,pretrain-rail1", side={"limits": {"openshift.io/rdma_rail1": "1"}})) == {
        "openshift.io/rdma_rail0": 1}


def test_every_tenants_rail_networks_map_to_their_sriov_networks_resources() -> None:
    _, resources = _recorded("1.36")
    rails = _variables(_policy(), _pod(None))["rails"]
    networks = by_kind(resources, "SriovNetwork")
    assert len(rails) == len(networks) == 32
    for network in networks:
        key = f"{network['spec']['networkNamespace']}/{network['metadata']['name']}"
        assert rails[key] == f"openshift.io/{network['spec']['resourceName']}"


def test_the_patch_touches_the_first_container_only_and_escapes_the_resource_name() -> None:
    spec = _policy()["spec"]
    assert spec["failurePolicy"] == "Fail" and spec["reinvocationPolicy"] == "IfNeeded"
    assert spec["matchConstraints"]["resourceRules"][0]["operations"] == ["CREATE"]
    (mutation,) = spec["mutations"]
    assert mutation["patchType"] == "JSONPatch"
    expression = mutation["jsonPatch"]["expression"]
    paths = [part.split("'")[0] for part in expression.split("path: '")[1:]]
    assert paths and all(p.startswith("/spec/containers/0/resources") for p in paths)
    assert expression.count("jsonpatch.escapeKey(r)") == 2  # '/' in openshift.io/... becomes ~1
    # The empty maps are added only where absent: an `add` on an existing map would replace it.
    assert expression.count("!has(object.spec.containers[0].resources.requests)") == 1
