"""Upstream data the tests and the e2e suite read (CRDs, charts' values.yaml), from wherever it is.

Every file is named by its path in the upstream data directory (`kueue/kueue.x-k8s.io_clusterqueues.yaml`,
`charts/kueue/values.yaml`, ...) and looked for, in this order:

1. in that directory, beside the clone (`../shared/upstream`) or at `$GPUPLAT_UPSTREAM`, read in place,
   unless the project's chart there says another release than the pinned one (`RELEASE_CHART`):
   a copy of another release would judge what gpuplat emits by the wrong schema;
2. in the Go module that carries the pinned release's copy (the table below), downloaded through
   the Go module proxy into Go's module cache by `go mod download`, which checks the zip against
   the go.sum of e2e/tools/upstream-data (the pins; run in a scratch copy, so nothing is written
   into the clone);
3. nowhere: `UpstreamMissing`, whose message is one line saying why. The tests skip on it
   (tests/conftest.py); the e2e suite reports it.

Which module holds what, and what no module holds at the pinned release, is docs/development.md's
"Upstream data" table. Standard library only: both tests/ and e2e/ import it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from e2e.tools.build import go_env

ROOT = Path(__file__).resolve().parent.parent
GO_MODULE = Path(__file__).resolve().parent / "tools" / "upstream-data"
UPSTREAM_ENV = "GPUPLAT_UPSTREAM"
DOWNLOAD_TIMEOUT = 600.0

KUEUE = "sigs.k8s.io/kueue"
KARPENTER = "github.com/aws/karpenter-provider-aws"
KEDA = "github.com/kedacore/keda/v2"
PROMETHEUS_OPERATOR = "github.com/prometheus-operator/prometheus-operator"
SRIOV = "github.com/k8snetworkplumbingwg/sriov-network-operator"

# Directory of the data directory -> (module, directory in it) holding the pinned release's files.
IN_MODULES: dict[str, tuple[str, str]] = {
    "kueue": (KUEUE, "config/components/crd/bases"),
    "charts/kueue": (KUEUE, "charts/kueue"),
    # The chart's crds/ link here; karpenter.sh's CRDs carry the AWS provider's label rules.
    "karpenter": (KARPENTER, "pkg/apis/crds"),
    "charts/karpenter": (KARPENTER, "charts/karpenter"),
    "charts/karpenter-crd": (KARPENTER, "charts/karpenter-crd"),
    "keda": (KEDA, "config/crd/bases"),
    "prometheus-operator": (PROMETHEUS_OPERATOR, "example/prometheus-operator-crd"),
    "sriov-network-operator": (SRIOV, "config/crd/bases"),
    "charts/sriov-network-operator": (SRIOV, "deployment/sriov-network-operator-chart"),
}
# Directory of the data directory -> the chart in it whose appVersion says which release the
# directory's files are of. The data directory is read only where that is the module's pinned release.
RELEASE_CHART: dict[str, str] = {
    "kueue": "charts/kueue", "charts/kueue": "charts/kueue",
    "karpenter": "charts/karpenter", "charts/karpenter": "charts/karpenter", "charts/karpenter-crd": "charts/karpenter",
    "keda": "charts/keda",
    "prometheus-operator": "charts/kube-prometheus-stack",
    "sriov-network-operator": "charts/sriov-network-operator",
    "charts/sriov-network-operator": "charts/sriov-network-operator",
}
_GPU_OPERATOR = ("the module proxy serves github.com/NVIDIA/gpu-operator only at v0.0.0-20250917190837-d73a0086a6ba, "
                 "not v26.7.0 (10ee5b36)")
_NOT_SERVED = "is not served by the module proxy"
# Directories no module on the proxy holds at the pinned release, and why.
NOT_IN_MODULES: dict[str, str] = {
    "gpu-operator": _GPU_OPERATOR,
    "charts/gpu-operator": _GPU_OPERATOR,
    "charts/hami": f"github.com/Project-HAMi/HAMi {_NOT_SERVED}",
    "charts/keda": "the module proxy serves github.com/kedacore/charts only at a later commit "
                   "(v2.20.3-0.20260903105638-fe065f4d8938+incompatible), not chart 2.20.2",
    "charts/kube-prometheus-stack": "the module proxy serves github.com/prometheus-community/helm-charts only at "
                                    "later commits (chart 88.6.1), not kube-prometheus-stack-88.5.3",
    "charts/aws-efa-k8s-device-plugin": "the module proxy serves github.com/aws/eks-charts only at a later commit "
                                        "(v0.0.243-0.20260821194545-743f98a89b5b), not v0.0.242",
    "charts/aws-fsx-csi-driver": f"sigs.k8s.io/aws-fsx-csi-driver {_NOT_SERVED}",
    "charts/aws-mountpoint-s3-csi-driver": f"github.com/awslabs/mountpoint-s3-csi-driver {_NOT_SERVED}",
    "network-operator": f"github.com/Mellanox/network-operator {_NOT_SERVED}",
    "charts/network-operator": f"github.com/Mellanox/network-operator {_NOT_SERVED}",
    "nv-ipam": f"github.com/Mellanox/nvidia-k8s-ipam {_NOT_SERVED}",
    "charts/dcgm-exporter": f"github.com/NVIDIA/dcgm-exporter {_NOT_SERVED}",
}
# Every CRD the tests and the e2e suite read: <project>/<group>_<plural>.yaml.
CRDS: tuple[str, ...] = (
    "gpu-operator/nvidia.com_clusterpolicies.yaml",
    "gpu-operator/nvidia.com_nvidiadrivers.yaml",
    "karpenter/autoscaling.x-k8s.io_capacitybuffers.yaml",
    "karpenter/karpenter.k8s.aws_ec2nodeclasses.yaml",
    "karpenter/karpenter.sh_nodeclaims.yaml",
    "karpenter/karpenter.sh_nodeoverlays.yaml",
    "karpenter/karpenter.sh_nodepools.yaml",
    "keda/keda.sh_scaledobjects.yaml",
    *(f"kueue/kueue.x-k8s.io_{plural}.yaml" for plural in (
        "admissionchecks", "clusterqueues", "cohorts", "localqueues", "multikueueclusters", "multikueueconfigs",
        "provisioningrequestconfigs", "resourceflavors", "topologies", "workloadpriorityclasses", "workloads")),
    "network-operator/mellanox.com_nicclusterpolicies.yaml",
    "nv-ipam/nv-ipam.nvidia.com_ippools.yaml",
    "prometheus-operator/monitoring.coreos.com_podmonitors.yaml",
    "prometheus-operator/monitoring.coreos.com_prometheusrules.yaml",
    "prometheus-operator/monitoring.coreos.com_servicemonitors.yaml",
    "sriov-network-operator/sriovnetwork.openshift.io_sriovibnetworks.yaml",
    "sriov-network-operator/sriovnetwork.openshift.io_sriovnetworknodepolicies.yaml",
    "sriov-network-operator/sriovnetwork.openshift.io_sriovnetworks.yaml",
)


class UpstreamMissing(Exception):
    """An upstream file is neither in the data directory nor in a module this machine can get."""


def data_dir() -> Path:
    return Path(os.environ.get(UPSTREAM_ENV) or ROOT.parent / "shared" / "upstream")


def resolve(relative: str) -> Path:
    """The file (or directory) at `relative` in the data directory's layout, wherever it is."""
    here = data_dir() / relative
    directory = max((d for d in (*IN_MODULES, *NOT_IN_MODULES) if relative.startswith(f"{d}/")), key=len, default=None)
    if directory in IN_MODULES:
        held = data_release(directory)
        if here.exists() and held is None:
            return here
        return _from_module(relative, directory, held)
    if here.exists():
        return here
    if directory is None:
        raise LookupError(f"{relative}: no upstream directory of e2e/upstream.py holds it; add it to the table")
    raise UpstreamMissing(f"{relative} is not in {data_dir()}, and {NOT_IN_MODULES[directory]}")


def data_release(directory: str) -> str | None:
    """The release the data directory's copy of `directory` is of, when it is not the pinned one
    (None: it is, or its chart does not say)."""
    chart = data_dir() / RELEASE_CHART.get(directory, "-") / "Chart.yaml"
    found = re.search(r"^appVersion:\s*[\"']?([^\"'\s]+)", chart.read_text(encoding="utf-8"), re.M) \
        if chart.is_file() else None
    if found is None:
        return None
    pinned = required()[IN_MODULES[directory][0]]
    return None if found.group(1).removeprefix("v") == pinned.removeprefix("v") else found.group(1)


def _from_module(relative: str, directory: str, held: str | None) -> Path:
    module, inside = IN_MODULES[directory]
    pinned = required()[module]
    where = (f"{data_dir()} holds {RELEASE_CHART[directory].removeprefix('charts/')} {held}, not the pinned {pinned}"
             if held else f"{relative} is not in {data_dir()}")
    try:
        path = module_dir(module) / inside / relative.removeprefix(f"{directory}/")
    except UpstreamMissing as err:
        raise UpstreamMissing(f"{where}, and {err}" if held else str(err)) from None
    if not path.exists():
        raise UpstreamMissing(f"{where}, nor is it at {inside} of {module} {pinned}")
    return path


def crd_files(*, directory: str | None = None, group: str | None = None) -> list[Path]:
    """The CRD files of `directory` (a project's) or of API `group`, every one of them or UpstreamMissing."""
    chosen = [c for c in CRDS if (directory is None or c.startswith(f"{directory}/"))
              and (group is None or Path(c).name.startswith(f"{group}_"))]
    return [resolve(c) for c in chosen]


def prefetch() -> None:
    """Find every CRD now (downloading its module while the proxy is reachable); what is found
    nowhere is reported where it is read."""
    for crd in CRDS:
        with contextlib.suppress(UpstreamMissing):
            resolve(crd)


def required() -> dict[str, str]:
    """Module -> version, as the go.mod of the pins requires it."""
    text = (GO_MODULE / "go.mod").read_text(encoding="utf-8")
    return dict(re.findall(r"^\s+(\S+) (v\S+)\s*$", text, re.M))


def sums() -> dict[str, str]:
    """Module@version -> the h1: hash of its zip, as go.sum pins it."""
    text = (GO_MODULE / "go.sum").read_text(encoding="utf-8")
    return {f"{m}@{v}": h for m, v, h in re.findall(r"^(\S+) (v[^/\s]+) (h1:\S+)$", text, re.M)}


_FOUND: dict[str, Path | UpstreamMissing] = {}


def module_dir(module: str) -> Path:
    """Where Go's module cache holds `module` at the pinned version (downloading it if needed)."""
    if module not in _FOUND:
        try:
            _FOUND[module] = _download(module, required()[module])
        except UpstreamMissing as err:
            _FOUND[module] = err
    found = _FOUND[module]
    if isinstance(found, UpstreamMissing):
        raise found
    return found


def _download(module: str, version: str) -> Path:
    go = shutil.which("go")
    if go is None:
        raise UpstreamMissing(f"{module} {version}: no `go` on PATH to download it with")
    pinned = sums().get(f"{module}@{version}")
    if pinned is None:
        raise UpstreamMissing(f"{module} {version}: go.sum of {GO_MODULE.relative_to(ROOT)} has no hash for it")
    # A scratch copy: `go mod download` may write go.sum, and the clone is never written.
    with tempfile.TemporaryDirectory(prefix="gpuplat-upstream-") as work:
        for name in ("go.mod", "go.sum"):
            shutil.copyfile(GO_MODULE / name, Path(work) / name)
        try:
            done = subprocess.run([go, "mod", "download", "-json", f"{module}@{version}"], cwd=work,
                                  env=go_env(GO_MODULE), capture_output=True, text=True,
                                  timeout=DOWNLOAD_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise UpstreamMissing(f"{module} {version}: go mod download took over {DOWNLOAD_TIMEOUT:.0f} s") from None
    try:
        listed = json.loads(done.stdout)
    except json.JSONDecodeError:
        listed = {}
    error = listed.get("Error") or (done.stderr.strip() if done.returncode else "")
    if error or not listed.get("Dir"):
        reason = " ".join(str(error or "no module directory").split())
        raise UpstreamMissing(f"{module} {version} could not be downloaded: {reason}")
    if listed.get("Sum") != pinned:
        raise UpstreamMissing(f"{module} {version}: its hash {listed.get('Sum')} is not go.sum's {pinned}")
    return Path(listed["Dir"])
