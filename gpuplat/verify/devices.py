# pyright: strict
"""Step 6: a device plugin advertises the resource on the nodes the job lands on.

GPU Operator (exclusive, time-slicing, MPS, MIG), read from its rendered ClusterPolicy and
ConfigMaps: the device plugin runs on a node unless disabled or its
`nvidia.com/gpu.deploy.device-plugin` label is "false", and only where the operands' tolerations
tolerate the node's taints. It loads the config named by the node's
`nvidia.com/device-plugin.config` label (else the ClusterPolicy's default). A replicated GPU
keeps its name unless `rename` or `renameByDefault: true` (then `<name>.shared`). The MIG
strategy is the ClusterPolicy's when it sets one (the operator passes it as MIG_STRATEGY, which
wins over the config file), else the config's `flags.migStrategy`, else `none`; the plugin
refuses MPS under `mixed` (`validateFlags`). Under the mixed MIG strategy a MIG node advertises
`nvidia.com/mig-<profile>` per instance of the mig-parted config its `nvidia.com/mig.config`
label names: the custom ConfigMap when one is set, else the operator's built-in
`all-disabled`, `all-enabled` and `all-<profile>`.

HAMi (fractional), read from its rendered chart: its device-plugin DaemonSet must be able to
run on the node (node selector within the node's labels, tolerations), and the resource it
counts (`resourceCountName` of its device config) must be the one the job asks for.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, cast

import yaml

from gpuplat.catalog import GPU_RESOURCE, gpu_model, mig_resource_name
from gpuplat.catalog.labels import DEVICE_PLUGIN_CONFIG_LABEL, DEVICE_PLUGIN_DEPLOY_LABEL, MIG_CONFIG_LABEL
from gpuplat.model import GpuNodePool, SharingMode

from .k8s import Obj, as_list, as_map, describe, dig, labels_text, untolerated
from .types import DEVICE_PLUGIN, Nodes, Step, not_checked
from .view import View


def _load(text: Any) -> dict[str, Any]:
    return _parsed(str(text or ""))


@lru_cache(maxsize=512)
def _parsed(text: str) -> dict[str, Any]:
    # Every journey through a pool reads the same few ConfigMaps: parse each text once (callers
    # only read the result).
    try:
        return as_map(yaml.safe_load(text))
    except yaml.YAMLError:
        return {}


def _config_map(view: View, release: str, name: str) -> Obj | None:
    found = view.find_rendered(release, "ConfigMap", name=name) or view.find("ConfigMap", name=name)
    return found[0] if found else None


# ---- MIG ----------------------------------------------------------------------------------------


def _mig_configs(view: View, release: str, policy: Obj) -> tuple[dict[str, Any] | None, str]:
    """The mig-parted configs the operator applies (None: its built-in set) and where they come from."""
    name = dig(policy, "spec", "migManager", "config", "name")
    if not name:
        return None, "the operator's built-in MIG configs"
    cm = _config_map(view, release, str(name))
    if cm is None:
        return {}, f"ConfigMap {name} (not found)"
    texts = list(as_map(cm.get("data")).values())
    return as_map(_load(texts[0] if texts else "").get("mig-configs")), describe(cm)


def _builtin_mig(pool: GpuNodePool, name: str) -> dict[str, int] | None:
    gpu = gpu_model(pool.gpu_model)
    if name in ("all-disabled", "all-enabled"):
        return {}
    if gpu is None or not name.startswith("all-"):
        return None
    named = gpu.named_mig_configs()
    return dict(named[name]) if name in named else None


def _custom_mig(configs: dict[str, Any], pool: GpuNodePool, name: str) -> dict[str, int] | None:
    if name not in configs:
        return None
    gpu = gpu_model(pool.gpu_model)
    pci: set[str] = set(gpu.pci_device_ids) if gpu else set()
    devices: dict[str, int] = {}
    for entry in as_list(configs[name]):
        e = as_map(entry)
        filters = e.get("device-filter")
        filters = [filters] if isinstance(filters, str) else [str(f) for f in as_list(filters)]
        if filters and not pci & set(filters):
            continue
        if e.get("mig-enabled"):
            for profile, count in as_map(e.get("mig-devices")).items():
                devices[str(profile)] = devices.get(str(profile), 0) + int(count)
    return devices


def mig_strategy(policy: Obj, config: dict[str, Any]) -> tuple[str, str]:
    """The device plugin's MIG strategy on the node, and what set it."""
    cluster = dig(policy, "spec", "mig", "strategy")
    if cluster:
        return str(cluster), f"{describe(policy)} spec.mig.strategy"
    own = as_map(config.get("flags")).get("migStrategy")
    return (str(own), "its config's flags.migStrategy") if own else ("none", "the plugin's default")


def mig_resources(
    view: View, release: str, policy: Obj, pool: GpuNodePool, nodes: Nodes, strategy: str
) -> tuple[set[str], str]:
    """Resources the node's MIG layout yields under the plugin's strategy; a problem text."""
    default = str(dig(policy, "spec", "migManager", "config", "default") or "all-disabled")
    name = nodes.labels.get(MIG_CONFIG_LABEL, default)
    configs, source = _mig_configs(view, release, policy)
    devices = _builtin_mig(pool, name) if configs is None else _custom_mig(configs, pool, name)
    if devices is None:
        return set(), f"{MIG_CONFIG_LABEL}={name} names no MIG config of {pool.gpu_model} in {source}"
    if not devices:
        return set(), ""
    if dig(policy, "spec", "migManager", "enabled") is False:
        return set(), f"{MIG_CONFIG_LABEL}={name} asks for MIG but the ClusterPolicy disables the MIG manager"
    if strategy == "mixed":
        return {mig_resource_name(p) for p in devices}, ""
    return {GPU_RESOURCE}, ""  # single: MIG devices as whole GPUs; none: the MIG GPUs as GPUs


# ---- GPU Operator --------------------------------------------------------------------------------


def _advertised(config: dict[str, Any], base: set[str]) -> dict[str, bool]:
    """Resource -> replicated, from a device-plugin config's sharing section."""
    result = {r: False for r in base}
    sharing = as_map(config.get("sharing"))
    for kind in ("timeSlicing", "mps"):
        block = as_map(sharing.get(kind))
        for item in as_list(block.get("resources")):
            res = as_map(item)
            name = str(res.get("name"))
            if name not in result or int(res.get("replicas") or 1) < 2:
                continue
            del result[name]
            shared = str(res.get("rename") or (f"{name}.shared" if block.get("renameByDefault") else name))
            result[shared] = True
    return result


def _plugin_config(view: View, release: str, policy: Obj, nodes: Nodes) -> tuple[dict[str, Any] | None, str]:
    config = as_map(dig(policy, "spec", "devicePlugin", "config"))
    if not config.get("name"):
        return {}, "no device-plugin config"
    key = nodes.labels.get(DEVICE_PLUGIN_CONFIG_LABEL) or str(config.get("default") or "")
    cm = _config_map(view, release, str(config["name"]))
    if cm is None:
        return None, f"the device-plugin ConfigMap {config['name']} is neither rendered nor emitted"
    data = as_map(cm.get("data"))
    if key not in data:
        return None, f"{describe(cm)} has no config {key!r} (keys: {', '.join(sorted(data))})"
    return _load(data[key]), f"config {key!r} of {describe(cm)}"


def _operator_problem(policy: Obj, nodes: Nodes) -> str | None:
    if dig(policy, "spec", "devicePlugin", "enabled") is False:
        return f"{describe(policy)} disables the device plugin"
    if nodes.labels.get(DEVICE_PLUGIN_DEPLOY_LABEL) == "false":
        return f"the nodes carry {DEVICE_PLUGIN_DEPLOY_LABEL}=false: the operator's device plugin stays off"
    tolerations = [as_map(t) for t in as_list(dig(policy, "spec", "daemonsets", "tolerations"))]
    refused = untolerated(nodes.taints, tolerations)
    if refused:
        return f"{describe(policy)}: daemonsets.tolerations do not tolerate {', '.join(refused)}"
    return None


def gpu_operator_step(view: View, pool: GpuNodePool, nodes: Nodes, resource: str) -> Step:
    release = view.release_of_chart("gpu-operator")
    unknown = view.not_rendered(release) if release else None
    if unknown:
        return not_checked(DEVICE_PLUGIN, unknown)
    policies = view.find_rendered(release, "ClusterPolicy") if release else []
    if not policies:
        return Step(DEVICE_PLUGIN, False, "no GPU Operator release renders a ClusterPolicy")
    policy = policies[0]
    problem = _operator_problem(policy, nodes)
    if problem:
        return Step(DEVICE_PLUGIN, False, problem)
    assert release is not None
    config, source = _plugin_config(view, release, policy, nodes)
    if config is None:
        return Step(DEVICE_PLUGIN, False, source)
    strategy, strategy_source = mig_strategy(policy, config)
    if as_map(config.get("sharing")).get("mps") and strategy == "mixed":
        return Step(
            DEVICE_PLUGIN,
            False,
            f"{source} asks for MPS under the mixed MIG strategy ({strategy_source}): the device plugin refuses "
            "to start (using --mig-strategy=mixed is not supported with MPS)",
        )
    base, mig_problem = mig_resources(view, release, policy, pool, nodes, strategy)
    if mig_problem:
        return Step(DEVICE_PLUGIN, False, mig_problem)
    advertised = _advertised(config, base or {GPU_RESOURCE})
    return _judge(pool, advertised, resource, f"GPU Operator device plugin ({source})")


def _judge(pool: GpuNodePool, advertised: dict[str, bool], resource: str, source: str) -> Step:
    shown = ", ".join(f"{r}{' (replicated)' if rep else ''}" for r, rep in sorted(advertised.items()))
    if resource not in advertised:
        return Step(DEVICE_PLUGIN, False, f"{source} advertises {shown or 'nothing'}, not {resource}")
    replicated = advertised[resource]
    if replicated and resource == GPU_RESOURCE:
        return Step(
            DEVICE_PLUGIN,
            False,
            f"{source} advertises shared replicas as {GPU_RESOURCE}, the name of whole GPUs: a job asking for a "
            "whole GPU may get a slice and quotas cannot tell them apart (renameByDefault: true gives "
            f"{GPU_RESOURCE}.shared)",
        )
    if pool.sharing.mode in (SharingMode.MPS, SharingMode.TIME_SLICING) and not replicated:
        return Step(DEVICE_PLUGIN, False, f"{source} advertises {resource} unshared on a {pool.sharing.mode} pool")
    return Step(DEVICE_PLUGIN, True, f"{source} advertises {shown}")


# ---- HAMi ----------------------------------------------------------------------------------------


def _hami_plugin(view: View, release: str) -> Obj | None:
    for ds in view.find_rendered(release, "DaemonSet"):
        for container in as_list(dig(ds, "spec", "template", "spec", "containers")):
            if "nvidia-device-plugin" in [str(c) for c in as_list(as_map(container).get("command"))]:
                return ds
    return None


def _hami_resource(view: View, release: str) -> str | None:
    for cm in view.find_rendered(release, "ConfigMap"):
        data = as_map(cm.get("data"))
        if "device-config.yaml" in data:
            name = dig(_load(data["device-config.yaml"]), "nvidia", "resourceCountName")
            return cast("str | None", name)
    return None


def hami_step(view: View, nodes: Nodes, resource: str) -> Step:
    release = view.release_of_chart("hami")
    unknown = view.not_rendered(release) if release else None
    if unknown:
        return not_checked(DEVICE_PLUGIN, unknown)
    plugin = _hami_plugin(view, release) if release else None
    if release is None or plugin is None:
        return Step(DEVICE_PLUGIN, False, "no HAMi release renders its device-plugin DaemonSet")
    spec = as_map(dig(plugin, "spec", "template", "spec"))
    selector = {str(k): str(v) for k, v in as_map(spec.get("nodeSelector")).items()}
    missing = {k: v for k, v in selector.items() if nodes.labels.get(k) != v}
    where = f"{describe(plugin)} (rendered from release {release})"
    if missing:
        return Step(
            DEVICE_PLUGIN,
            False,
            f"{where} selects {labels_text(selector)}; the pool's nodes do not carry {labels_text(missing)}",
        )
    refused = untolerated(nodes.taints, [as_map(t) for t in as_list(spec.get("tolerations"))])
    if refused:
        return Step(DEVICE_PLUGIN, False, f"{where} does not tolerate {', '.join(refused)}")
    counted = _hami_resource(view, release)
    if counted != resource:
        return Step(DEVICE_PLUGIN, False, f"HAMi counts {counted} (resourceCountName), not {resource}")
    if nodes.labels.get(DEVICE_PLUGIN_DEPLOY_LABEL) != "false":
        return Step(
            DEVICE_PLUGIN,
            False,
            f"the GPU Operator's device plugin also runs there ({DEVICE_PLUGIN_DEPLOY_LABEL} is not false)",
        )
    return Step(DEVICE_PLUGIN, True, f"{where} runs on the nodes and advertises {resource}")


def device_plugin_step(view: View, pool: GpuNodePool, nodes: Nodes, resource: str, flavor: str) -> Step:
    if pool.sharing.mode is SharingMode.FRACTIONAL:
        step = hami_step(view, nodes, resource)
    else:
        step = gpu_operator_step(view, pool, nodes, resource)
    return Step(step.step, step.ok, f"flavor {flavor}: {step.detail}", step.checked)
