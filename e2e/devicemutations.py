"""Breaking edits of the emitted device configuration, each caught by the suite.

Each edit changes one value of the stack's output that decides what a node registers: the
time-slicing / MPS config's `renameByDefault` or `replicas`, the MIG strategy, the name of a
pool's device-plugin config, the operands' tolerations, HAMi's `resourceCountName` or its
device plugin's node selector. The edited recording goes through the same node agents
(e2e/devices.py) and device check (e2e/devicecheck.py) as the output itself; the scenario
`edit-caught-<edit>` passes only when the check fails, and reports why. Where the pools' nodes
exist already (provider kubernetes), the edit is also made on the running cluster: the nodes
re-register as the edited configuration says and a tenant's reference job for the pool must
not be bound, in the scheduler's words; the original registration is put back after.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from e2e import expect, jobs
from e2e.cluster import Cluster, E2EError, wait_for
from e2e.devicecheck import NodeKind, cluster_nodes, nodepool_nodes, problems, spec_pools
from e2e.devices import DeviceModel
from e2e.nodes import NodeAgents
from e2e.operands import load_yaml
from e2e.report import Report
from e2e.scenarios import tenant_identity
from e2e.stack import Stack

RELEASE = "kubernetes:helm.sh/v3:Release"
Recording = list[dict[str, Any]]


def _edit_values(resources: Recording, chart: str, edit: Callable[[dict[str, Any]], bool]) -> Recording | None:
    """The recording with the release `chart`'s values edited in place by `edit` (a copy), or None
    when there is no such release or `edit` says the edit does not apply (returns False)."""
    for index, resource in enumerate(resources):
        if resource["type"] == RELEASE and resource["inputs"].get("name") == chart:
            inputs = copy.deepcopy(resource["inputs"])
            if not edit(inputs["values"]):
                return None
            return [*resources[:index], {**resource, "inputs": inputs}, *resources[index + 1:]]
    return None


def _dump(document: Any) -> str:
    import yaml

    return yaml.safe_dump(document, sort_keys=False)


def _shared_config(resources: Recording, edit: Callable[[dict[str, Any], str], str | None]) -> Recording | None:
    """Edit the first time-slicing / MPS entry of the device plugin's ConfigMap."""
    def first_shared(values: dict[str, Any]) -> bool:
        data = values.get("devicePlugin", {}).get("config", {}).get("data", {})
        for key, text in data.items():
            config = load_yaml(text) or {}
            sharing = config.get("sharing") or {}
            for strategy in ("timeSlicing", "mps"):
                if sharing.get(strategy, {}).get("resources"):
                    new_key = edit(sharing[strategy], key)
                    if new_key is None:
                        continue
                    del data[key]
                    data[new_key] = _dump(config)
                    return True
        return False
    return _edit_values(resources, "gpu-operator", first_shared)


def rename_by_default(resources: Recording) -> Recording | None:
    def edit(shared: dict[str, Any], key: str) -> str | None:
        if not shared.get("renameByDefault"):
            return None
        shared["renameByDefault"] = False
        return key
    return _shared_config(resources, edit)


def replicas(resources: Recording) -> Recording | None:
    def edit(shared: dict[str, Any], key: str) -> str | None:
        resource = shared["resources"][0]
        resource["replicas"] = resource["replicas"] // 2 if resource["replicas"] >= 4 else resource["replicas"] + 1
        return key
    return _shared_config(resources, edit)


def config_name(resources: Recording) -> Recording | None:
    """The pool's config renamed in the ConfigMap; its nodes' label still names the old one."""
    return _shared_config(resources, lambda shared, key: f"{key}-renamed")


def mig_strategy(resources: Recording) -> Recording | None:
    def edit(values: dict[str, Any]) -> bool:
        values["mig"] = {**values.get("mig", {}), "strategy": "single"}
        return True
    return _edit_values(resources, "gpu-operator", edit)


def operand_tolerations(resources: Recording) -> Recording | None:
    """The operands no longer tolerate the GPU taint the platform puts on every GPU node."""
    def edit(values: dict[str, Any]) -> bool:
        daemonsets = values.get("daemonsets", {})
        kept = [t for t in daemonsets.get("tolerations", []) if t.get("key") != "nvidia.com/gpu"]
        if kept == daemonsets.get("tolerations"):
            return False
        placeholder = [{"key": "example.com/none", "operator": "Exists"}]
        values["daemonsets"] = {**daemonsets, "tolerations": kept or placeholder}
        return True
    return _edit_values(resources, "gpu-operator", edit)


def hami_resource_name(resources: Recording) -> Recording | None:
    def edit(values: dict[str, Any]) -> bool:
        content = values.get("device-config", {}).get("content")
        if not content:
            return False
        config = load_yaml(content)
        config["nvidia"]["resourceCountName"] = "nvidia.com/gpu"
        values["device-config"] = {**values["device-config"], "content": _dump(config)}
        return True
    return _edit_values(resources, "hami", edit)


def hami_node_selector(resources: Recording) -> Recording | None:
    def edit(values: dict[str, Any]) -> bool:
        selector = dict(values.get("devicePlugin", {}).get("nvidiaNodeSelector") or {})
        key = next((k for k in selector if k != "gpu"), None)
        if key is None:
            return False
        selector[key] = f"{selector[key]}-hami"
        values["devicePlugin"] = {**values["devicePlugin"], "nvidiaNodeSelector": selector}
        return True
    return _edit_values(resources, "hami", edit)


@dataclass(frozen=True)
class DeviceEdit:
    name: str
    what: str
    edit: Callable[[Recording], Recording | None]


EDITS = (
    DeviceEdit("device-rename-by-default", "renameByDefault false in a time-slicing / MPS config", rename_by_default),
    DeviceEdit("device-replicas", "replicas halved in a time-slicing / MPS config", replicas),
    DeviceEdit("device-config-name", "a pool's device-plugin config renamed in the ConfigMap", config_name),
    DeviceEdit("device-mig-strategy", "the GPU Operator's mig.strategy set to single", mig_strategy),
    DeviceEdit("device-operand-tolerations", "the GPU Operator's operands without the GPU taint's toleration",
               operand_tolerations),
    DeviceEdit("hami-resource-name", "HAMi's device config resourceCountName set to nvidia.com/gpu",
               hami_resource_name),
    DeviceEdit("hami-node-selector", "HAMi's device plugin selecting another sharing label value",
               hami_node_selector),
)


def _nodes(cluster: Cluster, stack: Stack, pools: list[Any]) -> list[NodeKind]:
    return nodepool_nodes(stack) if stack.provider == "aws" else cluster_nodes(cluster, pools)


def _summary(found: dict[str, list[str]]) -> str:
    return "; ".join(f"pool {pool}: {lines[0]}" for pool, lines in found.items() if lines)


def registrations(cluster: Cluster, stack: Stack, report: Report, model: DeviceModel, timeout: float) -> None:
    """`devices-<pool>`: the pool's nodes register what the spec's sharing asks for. On an
    existing cluster's nodes the pool labeler's pods come first: the check waits for them."""
    pools = spec_pools(stack.target)

    def clean() -> tuple[dict[str, list[str]], list[NodeKind]] | None:
        nodes = _nodes(cluster, stack, pools)
        found = problems(model, pools, nodes)
        return (found, nodes) if not any(found.values()) else None
    try:
        found, all_nodes = wait_for(clean, timeout if stack.provider == "kubernetes" else 0, "the pools' nodes")
    except E2EError:
        all_nodes = _nodes(cluster, stack, pools)
        found = problems(model, pools, all_nodes)
    for pool in pools:
        lines = found.get(pool.name, [])
        nodes = [n for n in all_nodes if n.pool == pool.name]
        if not nodes:
            report.scenario(stack.target.label, f"devices-{pool.name}", False, "no node of the pool to register "
                            "devices on (no NodePool / no node its nodeSelector selects)")
            continue
        first = model.register(nodes[0].name, nodes[0].labels, nodes[0].annotations, nodes[0].taints)
        detail = "; ".join(lines) if lines else \
            f"{len(nodes)} node(s) register what the spec asks: {first.detail if first else ''}"
        report.scenario(stack.target.label, f"devices-{pool.name}", not lines, detail)


def refused_for_devices(engine: str) -> bool:
    """Whether the engine's words say no node has the job's devices: the scheduler's
    FailedScheduling naming an insufficient resource, or Kueue's topology-aware admission
    finding no node to fit it. An API server refusal or a wait for another reason is not it."""
    return (engine.startswith("FailedScheduling") and "Insufficient" in engine) or \
        (engine.startswith("Kueue:") and "fit" in engine)


def _engine_refuses(cluster: Cluster, stack: Stack, agents: NodeAgents, edited: DeviceModel, pool: str,
                    timeout: float) -> str:
    """With the nodes re-registered as `edited` says, a reference job of `pool` stays unbound."""
    slot = next((s for s in expect.slots(expect.spec_model(stack.target)) if s.pool == pool), None)
    if slot is None:
        return f"the spec lets no tenant use pool {pool}, so no job was submitted"
    journey = {"tenant": slot.tenant, "resource": slot.resource}
    original = agents.model
    agents.model = edited
    name = "edit-device"
    try:
        wait_for(lambda: True if all(agents.details.get(n) == d for n, d in _details(cluster, edited).items())
                 else None, timeout, "the nodes re-registering")
        job = jobs.reference_job(journey["tenant"], pool, journey["resource"], name=name,
                                 topology_level=expect.HOSTNAME if slot.topology else None)
        created = cluster.kubectl("create", "-f", "-", stdin=json.dumps(job), check=False,
                                  **tenant_identity(journey["tenant"]))
        if created.returncode:
            return f"the API server refused the job: {created.stderr.strip()}"

        def unbound() -> str | None:
            # Kueue's topology-aware admission reads the nodes' capacity itself: on such a pool it
            # is Kueue that finds no node with the resource, before any pod exists.
            held = jobs.pending_reason(cluster, journey["tenant"], name)
            if held is not None and "fit" in held:
                return f"Kueue: {held}"
            for pod in jobs.pods_of(cluster, journey["tenant"], name):
                if pod["spec"].get("nodeName"):
                    return f"BOUND to {pod['spec']['nodeName']}"
                said = [e for e in jobs.events_for(cluster, journey["tenant"], pod["metadata"]["name"])
                        if e.startswith("FailedScheduling")]
                if said:
                    return said[-1]
            return None
        return wait_for(unbound, timeout, f"the scheduler deciding on {journey['tenant']}/{name}")
    finally:
        cluster.kubectl("delete", "job", name, "-n", journey["tenant"], "--wait=false", "--ignore-not-found",
                        check=False)
        agents.model = original
        if original is not None:
            wait_for(lambda: True if all(agents.details.get(n) == d for n, d in _details(cluster, original).items())
                     else None, timeout, "the nodes registering as emitted again")


def _details(cluster: Cluster, model: DeviceModel) -> dict[str, str]:
    found = {}
    for item in cluster.items("nodes"):
        meta = item["metadata"]
        registered = model.register(meta["name"], meta.get("labels", {}), meta.get("annotations", {}),
                                    list(item["spec"].get("taints") or []))
        if registered is not None:
            found[meta["name"]] = registered.detail
    return found


def caught(cluster: Cluster, stack: Stack, report: Report, model_of: Callable[[Recording], DeviceModel],
           agents: NodeAgents | None, timeout: float) -> None:
    """Each device edit the stack's output allows fails the device check, with the reason."""
    pools = spec_pools(stack.target)
    nodes = _nodes(cluster, stack, pools)
    baseline = problems(model_of(stack.resources), pools, nodes)
    for edit in EDITS:
        edited = edit.edit(stack.resources)
        scenario = f"edit-caught-{edit.name}"
        if edited is None:
            report.skip(stack.target.label, scenario, f"{edit.what}: the stack emits no value this edit changes")
            continue
        try:
            model = model_of(edited)
            # What the edit breaks: pools the output as emitted serves and the edited one does not.
            found = {pool: lines for pool, lines in problems(model, pools, nodes).items()
                     if lines and lines != baseline.get(pool)}
            if not found:
                report.scenario(stack.target.label, scenario, False,
                                f"{edit.what}: every pool's nodes still register what the spec asks")
                continue
            detail = f"{edit.what}: the device check fails: {_summary(found)}"
            # The scheduler probe is a one-unit job: halved replicas still hold one unit, so only
            # the device check judges that edit (a job past the halved count is not probed yet).
            if agents is not None and stack.provider == "kubernetes" and edit.name != "device-replicas":
                engine = _engine_refuses(cluster, stack, agents, model, next(iter(found)), timeout)
                caught = refused_for_devices(engine)
                verdict = "leaves the job unbound" if caught else \
                    "binds the job anyway" if engine.startswith("BOUND") else "does not say the devices are missing"
                detail += f"; the real scheduler {verdict}: {engine}"
                report.scenario(stack.target.label, scenario, caught, detail)
            else:
                report.scenario(stack.target.label, scenario, True, detail)
        except E2EError as err:
            report.scenario(stack.target.label, scenario, False, f"{edit.what}: {err}")
