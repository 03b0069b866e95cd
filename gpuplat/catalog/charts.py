# pyright: strict
"""Helm charts the platform installs: where from, which version, into which namespace.

Source: each chart's upstream repository at the tag and commit its entry names (chart name,
install location, chart version, appVersion). The newest stable release of each chart as of
2026-08-21. The tests read each chart's values.yaml and the CRDs of these versions from the
upstream data directory beside the clone, else from the Go modules of these releases
(tests/upstream.py, docs/development.md); the repository holds no copy.

Local charts: the stack setting `gpuplat:localCharts` names a directory holding one
subdirectory per chart key (DIR/kueue, DIR/hami, ...), e.g. filled by `gpuplat charts pull
--into DIR` at the versions below. The components then install from there (no repository), and
`gpuplat verify` renders from there, else from the chart cache `gpuplat charts pull` fills
(docs/charts.md).

Versions are the published chart versions, not the ``Chart.yaml`` at the tag: gpu-operator,
karpenter, karpenter-crd and sriov-network-operator rewrite theirs at release time.

OCI charts: ``helm.v3.Release`` takes an OCI chart as the full ``oci://registry/path/chart``
in ``chart`` and no ``repository_opts``. ``repo`` then holds the ``oci://`` prefix without
the chart name, and ``release_chart`` / ``release_repo`` give what to pass to Release.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePath
from types import MappingProxyType


@dataclass(frozen=True)
class Chart:
    key: str
    chart: str
    repo: str
    version: str
    namespace: str
    crd_api_versions: tuple[str, ...]
    app_version: str = ""
    source: str = ""  # upstream repository, path and tag (commit) of the chart

    @property
    def is_oci(self) -> bool:
        return self.repo.startswith("oci://")

    @property
    def release_chart(self) -> str:
        """The ``chart`` argument of ``helm.v3.Release``."""
        return f"{self.repo.rstrip('/')}/{self.chart}" if self.is_oci else self.chart

    @property
    def release_repo(self) -> str | None:
        """``repository_opts.repo`` of ``helm.v3.Release``; None for OCI charts."""
        return None if self.is_oci else self.repo


# The driver the gpu-operator chart above installs by default (values.yaml driver.repository,
# .image, .version, .kernelModuleType): an NVIDIADriver of the platform's own names the same one.
GPU_DRIVER_REPOSITORY, GPU_DRIVER_IMAGE, GPU_DRIVER_VERSION = "nvcr.io/nvidia", "driver", "595.91.07"
GPU_DRIVER_KERNEL_MODULE_TYPE = "auto"

LOCAL_CHARTS_NAMESPACE, LOCAL_CHARTS_KEY = "gpuplat", "localCharts"
LOCAL_CHARTS_SETTING = f"{LOCAL_CHARTS_NAMESPACE}:{LOCAL_CHARTS_KEY}"


def local_chart(directory: str, key: str) -> str:
    """The ``chart`` argument of a release installed from a local chart directory."""
    return str(PurePath(directory) / key)


def chart_of_release(chart_ref: object) -> Chart | None:
    """The catalog chart a release's ``chart`` argument names: its repository reference, or a
    local chart directory named after the chart's key."""
    if not isinstance(chart_ref, str) or not chart_ref:
        return None
    for chart in CHARTS.values():
        if chart_ref == chart.release_chart:
            return chart
    local = PurePath(chart_ref)
    chart = CHARTS.get(local.name)
    return chart if chart is not None and len(local.parts) > 1 else None


_NGC = "https://helm.ngc.nvidia.com/nvidia"

_CHARTS = (
    Chart(
        "gpu-operator",
        "gpu-operator",
        _NGC,
        "v26.7.0",
        "gpu-operator",
        ("nvidia.com/v1", "nvidia.com/v1alpha1"),
        "v26.7.0",
        "NVIDIA/gpu-operator deployments/gpu-operator @ v26.7.0 (10ee5b36)",
    ),
    Chart(
        "hami",
        "hami",
        "https://project-hami.github.io/HAMi/",
        "2.10.0",
        "hami-system",
        (),
        "2.10.0",
        "Project-HAMi/HAMi charts/hami @ v2.10.0 (4707fb02)",
    ),
    Chart(
        "kueue",
        "kueue",
        "oci://registry.k8s.io/kueue/charts",
        "0.19.2",
        "kueue-system",
        # v1beta2 is the storage version; v1beta1 is still served but deprecated.
        ("kueue.x-k8s.io/v1beta2",),
        "v0.19.2",
        "kubernetes-sigs/kueue charts/kueue @ v0.19.2 (8eab6877)",
    ),
    # Both Karpenter charts carry the same CRDs. Installing karpenter-crd as its own
    # release lets CRD upgrades happen (Helm never upgrades a chart's crds/ directory), so
    # the karpenter release should then skip its CRDs.
    Chart(
        "karpenter",
        "karpenter",
        "oci://public.ecr.aws/karpenter",
        "1.15.2",
        "karpenter",
        ("karpenter.sh/v1", "karpenter.k8s.aws/v1"),
        "1.15.2",
        "aws/karpenter-provider-aws charts/karpenter @ v1.15.2 (the module proxy's zip of the tag, 2026-11-12)",
    ),
    Chart(
        "karpenter-crd",
        "karpenter-crd",
        "oci://public.ecr.aws/karpenter",
        "1.15.2",
        "karpenter",
        ("karpenter.sh/v1", "karpenter.k8s.aws/v1"),
        "1.15.2",
        "aws/karpenter-provider-aws charts/karpenter-crd @ v1.15.2 (the module proxy's zip of the tag, 2026-11-12)",
    ),
    Chart(
        "kube-prometheus-stack",
        "kube-prometheus-stack",
        "https://prometheus-community.github.io/helm-charts",
        "88.5.3",
        "monitoring",
        ("monitoring.coreos.com/v1",),
        "v0.93.1",
        "prometheus-community/helm-charts charts/kube-prometheus-stack @ kube-prometheus-stack-88.5.3 (ea930bae)",
    ),
    Chart(
        "keda",
        "keda",
        "https://kedacore.github.io/charts",
        "2.20.2",
        "keda",
        ("keda.sh/v1alpha1",),
        "2.20.2",
        "kedacore/charts keda @ v2.20.2 (cbb9bb8c)",
    ),
    # The three AWS drivers go where their upstream install guides put them.
    Chart(
        "aws-efa-k8s-device-plugin",
        "aws-efa-k8s-device-plugin",
        "https://aws.github.io/eks-charts",
        "v0.5.30",
        "kube-system",
        (),
        "v0.5.20",
        "aws/eks-charts stable/aws-efa-k8s-device-plugin @ v0.0.242 (52396092)",
    ),
    Chart(
        "aws-fsx-csi-driver",
        "aws-fsx-csi-driver",
        "https://kubernetes-sigs.github.io/aws-fsx-csi-driver",
        "1.17.0",
        "kube-system",
        (),
        "1.9.0",
        "kubernetes-sigs/aws-fsx-csi-driver charts/aws-fsx-csi-driver "
        "@ helm-chart-aws-fsx-csi-driver-1.17.0 (5b227125)",
    ),
    Chart(
        "aws-mountpoint-s3-csi-driver",
        "aws-mountpoint-s3-csi-driver",
        "https://awslabs.github.io/mountpoint-s3-csi-driver",
        "2.7.0",
        "kube-system",
        (),
        "v2.7.0",
        "awslabs/mountpoint-s3-csi-driver charts/aws-mountpoint-s3-csi-driver @ v2.7.0 (a2d4b067)",
    ),
    Chart(
        "sriov-network-operator",
        "sriov-network-operator-chart",
        "oci://ghcr.io/k8snetworkplumbingwg",
        "1.6.0",
        "sriov-network-operator",
        ("sriovnetwork.openshift.io/v1",),
        "v1.6.0",
        "k8snetworkplumbingwg/sriov-network-operator deployment/sriov-network-operator-chart @ v1.6.0 (1f5be4c5)",
    ),
    # The chart renders no NicClusterPolicy since v24.10.0; we emit it ourselves.
    Chart(
        "network-operator",
        "network-operator",
        _NGC,
        "26.4.1",
        "nvidia-network-operator",
        ("mellanox.com/v1alpha1",),
        "v26.4.1",
        "Mellanox/network-operator deployment/network-operator @ v26.4.1 (85afd6d9)",
    ),
    # Only for clusters without the GPU Operator's own exporter; beside the Prometheus
    # that scrapes it, since it brings no CRDs and no GPU-side config.
    Chart(
        "dcgm-exporter",
        "dcgm-exporter",
        "https://nvidia.github.io/dcgm-exporter/helm-charts",
        "4.8.2",
        "monitoring",
        (),
        "4.8.2",
        "NVIDIA/dcgm-exporter deployment @ 4.5.3-4.8.2 (691c9276)",
    ),
)

CHARTS: Mapping[str, Chart] = MappingProxyType({c.key: c for c in _CHARTS})

# Mountpoint S3 CSI v2 runs its mount pods here (chart value mountpointPod.namespace).
MOUNTPOINT_NAMESPACE = "mount-s3"
KUBERNETES_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})


def platform_namespaces(platform_name: str) -> frozenset[str]:
    """Namespaces the platform itself owns: its charts', the mount pods', its own system one.

    A tenant named after one would share it with the platform (and its Pod Security level).
    """
    return frozenset({c.namespace for c in CHARTS.values()} | {MOUNTPOINT_NAMESPACE, f"{platform_name}-system"})
