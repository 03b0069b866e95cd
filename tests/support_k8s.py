"""Shared by the Kubernetes component tests: compile specs, record the Kubernetes side, validate.

Recordings run the real components through gpuplat.preview (the offline engine), so the tests
see the wire form of every object (camelCase keys, resolved values), as the API server would.
Validators: CRD schemas (strict), chart values keys, and the two GPU config formats
(the device plugin's `version: v1` config, NVIDIA/k8s-device-plugin api/config/v1, and
mig-parted's, NVIDIA/mig-parted api/spec/v1) encoded as small rule sets.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator

from gpuplat.catalog import GPUS, mig_layout_problems
from gpuplat.compile import Sources, compile_sources, compile_stack
from gpuplat.model import Platform, Provider
from gpuplat.plan import Plan
from gpuplat.preview import RecordedResource, record_program
from gpuplat.verify.render import SAFE_LOADER
from tests.upstream import chart_values_dir, crd_files, upstream_root

ROOT = Path(__file__).resolve().parent.parent
KUBERNETES_EXAMPLE = ROOT / "tests" / "fixtures" / "kubernetes_example.yaml"
PROJECT = "gpu-platform"
STACKS = ("dev", "staging", "prod")
RELEASE = "kubernetes:helm.sh/v3:Release"
# Stand-ins for the AWS storage outputs (plain strings, so the PVs are fully known).
AWS_REFS = {
    "file_system_id": "fs-0123456789abcdef0",
    "dns_name": "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
    "mount_name": "abcdefgh",
    "standard_file_system_id": "fs-0fedcba9876543210",
    "standard_dns_name": "fs-0fedcba9876543210.fsx.us-east-1.amazonaws.com",
    "standard_mount_name": "hgfedcba",
    "warm_bucket": "atlas-warm--use1-az4--x-s3",
    "cold_bucket": "atlas-cold",
}


def compile_kubernetes_example(path: Path = KUBERNETES_EXAMPLE) -> tuple[Platform, Plan]:
    compiled = compile_sources(Sources(path, None))
    assert compiled.ok and compiled.model is not None and compiled.plan is not None, compiled.diagnostics
    return compiled.model, compiled.plan


def compile_aws_stack(stack: str, overlay: Path | None = None) -> tuple[Platform, Plan]:
    default = ROOT / "stacks" / f"{stack}.yaml"
    compiled = compile_stack(stack, spec=str(ROOT / "platform" / "platform.yaml"), overlay=str(overlay or default))
    assert compiled.ok and compiled.model is not None and compiled.plan is not None, compiled.diagnostics
    return compiled.model, compiled.plan


def record_side(model: Platform, plan: Plan, stack: str = "dev") -> list[RecordedResource]:
    """Record the Kubernetes side alone, wired the way GpuPlatform's hook wires it."""

    def program() -> None:
        import pulumi_kubernetes as k8s

        from components.kubernetes import AwsStorageRefs, build_kubernetes_side

        provider = k8s.Provider("k8s")
        refs = AwsStorageRefs(**AWS_REFS) if model.target.provider is Provider.AWS else None
        build_kubernetes_side(None, model.metadata.name, model, plan, provider, storage=refs)

    return record_program(program, project=PROJECT, stack=stack)


@functools.cache
def recorded(which: str) -> tuple[Platform, Plan, tuple[RecordedResource, ...]]:
    """`kubernetes` (the fixture) or an aws stack name, recorded once per test session."""
    model, plan = compile_kubernetes_example() if which == "kubernetes" else compile_aws_stack(which)
    return model, plan, tuple(record_side(model, plan, "dev" if which == "kubernetes" else which))


def kubernetes_objects(resources: tuple[RecordedResource, ...]) -> list[RecordedResource]:
    """Recorded Kubernetes API objects (not Helm releases, providers or components)."""
    return [r for r in resources if r.type.startswith("kubernetes:") and r.type != RELEASE]


def is_custom_resource(resource: RecordedResource) -> bool:
    api_version = str(resource.inputs.get("apiVersion", ""))
    group = api_version.split("/")[0] if "/" in api_version else ""
    return "." in group and not group.endswith(".k8s.io")


def releases(resources: tuple[RecordedResource, ...]) -> dict[str, RecordedResource]:
    """Helm releases by release name (= catalog chart key)."""
    return {str(r.inputs["name"]): r for r in resources if r.type == RELEASE}


def by_kind(resources: tuple[RecordedResource, ...], kind: str) -> list[dict[str, Any]]:
    return [r.inputs for r in resources if r.inputs.get("kind") == kind]


# ------------------------------------------------------------------------------- CRD schemas


def _strict(schema: Any) -> Any:
    """Reject unknown fields, which the API server would otherwise silently prune."""
    if isinstance(schema, dict):
        node: dict[str, Any] = {k: _strict(v) for k, v in schema.items()}
        pattern = node.get("pattern")
        if isinstance(pattern, str) and pattern.startswith("^(?i)"):
            # RE2 (the API server's) takes flags anywhere; Python's re only at the very start.
            node["pattern"] = "(?i)^" + pattern.removeprefix("^(?i)")
        if (
            node.get("type") == "object"
            and "properties" in node
            and "additionalProperties" not in node
            and not node.get("x-kubernetes-preserve-unknown-fields")
        ):
            node["additionalProperties"] = False
        return node
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


@functools.cache
def crd_validator(api_version: str, kind: str) -> Draft202012Validator:
    group, version = api_version.split("/")
    for path in crd_files(group=group):
        crd = yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER)  # libyaml: CRDs are large
        if crd.get("kind") != "CustomResourceDefinition":
            continue
        if crd["spec"]["group"] == group and crd["spec"]["names"]["kind"] == kind:
            for served in crd["spec"]["versions"]:
                if served["name"] == version and served.get("served", False):
                    return Draft202012Validator(_strict(copy.deepcopy(served["schema"]["openAPIV3Schema"])))
            raise LookupError(f"{kind}: version {version} is not served by {path.name}")
    raise LookupError(f"no CRD for {api_version} {kind} in the upstream data ({upstream_root()})")


def crd_errors(obj: Mapping[str, Any]) -> list[str]:
    validator = crd_validator(str(obj["apiVersion"]), str(obj["kind"]))
    return [f"{'/'.join(str(p) for p in e.absolute_path)}: {e.message}" for e in validator.iter_errors(obj)]


# ------------------------------------------------------------------------------ chart values

# Keys the chart templates read that values.yaml lacks, by chart, at the pinned version; any other
# key Helm ignores. With the real charts at hand (GPUPLAT_CHARTS) a test checks each key is read
# by the chart's templates.
TEMPLATE_ONLY_KEYS: Mapping[str, tuple[str, ...]] = {
    "gpu-operator": (
        "dcgmExporter.config",
        "dcgmExporter.hpcJobMapping",
        "dcgmExporter.podLabelAllowlistRegex",
        "dcgmExporter.args",
        "dcgmExporter.imagePullSecrets",
        "operator.defaultGPUMode",
        "operator.labels",
        "operator.metrics",
        "operator.version",
        "driver.args",
        "driver.licensingConfig.configMapName",
        "hostPaths.kubeletRootDir",
        "migManager.args",
        "gfd.args",
    ),
    "hami": ("scheduler.nodeLabelSelector", "scheduler.nodeSelector", "mockDevicePlugin.tag"),
    "kueue": ("serviceAccount.create", "serviceAccount.name"),
    "aws-fsx-csi-driver": ("node.region", "node.terminationGracePeriodSeconds", "image.containerRegistry"),
    "aws-mountpoint-s3-csi-driver": (
        "node.serviceAccount.annotations",
        "node.volumes",
        "controller.nodeSelector",
        "controller.tolerations",
        "controller.serviceAccount.annotations",
    ),
    "network-operator": ("operator.tag", "operator.imagePullSecrets"),
    "sriov-network-operator": ("serviceAccount.create", "serviceAccount.name"),
    "keda": ("operator.leaderElectionID",),
}
# Maps whose keys are the user's (selectors, labels, config data), not chart settings.
OPEN_MAPS = frozenset(
    {"nodeSelector", "nvidiaNodeSelector", "configDaemonNodeSelector", "labels", "annotations", "data"}
)


def chart_dir(key: str) -> Path:
    """Chart `key`'s upstream values directory (the test fails, naming it, when it is missing)."""
    return chart_values_dir(key)


def _load(path: Path) -> dict[str, Any]:
    return yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER) or {}


def unknown_value_keys(key: str, values: Mapping[str, Any]) -> list[str]:
    """Key paths of `values` that chart `key`'s values.yaml (or a vendored subchart's) lacks."""
    directory = chart_dir(key)
    allowed = TEMPLATE_ONLY_KEYS.get(key, ())
    return list(_walk(directory, _load(directory / "values.yaml"), values, "", allowed))


def _walk(directory: Path, defaults: Any, values: Any, path: str, allowed: tuple[str, ...]) -> Iterator[str]:
    for name, value in values.items():
        here = f"{path}.{name}" if path else str(name)
        if any(here == a or here.startswith(a + ".") for a in allowed):
            continue
        subchart = directory / "charts" / str(name) / "values.yaml"
        if not path and subchart.is_file() and isinstance(value, dict):
            yield from _walk(subchart.parent, _load(subchart), value, "", ())
            continue
        if not isinstance(defaults, dict) or name not in defaults:
            yield here
            continue
        default = defaults[name]
        if isinstance(value, dict) and name not in OPEN_MAPS and default != {}:
            if not isinstance(default, dict):
                yield here  # a map where the chart has a scalar or a list
            else:
                yield from _walk(directory, default, value, here, allowed)


# ------------------------------------------------------------- device plugin config (FORMATS a)

_DP_TOP = {"version", "flags", "resources", "sharing", "imex"}
_DP_SHARING = {"renameByDefault", "failRequestsGreaterThanOne", "resources"}
_DP_RESOURCE = {"name", "rename", "replicas", "devices"}


def device_plugin_config_problems(text: str) -> list[str]:
    """Rules of the k8s-device-plugin `version: v1` config file (api/config/v1)."""
    config = yaml.safe_load(text)
    if not isinstance(config, dict):
        return ["not a mapping"]
    problems = [f"unknown key {k}" for k in config if k not in _DP_TOP]
    if config.get("version", "v1") != "v1":
        problems.append(f"version {config['version']!r} is not v1")
    strategy = (config.get("flags") or {}).get("migStrategy")
    if strategy is not None and strategy not in ("none", "single", "mixed"):
        problems.append(f"migStrategy {strategy!r}")
    sharing = config.get("sharing") or {}
    problems += [f"unknown sharing key {k}" for k in sharing if k not in ("timeSlicing", "mps")]
    if "timeSlicing" in sharing and "mps" in sharing:
        problems.append("timeSlicing and mps are mutually exclusive")
    for kind, block in sharing.items():
        if not isinstance(block, dict):
            problems.append(f"{kind} is not a mapping")
            continue
        problems += [f"unknown {kind} key {k}" for k in block if k not in _DP_SHARING]
        resources = block.get("resources")
        if not resources:
            problems.append(f"{kind}.resources is required and non-empty")
            continue
        for resource in resources:
            problems += [f"unknown resource key {k}" for k in resource if k not in _DP_RESOURCE]
            replicas = resource.get("replicas")
            if not isinstance(replicas, int) or replicas < 2:
                problems.append(f"{kind} {resource.get('name')}: replicas {replicas!r} must be an int >= 2")
            if kind == "mps" and resource.get("name") != "nvidia.com/gpu":
                problems.append("MPS shares only full GPUs (nvidia.com/gpu)")
    return problems


# ----------------------------------------------------------------- mig-parted config (FORMATS b)

MIG_PROFILE = re.compile(r"^([0-9]+c\.)?[0-9]+g\.[0-9]+gb(\+me|\+gfx|\+me\.all|-me)?$")
_MIG_ENTRY = {"device-filter", "devices", "mig-enabled", "mig-devices"}
_PCI = re.compile(r"^0x[0-9A-F]{8}$")


def _gpus_by_pci() -> dict[str, str]:
    return {pci: gpu.name for gpu in GPUS.values() for pci in gpu.pci_device_ids}


def mig_parted_problems(text: str) -> list[str]:
    """Rules of mig-parted's `version: v1` config (api/spec/v1/spec.go), plus layout validity."""
    config = yaml.safe_load(text)
    if not isinstance(config, dict):
        return ["not a mapping"]
    problems = [f"unknown top-level key {k}" for k in config if k not in ("version", "mig-configs")]
    if config.get("version") != "v1":
        problems.append("version must be v1")
    configs = config.get("mig-configs")
    if not isinstance(configs, dict) or not configs:
        return [*problems, "mig-configs must be a non-empty map"]
    pci = _gpus_by_pci()
    for name, entries in configs.items():
        if not isinstance(entries, list) or not entries:
            problems.append(f"{name}: needs at least one entry")
            continue
        for entry in entries:
            problems += [f"{name}: unknown key {k}" for k in entry if k not in _MIG_ENTRY]
            devices = entry.get("devices")
            if devices != "all" and not (isinstance(devices, list) and all(isinstance(d, int) for d in devices)):
                problems.append(f"{name}: devices must be 'all' or a list of indices")
            enabled = entry.get("mig-enabled")
            if not isinstance(enabled, bool):
                problems.append(f"{name}: mig-enabled is required (bool)")
            layout = entry.get("mig-devices")
            if enabled and layout is None:
                problems.append(f"{name}: mig-devices is required when MIG is enabled")
            if enabled is False and layout:
                problems.append(f"{name}: mig-devices must be empty when MIG is disabled")
            filters = entry.get("device-filter", [])
            filters = [filters] if isinstance(filters, str) else filters
            problems += [f"{name}: device-filter {f!r}" for f in filters if not _PCI.match(str(f))]
            for profile, count in (layout or {}).items():
                if not MIG_PROFILE.match(str(profile)):
                    problems.append(f"{name}: {profile!r} is not a MIG profile name")
                if not isinstance(count, int) or count < 0:
                    problems.append(f"{name}: {profile} count {count!r}")
            for gpu_name in {pci[f] for f in filters if f in pci}:
                problems += [f"{name} on {gpu_name}: {p}" for p in mig_layout_problems(GPUS[gpu_name], layout or {})]
    return problems
