"""What a GPU node registers, derived from what the stack emits for it.

On a real node the GPU Operator's agents decide it: NFD finds the NVIDIA PCI device, the
operator labels the node for its operands, the MIG manager applies the mig-parted config the
node's `nvidia.com/mig.config` label names, and the device plugin registers what its config
(the one `nvidia.com/device-plugin.config` selects, else the default) makes of the GPUs; on a
fractional pool HAMi's device plugin does instead. Here each of those reads the emitted
releases and objects (e2e/operands.py), the node's own labels and taints, and the GPU's facts:

- the device plugin's config is parsed, validated and turned into resources by the devices
  tool (e2e/tools/devices: upstream's `api/config/v1` on go-nvml's mock NVML);
- the MIG manager's choice is mig-parted's format read by e2e/migparted.py (a stand-in), the
  layout then placed on NVML's tables by the devices tool: `nvidia.com/mig.config.state` is
  `success` only when it fits, and a failed node registers nothing;
- HAMi's plugin registers its device config's `resourceCountName` (a stand-in, e2e/operands.py).

A plugin whose DaemonSet does not select the node, or that does not tolerate its taints,
registers nothing, as on a real node.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from e2e import migparted, upstream
from e2e.cluster import E2EError
from e2e.objects import load_yaml_documents
from e2e.operands import (
    DEVICE_PLUGIN_CONFIG,
    DEVICE_PLUGIN_DEPLOY,
    MIG_CONFIG,
    MIG_CONFIG_STATE,
    MIG_MANAGER_DEPLOY,
    NFD_PCI_NVIDIA,
    GpuOperator,
    Hami,
    helm_merge,
    operator_labels,
    selects,
    tolerates,
)
from gpuplat.catalog.gpus import GpuModel, gpu_model
from gpuplat.catalog.instances import instance_type

# The GPUs a node of an existing cluster has (provider kubernetes: no instance type says it).
HARDWARE_ANNOTATION = "e2e.gpuplat.dev/gpus"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
RELEASE = "kubernetes:helm.sh/v3:Release"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
FABRIC_LABEL = "gpuplat.dev/fabric"
# What each node agent is in the suite (report.json's components).
COMPONENTS = {
    "nvidia-device-plugin": ("stand-in", "k8s-device-plugin v0.17.4 api/config/v1 parses, validates and names "
                             "the emitted config on go-nvml's mock NVML (e2e/tools/devices); no kubelet"),
    "gpu-operator": ("stand-in", "its node labelling and ClusterPolicy transforms, from the emitted values over "
                     "the chart's defaults (e2e/operands.py)"),
    "mig-parted": ("stand-in", "config format and selection from its documented format (e2e/migparted.py); "
                   "placement on NVML's tables"),
    "pool-labeler": ("stand-in", "kwok runs no container: the kubectl init containers of its pods, bound by the "
                     "real DaemonSet controller and scheduler, run as the pod's service account (e2e/podcommands.py)"),
    "hami-device-plugin": ("stand-in", "registers its device config's resourceCountName x deviceSplitCount "
                           "(e2e/operands.py)"),
}


def chart_defaults(chart: str) -> dict[str, Any]:
    try:
        path = upstream.resolve(f"charts/{chart}/values.yaml")
    except upstream.UpstreamMissing as err:
        raise E2EError(f"the chart's values.yaml is needed to render its release's values: {err}") from err
    documents = load_yaml_documents(path)
    return documents[0] if documents else {}


def hardware(labels: Mapping[str, str], annotations: Mapping[str, str]) -> tuple[GpuModel, int] | None:
    """The node's GPU model and count: its instance type's (aws), or what the cluster has (kubernetes)."""
    known = instance_type(labels.get(INSTANCE_TYPE, ""))
    if known is not None and known.gpu_count:
        model = gpu_model(known.gpu_model)
        return (model, known.gpu_count) if model is not None else None
    stated = annotations.get(HARDWARE_ANNOTATION, "")
    if " x" in stated:
        name, count = stated.rsplit(" x", 1)
        model = gpu_model(name)
        return (model, int(count)) if model is not None else None
    return None


def _gpu_request(model: GpuModel) -> dict[str, Any]:
    return {"model": model.name, "pciDeviceIds": list(model.pci_device_ids), "memoryMiB": int(model.memory_gib * 1024),
            "profiles": [{"name": p.name, "computeSlices": p.compute_slices, "memorySlices": p.memory_slices,
                          "maxCount": p.max_count, "placements": list(p.placements),
                          "mediaExtensions": p.media_extensions} for p in model.mig_profiles]}


@dataclass
class Registration:
    """What the agents leave on a node: the labels they add and the resources registered."""

    labels: dict[str, str]
    resources: dict[str, int]
    detail: str


@dataclass
class DeviceModel:
    """The node agents of one stack's output (or of an edited copy of it)."""

    resources: list[dict[str, Any]]  # the recorded resources
    tool: Path  # the devices binary
    # Labels the node's platform adds besides the GPU agents (EKS's topology labels), from its labels.
    platform_labels: Callable[[Mapping[str, str]], dict[str, str]] | None = None
    _facts: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    _cache: dict[str, Registration] = field(default_factory=dict[str, Registration])

    def __post_init__(self) -> None:
        maps = {(str(r["inputs"]["metadata"].get("namespace", "")), str(r["inputs"]["metadata"]["name"])):
                dict(r["inputs"].get("data") or {}) for r in self.resources if r["type"] == CONFIG_MAP}
        self.operator: GpuOperator | None = None
        self.hami: Hami | None = None
        for r in self.resources:
            if r["type"] != RELEASE:
                continue
            inputs = r["inputs"]
            if inputs.get("name") == "gpu-operator":
                values = helm_merge(chart_defaults("gpu-operator"), inputs.get("values") or {})
                self.operator = GpuOperator(str(inputs.get("namespace", "")), values, maps)
            elif inputs.get("name") == "hami":
                self.hami = Hami(helm_merge(chart_defaults("hami"), inputs.get("values") or {}))

    def _run(self, command: str, request: dict[str, Any]) -> Any:
        result = subprocess.run([str(self.tool), command], input=json.dumps(request), capture_output=True, text=True)
        if result.returncode != 0:
            raise E2EError(f"devices {command}: {result.stderr.strip()[-800:]}")
        return json.loads(result.stdout)

    def facts(self, model: GpuModel) -> dict[str, Any]:
        if model.name not in self._facts:
            self._facts[model.name] = self._run("describe", {"gpus": [_gpu_request(model)]})[0]
        return self._facts[model.name]

    def register(self, name: str, labels: Mapping[str, str], annotations: Mapping[str, str],
                 taints: list[dict[str, Any]]) -> Registration | None:
        """The agents' work on a node, or None for a node without GPUs."""
        found = hardware(labels, annotations)
        if found is None:
            return None
        key = json.dumps([name, found[0].name, found[1], dict(labels), taints], sort_keys=True)
        if key not in self._cache:
            self._cache[key] = self._register(name, found[0], found[1], dict(labels), taints)
        return self._cache[key]

    def _register(self, name: str, model: GpuModel, count: int, labels: dict[str, str],
                  taints: list[dict[str, Any]]) -> Registration:
        added: dict[str, str] = {}
        notes: list[str] = []
        op = self.operator
        facts = self.facts(model)
        mig_capable = bool(facts["profiles"])
        if op is not None:
            nfd = ((op.values.get("node-feature-discovery") or {}).get("worker") or {}).get("tolerations") or []
            blocked = tolerates(nfd, taints)
            if blocked:
                notes.append(f"NFD's worker does not tolerate {', '.join(blocked)}: no GPU found")
            else:
                added[NFD_PCI_NVIDIA] = "true"
                migs = op.values.get("migManager") or {}
                default = str((migs.get("config") or {}).get("default") or "") if op.enabled("migManager") else None
                added.update(operator_labels({**labels, **added}, mig_capable, default))
        seen = {**labels, **added}
        node: dict[str, Any] = {"key": name, "gpu": _gpu_request(model), "count": count, "mig": None, "plugin": None}
        if op is not None and seen.get(MIG_MANAGER_DEPLOY) == "true" and MIG_CONFIG in seen:
            node["mig"], why = self._mig_layouts(op, facts, seen[MIG_CONFIG], count, taints)
            if why:
                notes.append(why)
                if node["mig"] is None and not why.startswith("mig-manager does not"):
                    added[MIG_CONFIG_STATE] = "failed"
                    return Registration(added, {}, "; ".join(notes))
        plugin = self._plugin(op, seen, taints, notes)
        node["plugin"] = plugin
        result = self._run("register", {"nodes": [node]})[0]
        if result.get("migState"):
            added[MIG_CONFIG_STATE] = result["migState"]
            notes.append(f"mig-parted {seen.get(MIG_CONFIG)}: {result['migState']}"
                         + (f" ({result['migDetail']})" if result.get("migDetail") else ""))
        resources = {k: int(v) for k, v in result.get("resources", {}).items()}
        if plugin is not None:
            said = result.get("error") or ", ".join(f"{k}: {v}" for k, v in sorted(resources.items())) or "nothing"
            config = f"config {result['config']!r}" if plugin["configs"] is not None else "no config file"
            notes.append(f"NVIDIA device plugin ({config}, MIG strategy {result.get('migStrategy') or '?'}"
                         f"{', ' + result['sharing'] if result.get('sharing') not in (None, 'none') else ''}"
                         f"{', renameByDefault' if result.get('renameByDefault') else ''}"
                         f"{', one unit per request' if result.get('failRequestsGreaterThanOne') else ''}): {said}")
        resources.update(self._hami(name, seen, taints, count, notes))
        resources.update(self._efa(seen))
        added.update(gfd_labels(model, count, seen))
        if self.platform_labels is not None:
            added.update({k: v for k, v in self.platform_labels(seen).items() if k not in seen})
        return Registration(added, resources, "; ".join(notes))

    def _mig_layouts(self, op: GpuOperator, facts: dict[str, Any], selected: str, count: int,
                     taints: list[dict[str, Any]]) -> tuple[list[Any] | None, str]:
        if not op.enabled("migManager"):
            return None, "mig-manager does not run (migManager.enabled is false)"
        blocked = tolerates(op.tolerations, taints)
        if blocked:
            return None, f"mig-manager does not tolerate {', '.join(blocked)}"
        text, _default, problem = op.mig_parted_config()
        try:
            if problem:
                raise migparted.MigPartedError(problem)
            configs = migparted.parse(text) if text is not None else migparted.hardware_configs(
                [migparted.Profile(p["name"], p["instances"], p["slices"]) for p in facts["profiles"]])
            per_gpu, _selected = migparted.layouts(configs, selected, facts["pciDeviceId"], count)
        except migparted.MigPartedError as err:
            return None, f"mig-parted {selected}: failed ({err})"
        return per_gpu, ""

    def _plugin(self, op: GpuOperator | None, labels: Mapping[str, str], taints: list[dict[str, Any]],
                notes: list[str]) -> dict[str, Any] | None:
        if op is None:
            notes.append("no GPU Operator release: no NVIDIA device plugin")
            return None
        if not op.enabled("devicePlugin"):
            notes.append("NVIDIA device plugin disabled (devicePlugin.enabled)")
            return None
        if labels.get(DEVICE_PLUGIN_DEPLOY) != "true":
            deploy = labels.get(DEVICE_PLUGIN_DEPLOY)
            notes.append(f"NVIDIA device plugin not scheduled ({DEVICE_PLUGIN_DEPLOY}={deploy})")
            return None
        blocked = tolerates(op.tolerations, taints)
        if blocked:
            notes.append(f"NVIDIA device plugin does not tolerate {', '.join(blocked)}")
            return None
        configs, default, problem = op.plugin_configs()
        if problem:
            notes.append(f"NVIDIA device plugin cannot start: {problem}")
            return None
        return {"configs": configs, "label": labels.get(DEVICE_PLUGIN_CONFIG, ""), "defaultConfig": default,
                "env": op.plugin_env()}

    def _hami(self, name: str, labels: Mapping[str, str], taints: list[dict[str, Any]], count: int,
              notes: list[str]) -> dict[str, int]:
        hami = self.hami
        if hami is None or not hami.enabled:
            return {}
        missing = selects(hami.node_selector, labels)
        if missing:
            return {}  # HAMi's plugin is not meant for this node
        blocked = tolerates(hami.tolerations, taints)
        if blocked:
            notes.append(f"HAMi device plugin does not tolerate {', '.join(blocked)}")
            return {}
        try:
            registered = hami.registers(name, count)
        except ValueError as err:
            notes.append(f"HAMi device plugin cannot start: {err}")
            return {}
        notes.append(f"HAMi device plugin: {', '.join(f'{k}: {v}' for k, v in registered.items()) or 'nothing'}")
        return registered

    def _efa(self, labels: Mapping[str, str]) -> dict[str, int]:
        """The AWS EFA device plugin on fabric nodes: every EFA interface of the instance type."""
        known = instance_type(labels.get(INSTANCE_TYPE, ""))
        if known is None or not known.efa_interfaces or labels.get(FABRIC_LABEL) != "true":
            return {}
        return {"vpc.amazonaws.com/efa": known.efa_interfaces}


def gfd_labels(model: GpuModel, count: int, labels: Mapping[str, str]) -> dict[str, str]:
    """What GPU feature discovery adds; a label the node already carries (an on-prem node's own
    nvidia.com/gpu.product, which the pool's selector may name) stays as it is."""
    found = {"nvidia.com/gpu.count": str(count), "nvidia.com/gpu.product": model.name}
    return {k: v for k, v in found.items() if k not in labels}
