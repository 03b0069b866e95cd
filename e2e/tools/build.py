"""Build the e2e suite's tools from their Go modules into a cache outside the clone.

Each directory beside this file is a Go module of ours whose go.mod pins one upstream tool set
(`tool` directives, or a small main of ours where upstream's own main cannot be required).
A tool set is built once per machine into ``$GPUPLAT_E2E_CACHE`` (default
``~/.cache/gpuplat/e2e``), in a directory keyed by a hash of everything that decides the
binaries: the module files, our mains, the build flags and the Go version. Changing one pin
rebuilds only that set.

    python3 e2e/tools/build.py            # build what the cache lacks
    python3 e2e/tools/build.py --check    # exit 1 when something is missing, build nothing
"""

from __future__ import annotations

import argparse
import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# The Go a module of ours gets when its go.mod needs a newer one than the machine's (Karpenter
# 1.15 needs 1.26.9): the go command downloads it from the module proxy like a module
# (golang.org/toolchain). Every other module builds with the machine's Go (GOTOOLCHAIN=local),
# so a shell's GOTOOLCHAIN changes no cache key. docs/e2e.md says more.
TOOLCHAIN = "go1.27.3"


def _go_version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text.removeprefix("go"))[:3])


@functools.cache
def _local_go() -> tuple[int, ...]:
    out = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True, check=True,
                         env={**os.environ, "GOTOOLCHAIN": "local"}).stdout
    return _go_version(out.strip())


def go_env(module: Path) -> dict[str, str]:
    """The environment of a go command run in the Go module directory `module`."""
    wanted = re.search(r"^go (\S+)", (module / "go.mod").read_text(), re.M)
    newer = wanted is not None and _go_version(wanted.group(1)) > _local_go()
    return {**os.environ, "GOTOOLCHAIN": TOOLCHAIN if newer else "local"}


@dataclass(frozen=True)
class ToolSet:
    name: str
    module: str  # the upstream module whose version names the set
    # package -> binary name; "tool" builds every `tool` directive under its own name
    packages: dict[str, str] = field(default_factory=dict)
    stamps: tuple[str, ...] = ()  # -X variables set to the module's version
    # The release a pseudo-version is the commit of, when the proxy serves the module only so
    # (or the release name of a module versioned otherwise)
    release: str = ""
    # Files of the module placed beside our main before it is built, for its go:embed directives
    embeds: tuple[str, ...] = ()
    # Files of a required module shipped beside the binaries: (module, path in it, binary name)
    companions: tuple[tuple[str, str, str], ...] = ()
    tags: tuple[str, ...] = ()  # Go build tags

    @property
    def dir(self) -> Path:
        return HERE / self.name

    def version(self) -> str:
        gomod = (self.dir / "go.mod").read_text()
        found = re.search(rf"^\s*(?:require\s+)?{re.escape(self.module)} (v\S+)", gomod, re.M)
        if found is None:
            raise SystemExit(f"{self.dir / 'go.mod'}: no version of {self.module}")
        return found.group(1)

    def ldflags(self) -> str:
        version = self.release or self.version()
        flags = ["-s", "-w", *(f"-X {var}={version}" for var in self.stamps)]
        if self.module == KUBERNETES:
            major, minor = version.removeprefix("v").split(".")[:2]
            for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
                flags += [f"-X {pkg}.gitMajor={major}", f"-X {pkg}.gitMinor={minor}",
                          f"-X {pkg}.gitTreeState=clean"]
        return " ".join(flags)

    def key(self) -> str:
        digest = hashlib.sha256()
        for path in sorted(self.dir.rglob("*")):
            if path.is_file() and path.suffix in {".mod", ".sum", ".go"}:
                name = path.relative_to(self.dir).as_posix()
                digest.update(name.encode() + b"\0" + path.read_bytes())
        go_version = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True,
                                    check=True, env=go_env(self.dir)).stdout.strip()
        digest.update(f"{go_version}\0{self.ldflags()}\0{sorted(self.packages.items())}".encode())
        if self.tags:
            digest.update(f"\0tags={','.join(self.tags)}".encode())
        if self.embeds or self.companions:
            digest.update(f"\0{self.embeds}\0{self.companions}".encode())
        return digest.hexdigest()[:16]


KUBERNETES = "k8s.io/kubernetes"
_KUBE_VERSION_VARS = ("k8s.io/component-base/version.gitVersion",
                      "k8s.io/client-go/pkg/version.gitVersion")
# One control plane per Kubernetes minor a stack targets, each a module `kubernetes-<minor>/`
# (modgen.py writes it; the replace list pins every staging module to the same release).
KUBERNETES_MINORS = ("1.35", "1.36")
KUBERNETES_TOOLS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")

TOOL_SETS = (
    *(ToolSet(f"kubernetes-{minor}", KUBERNETES, {"tool": ""}, _KUBE_VERSION_VARS) for minor in KUBERNETES_MINORS),
    # etcd and kwok carry their versions in their code.
    ToolSet("etcd", "go.etcd.io/etcd/server/v3", {".": "etcd"}),
    ToolSet("kwok", "sigs.k8s.io/kwok", {"tool": ""}),
    ToolSet("kueue", "sigs.k8s.io/kueue", {"tool": ""},
            ("sigs.k8s.io/kueue/pkg/version.GitVersion",)),
    # Karpenter's kwok provider through a main of ours (main.go there says why).
    ToolSet("karpenter", "sigs.k8s.io/karpenter", {".": "karpenter-kwok"},
            ("sigs.k8s.io/karpenter/pkg/operator.Version",)),
    # The Pulumi CLI, and a Python language host of ours (langhost/main.go says why) beside it with
    # the SDK module's exec shim, which the host runs programs through.
    ToolSet("pulumi", "github.com/pulumi/pulumi/pkg/v3",
            {"github.com/pulumi/pulumi/pkg/v3/cmd/pulumi": "pulumi",
             "./langhost": "pulumi-language-python"},
            ("github.com/pulumi/pulumi/sdk/v3/go/common/version.Version",),
            companions=(("github.com/pulumi/pulumi/sdk/v3", "python/cmd/pulumi-language-python-exec",
                         "pulumi-language-python-exec"),)),
    # The Kubernetes provider. The proxy serves its module at one commit, v4.25.0's.
    ToolSet("pulumi-kubernetes", "github.com/pulumi/pulumi-kubernetes/provider/v4",
            {".": "pulumi-resource-kubernetes"},
            ("github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version",),
            release="4.25.0",
            embeds=("cmd/pulumi-resource-kubernetes/schema.json",
                    "cmd/pulumi-resource-kubernetes/terraform-mapping.json")),
    # What NVIDIA's device plugin registers from an emitted config: a main of ours driving the
    # plugin's public config package, go-nvml's mock NVML and go-nvlib (main.go says why).
    ToolSet("devices", "github.com/NVIDIA/k8s-device-plugin", {".": "devices"}),
    # The Prometheus server and promtool, with Kubernetes service discovery only (the plugins
    # package's build tags drop the cloud ones, most of the build). Stamped as Prometheus names
    # its releases: module v0.316.0 is Prometheus 3.16.0.
    ToolSet("prometheus", "github.com/prometheus/prometheus",
            {"github.com/prometheus/prometheus/cmd/prometheus": "prometheus",
             "github.com/prometheus/prometheus/cmd/promtool": "promtool"},
            ("github.com/prometheus/common/version.Version",), release="3.16.0",
            tags=("remove_all_sd", "enable_kubernetes_sd")),
    # The operator that turns ServiceMonitors and PrometheusRules into Prometheus' configuration,
    # at the version kube-prometheus-stack's chart runs (stamped as its Makefile does, no "v").
    ToolSet("prometheus-operator", "github.com/prometheus-operator/prometheus-operator",
            {"github.com/prometheus-operator/prometheus-operator/cmd/operator": "prometheus-operator"},
            ("github.com/prometheus/common/version.Version",), release="0.93.1"),
    # KEDA's operator and metrics API server at the platform's version (modgen.py writes the
    # module: KEDA's own replace list).
    ToolSet("keda", "github.com/kedacore/keda/v2",
            {"github.com/kedacore/keda/v2/cmd/operator": "keda-operator",
             "github.com/kedacore/keda/v2/cmd/adapter": "keda-adapter"},
            ("github.com/kedacore/keda/v2/version.Version",)),
    # kube-state-metrics, which kube-prometheus-stack's chart runs beside Prometheus (stamped as
    # its Makefile does, with the "v").
    ToolSet("kube-state-metrics", "k8s.io/kube-state-metrics/v2",
            {"k8s.io/kube-state-metrics/v2": "kube-state-metrics"},
            ("github.com/prometheus/common/version.Version",)),
)


def cache_root() -> Path:
    default = Path.home() / ".cache" / "gpuplat" / "e2e"
    return Path(os.environ.get("GPUPLAT_E2E_CACHE", default))


def set_dir(tool_set: ToolSet) -> Path:
    return cache_root() / f"{tool_set.name}-{tool_set.key()}"


def manifest(tool_set: ToolSet) -> dict[str, Any] | None:
    path = set_dir(tool_set) / "manifest.json"
    return json.loads(path.read_text()) if path.is_file() else None


def module_dir(module: str, cwd: Path) -> Path:
    """Where the Go module cache holds `module` at the version the go.mod in cwd selects."""
    listed = subprocess.run(["go", "mod", "download", "-json", module], cwd=cwd, check=True,
                            capture_output=True, text=True, env=go_env(cwd)).stdout
    return Path(json.loads(listed)["Dir"])


def source_dir(tool_set: ToolSet, staging: Path) -> Path:
    """The directory to build in: the module itself, or, when our main embeds files of the
    upstream module, a copy of it outside the clone with those files beside the main."""
    if not tool_set.embeds:
        return tool_set.dir
    work = staging / "src"
    shutil.copytree(tool_set.dir, work)
    upstream = module_dir(tool_set.module, tool_set.dir)
    for relative in tool_set.embeds:
        shutil.copyfile(upstream / relative, work / Path(relative).name)
    return work


def build(tool_set: ToolSet) -> dict[str, object]:
    target = set_dir(tool_set)
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "bin").mkdir(parents=True)
    started = time.monotonic()
    src = source_dir(tool_set, staging)
    base = ["go", "build", "-trimpath", "-pgo=off", "-ldflags", tool_set.ldflags()]
    if tool_set.tags:
        base += ["-tags", ",".join(tool_set.tags)]
    for package, binary in tool_set.packages.items():
        out = staging / "bin" / binary if binary else staging / "bin"
        out_arg = str(out) + ("/" if not binary else "")
        print(f"e2e-tools: building {tool_set.name} {tool_set.version()} ({package})", flush=True)
        subprocess.run([*base, "-o", out_arg, package], cwd=src, check=True, env=go_env(src))
    for module, relative, binary in tool_set.companions:
        shipped = staging / "bin" / binary
        shutil.copyfile(module_dir(module, src) / relative, shipped)
        shipped.chmod(0o755)
    shutil.rmtree(staging / "src", ignore_errors=True)
    binaries = sorted(p.name for p in (staging / "bin").iterdir())
    record: dict[str, object] = {
        "name": tool_set.name,
        "version": tool_set.version(),
        "buildSeconds": round(time.monotonic() - started, 1),
        "bytes": sum(p.stat().st_size for p in (staging / "bin").iterdir()),
        "binaries": binaries,
    }
    (staging / "manifest.json").write_text(json.dumps(record, indent=2) + "\n")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)  # a set is in the cache whole or not at all
    return record


def binaries() -> dict[str, dict[str, Path]]:
    """Kubernetes minor -> binary name -> path: every tool, with that minor's control plane."""
    common: dict[str, Path] = {}
    planes: dict[str, dict[str, Path]] = {}
    for tool_set in TOOL_SETS:
        record = manifest(tool_set)
        if record is None:
            raise SystemExit(f"e2e tools missing: {tool_set.name} (run `make e2e-tools`)")
        found = {str(name): set_dir(tool_set) / "bin" / str(name) for name in record["binaries"]}  # type: ignore[union-attr]
        if tool_set.module == KUBERNETES:
            planes[tool_set.name.removeprefix("kubernetes-")] = found
        else:
            common.update(found)
    return {minor: {**common, **plane} for minor, plane in planes.items()}


def summary() -> dict[str, Any]:
    records = [manifest(tool_set) or {} for tool_set in TOOL_SETS]
    return {
        **{tool_set.name: tool_set.version() for tool_set in TOOL_SETS},
        "buildSeconds": round(sum(float(r.get("buildSeconds", 0)) for r in records), 1),
        "cacheBytes": sum(int(r.get("bytes", 0)) for r in records),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report what is missing")
    parser.add_argument("sets", nargs="*", help="tool sets to build (default: all)")
    args = parser.parse_args()
    wanted = [t for t in TOOL_SETS if not args.sets or t.name in args.sets]
    missing = [t for t in wanted if manifest(t) is None]
    for tool_set in wanted:
        state = "missing" if tool_set in missing else "cached"
        print(f"e2e-tools: {tool_set.name} {tool_set.version()}: {state} ({set_dir(tool_set)})")
    if args.check:
        sys.exit(1 if missing else 0)
    cache_root().mkdir(parents=True, exist_ok=True)
    with (cache_root() / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second build waits, then finds the first one's sets
        for tool_set in wanted:
            if manifest(tool_set) is None:
                record = build(tool_set)
                print(f"e2e-tools: {tool_set.name}: {record['buildSeconds']} s, {record['bytes']} bytes")


if __name__ == "__main__":
    main()
