"""What the emitted GPU Operator and HAMi releases make their node agents do on one node.

A release's values are merged over the chart's own defaults (the chart's values.yaml in the
shared upstream data) as Helm merges them: maps deeply, a null deleting a default, anything
else replacing it. From the result come the objects the charts render and the operators read:
the GPU Operator's ClusterPolicy (MIG strategy, the device plugin's ConfigMap and default
config, the MIG manager's config, the operands' tolerations) and HAMi's device plugin
(its node selector, tolerations and the device config whose `resourceCountName` and
`deviceSplitCount` it registers). Which operand runs on a node follows the operator's node
labelling (gpu-operator `controllers/state_manager.go`, `nodelabeling_controller.go`): a GPU
node gets every `nvidia.com/gpu.deploy.<operand>` label it does not carry yet, and the
operand's DaemonSet selects `...=true`; a pod lands only where it tolerates the node's taints.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

GPU_PRESENT = "nvidia.com/gpu.present"
NFD_PCI_NVIDIA = "feature.node.kubernetes.io/pci-10de.present"
DEPLOY = "nvidia.com/gpu.deploy."
DEVICE_PLUGIN_DEPLOY = DEPLOY + "device-plugin"
MIG_MANAGER_DEPLOY = DEPLOY + "mig-manager"
DEVICE_PLUGIN_CONFIG = "nvidia.com/device-plugin.config"
MIG_CONFIG = "nvidia.com/mig.config"
MIG_CONFIG_STATE = "nvidia.com/mig.config.state"
# The operands a container-workload GPU node gets (gpu-operator state_manager.go gpuStateLabels).
_OPERAND_LABELS = ("driver", "gpu-feature-discovery", "container-toolkit", "device-plugin", "dcgm",
                   "dcgm-exporter", "node-status-exporter", "operator-validator", "client")
# The device plugin container's environment in the operator's DaemonSet asset
# (assets/state-device-plugin/0500_daemonset.yaml), before the ClusterPolicy transforms it.
_PLUGIN_ENV = {"PASS_DEVICE_SPECS": "true", "FAIL_ON_INIT_ERROR": "true", "DEVICE_LIST_STRATEGY": "envvar",
               "DEVICE_ID_STRATEGY": "uuid", "MPS_ROOT": "/run/nvidia/mps"}
DEFAULT_MPS_ROOT = "/run/nvidia/mps"


def helm_merge(defaults: Any, values: Any) -> Any:
    """The values Helm renders a chart with: `values` coalesced over the chart's `defaults`."""
    if not isinstance(defaults, dict) or not isinstance(values, dict):
        return copy.deepcopy(values)
    merged = copy.deepcopy(defaults)
    for key, value in values.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = helm_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def tolerates(tolerations: Iterable[Mapping[str, Any]], taints: Iterable[Mapping[str, Any]]) -> list[str]:
    """The taints (key=value:effect) that keep a pod with these tolerations off the node."""
    blocked = []
    for taint in taints:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(_matches(t, taint) for t in tolerations):
            blocked.append(f"{taint['key']}={taint.get('value', '')}:{taint['effect']}")
    return blocked


def _matches(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("operator") == "Exists":
        return not toleration.get("key") or toleration["key"] == taint["key"]
    return toleration.get("key") == taint["key"] and str(toleration.get("value", "")) == str(taint.get("value", ""))


def selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> list[str]:
    """The nodeSelector terms (key=value) the node's labels do not satisfy."""
    return [f"{k}={v}" for k, v in selector.items() if labels.get(k) != str(v)]


def operator_labels(labels: Mapping[str, str], mig_capable: bool, mig_default: str | None) -> dict[str, str]:
    """The labels the GPU Operator adds to a node NFD found an NVIDIA PCI device on."""
    if labels.get(NFD_PCI_NVIDIA) != "true":
        return {}
    added = {GPU_PRESENT: "true"}
    for operand in _OPERAND_LABELS:
        added.setdefault(DEPLOY + operand, "true")
    if mig_capable:
        added[MIG_MANAGER_DEPLOY] = "true"
        if MIG_CONFIG not in labels and mig_default == "all-disabled":
            added[MIG_CONFIG] = "all-disabled"
    return {k: v for k, v in added.items() if k not in labels}


def load_yaml(text: str) -> Any:
    return YAML(typ="safe").load(text)


@dataclass(frozen=True)
class GpuOperator:
    """The GPU Operator's ClusterPolicy as the emitted release renders it."""

    namespace: str
    values: dict[str, Any]
    # ConfigMaps the stack emits itself, by (namespace, name): a config named but not created
    # by the chart must be one of these.
    config_maps: Mapping[tuple[str, str], Mapping[str, str]] = field(
        default_factory=dict[tuple[str, str], Mapping[str, str]])

    def _section(self, key: str) -> dict[str, Any]:
        section = self.values.get(key)
        return section if isinstance(section, dict) else {}

    @property
    def mig_strategy(self) -> str:
        """spec.mig.strategy: "" when the template omits it (an empty or absent value)."""
        return str(self._section("mig").get("strategy") or "")

    @property
    def tolerations(self) -> list[dict[str, Any]]:
        return list(self._section("daemonsets").get("tolerations") or [])

    def enabled(self, operand: str) -> bool:
        return bool(self._section(operand).get("enabled", True))

    def _config_map(self, section: dict[str, Any]) -> tuple[dict[str, str] | None, str]:
        """(the ConfigMap's data, or None if the pod could not mount it; why), for a named config."""
        config = section.get("config") or {}
        name = str(config.get("name") or "")
        if config.get("create") and config.get("data"):
            return {str(k): str(v) for k, v in config["data"].items()}, f"ConfigMap {name} (the chart's)"
        found = self.config_maps.get((self.namespace, name))
        if found is None:
            return None, f"ConfigMap {self.namespace}/{name} is neither created by the chart nor emitted"
        return dict(found), f"ConfigMap {name}"

    def plugin_configs(self) -> tuple[dict[str, str] | None, str, str]:
        """(the device plugin's config files by name, or None without a named ConfigMap; the
        config manager's DEFAULT_CONFIG; a problem that keeps the plugin from starting, or "")."""
        section = self._section("devicePlugin")
        config = section.get("config") or {}
        if not config.get("name"):
            return None, "", ""
        data, why = self._config_map(section)
        if data is None:
            return None, "", why
        return data, str(config.get("default") or ""), ""

    def plugin_env(self) -> dict[str, str]:
        """The device plugin container's environment as TransformDevicePlugin leaves it."""
        env = dict(_PLUGIN_ENV)
        section = self._section("devicePlugin")
        if self.mig_strategy:
            env["MIG_STRATEGY"] = self.mig_strategy
        root = (section.get("mps") or {}).get("root")
        if root and root != DEFAULT_MPS_ROOT:
            env["MPS_ROOT"] = str(root)
        for item in section.get("env") or []:
            env[str(item["name"])] = str(item.get("value", ""))
        return env

    def mig_parted_config(self) -> tuple[str | None, str, str]:
        """(the mig-parted config file text, or None for the configs mig-manager derives from
        the hardware; the default config name; a problem that keeps mig-manager from starting)."""
        section = self._section("migManager")
        config = section.get("config") or {}
        default = str(config.get("default") or "")
        if not config.get("name"):
            return None, default, ""
        data, why = self._config_map(section)
        if data is None:
            return None, default, why
        if "config.yaml" not in data:
            return None, default, f"{why} has no key config.yaml"
        return data["config.yaml"], default, ""


@dataclass(frozen=True)
class Hami:
    """HAMi's NVIDIA device plugin as the emitted release renders it."""

    values: dict[str, Any]

    @property
    def plugin(self) -> dict[str, Any]:
        section = self.values.get("devicePlugin")
        return section if isinstance(section, dict) else {}

    @property
    def enabled(self) -> bool:
        return bool(self.plugin.get("enabled", True))

    @property
    def node_selector(self) -> dict[str, Any]:
        return dict(self.plugin.get("nvidiaNodeSelector") or {})

    @property
    def tolerations(self) -> list[dict[str, Any]]:
        return list(self.plugin.get("tolerations") or [])

    def device_config(self) -> dict[str, Any]:
        """The `nvidia` section of the device config the plugin reads (`--config-file`): the
        release's `device-config.content` when set, else the chart's template of it."""
        content = (self.values.get("device-config") or {}).get("content")
        if content:
            try:
                parsed = load_yaml(str(content))
            except YAMLError as err:
                raise ValueError(f"HAMi device-config.content is not YAML: {err}") from None
            nvidia = parsed.get("nvidia") if isinstance(parsed, dict) else None
            if not isinstance(nvidia, dict):
                raise ValueError("HAMi device-config.content has no nvidia section")
            return nvidia
        return {"resourceCountName": self.values.get("resourceName"),
                "deviceSplitCount": self.plugin.get("deviceSplitCount")}

    def registers(self, node: str, gpus: int) -> dict[str, int]:
        """What HAMi's plugin registers on a node with `gpus` GPUs: every GPU as
        `deviceSplitCount` devices of `resourceCountName` (its per-node override by name wins)."""
        nvidia = self.device_config()
        split = int(nvidia.get("deviceSplitCount") or 0)
        raw = (self.plugin.get("nodeConfiguration") or {}).get("config")
        for entry in (json.loads(raw).get("nodeconfig", []) if raw else []):
            if entry.get("name") == node and entry.get("devicesplitcount"):
                split = int(entry["devicesplitcount"])
        name = nvidia.get("resourceCountName")
        if not name or split < 1:
            return {}
        return {str(name): gpus * split}
