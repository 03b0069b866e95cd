"""The capacity floor: how the pool's scaling signal changes its node count.

Per GPU pool a Deployment of placeholder pods holds nodes, one placeholder per node, and a
KEDA ScaledObject sizes it between `nodes.min` and `nodes.max` from the pool's scaling signal.

Placeholders (Deployment `capacity-floor-<pool>` in the platform's system namespace):
- one per node: required pod anti-affinity on `kubernetes.io/hostname` among the pool's
  placeholders, so N placeholders need N nodes;
- on the pool's nodes (the pool label on aws, the pool's `nodeSelector` on provider
  kubernetes), tolerating the pool's taints but never the spot taint: the floor lands on
  reserved and on-demand nodes, which are not taken back, and on aws Karpenter launches a
  node from the pool's reserved or on-demand NodePool for each placeholder that fits nowhere;
- no GPU request and a few millicores / MiB: they never hold a GPU, so every GPU stays
  admissible for Kueue (topology-aware admission counts the requests of pods it does not
  manage against existing nodes) and for any other scheduler;
- PriorityClass `<platform>-capacity-floor`, value -1 with preemptionPolicy Never: below every
  pod without a class (0), so the scheduler evicts a placeholder whenever real work needs its
  CPU or memory, while a placeholder never preempts anything. -1 stays above the cluster
  autoscaler's default expendable cutoff (-10), below which it would add no node for them
  (provider kubernetes, where a cluster autoscaler may own the node groups);
- the pause image, Pod Security `restricted` (non-root, no privilege escalation, no
  capabilities, read-only root, RuntimeDefault seccomp), no service account token.
A node running a non-daemonset pod is never empty, so Karpenter's `WhenEmpty` consolidation
keeps every node holding a placeholder, and removes the nodes the floor let go (and no work
uses) after the pool's `consolidateAfter`.

Bounds: minReplicaCount `nodes.min`, maxReplicaCount `nodes.max`. On aws the floor can only
stand on the reserved and on-demand nodes the plan gives the pool (their NodePools' limits), so
both are capped at that count: a placeholder past it would stay Pending for good. A pool with no
reserved or on-demand nodes (spot only) gets no floor: its `nodes.min` cannot be held on
capacity that is not taken back. On provider kubernetes placeholders past the existing nodes
stay Pending unless a cluster autoscaler adds nodes for them; Pending placeholders are not
counted by the HPA (below), so they do not skew it.

The Deployment's `spec.replicas` is set once, at creation, to the floor's minimum, and then
belongs to the HPA: Pulumi ignores changes to it (with server-side apply it leaves the field to
its new manager). Pulumi does not wait for the rollout: a placeholder can wait minutes for a GPU
node, or for good on a cluster without spare nodes.

Scaling (KEDA ScaledObject `capacity-floor-<pool>`, trigger `prometheus`, metricType `Value`,
threshold `scaleUpAbove`): KEDA serves the pool's signal to the HPA it creates, which computes

    desired = ceil(ready placeholders x signal / scaleUpAbove)

and leaves the floor alone while |signal / scaleUpAbove - 1| <= 0.1 (the HPA's default
tolerance). The signal (recorded per pool by Autoscaling's PrometheusRule; defined with its
inputs in gpuplat/scaling.py) is, for A the window pressure (max of utilisation and memory used)
- A when A > scaleUpAbove: desired = ceil(n x A / scaleUpAbove), the
  count at which the same work would run at scaleUpAbove;
- A x scaleUpAbove / scaleDownBelow when A < scaleDownBelow: desired = ceil(n x A /
  scaleDownBelow), e.g. 10 nodes at 0.15 with scaleDownBelow 0.3 -> 5;
- scaleUpAbove in between: ratio 1, the floor holds (hysteresis).
So the tolerance moves the effective thresholds outwards by 10 %: with scaleUpAbove 0.8 the
floor grows once A > 0.88, with scaleDownBelow 0.3 it shrinks once A < 0.27. `n` counts the
placeholders that are Running and Ready (the HPA's ready-pod count): a placeholder still
waiting for its node does not count, so the floor does not grow again on the same reading
while nodes boot. Where the pool has more nodes than the floor (Karpenter launched nodes for
pending work), growth first lands placeholders on those nodes; the loop keeps growing until
utilization falls back below scaleUpAbove.

Timing from `autoscaling.cooldown`: the HPA's scale-up and scale-down stabilization windows
(the HPA takes the lowest / highest recommendation of that window, so actions in one direction
are a cooldown apart and a reversal waits a cooldown; capped at the HPA's 3600 s), and KEDA's
cooldownPeriod (how long a pool with nodes.min 0 must be inactive before KEDA takes it to zero
placeholders; with the default activation threshold 0 that is when A is 0, fully idle GPUs).
KEDA polls every 30 s, the Prometheus rule evaluation interval.

No data: a pool without GPU metrics (no nodes yet, or its exporter down) has no signal series.
`ignoreNullValues: "false"` makes KEDA report that as an error instead of a 0 (KEDA's
default, which would read as "idle" and shrink the floor to its minimum); with no fallback
configured the HPA then keeps the current replica count, and so does KEDA. No data, no change.

KEDA scales Deployments through `deployments/scale`, which its chart's operator ClusterRole
grants. Why not KEDA on Karpenter NodePools directly: a NodePool is cluster-scoped while the
HPA's scale client addresses `/namespaces/<ns>/.../scale` (KEDA cannot scale cluster-scoped
targets), and Karpenter's static NodePools (`spec.replicas`, the alpha StaticCapacity gate)
cannot turn dynamic again and take no weight nor GPU limits.
"""

from __future__ import annotations

from typing import Any, cast

import pulumi_kubernetes as k8s

from components.conventions import POOL_LABEL, SPOT_TAINT_KEY, pool_taints
from gpuplat.model import GpuNodePool, Platform, Provider
from gpuplat.scaling import POLLING_SECONDS, floor_bounds, hpa_desired, signal_expr, signal_value, stabilization_seconds

from ._common import PAUSE_IMAGE, prefix, toleration
from .observability import PROMETHEUS_URL

# The signal's arithmetic lives with its definition (gpuplat/scaling.py), which the simulator reads.
__all__ = ["floor_bounds", "hpa_desired", "signal_expr", "signal_value"]

APP = "capacity-floor"
PRIORITY = -1
# The kubelet's node label: one placeholder per node.
HOSTNAME_KEY = "kubernetes.io/hostname"


def floor_name(pool: GpuNodePool) -> str:
    return f"{APP}-{pool.name}"


def priority_class_name(model: Platform) -> str:
    return f"{prefix(model)}-{APP}"


def floor_node_selector(model: Platform, pool: GpuNodePool) -> dict[str, str]:
    if model.target.provider is Provider.KUBERNETES:
        return dict(pool.node_selector)
    return {POOL_LABEL: pool.name}


def floor_tolerations(pool: GpuNodePool) -> list[k8s.core.v1.TolerationArgsDict]:
    """The pool's taints outside the spot market; the spot taint is never tolerated."""
    own = [toleration(t) for t in pool_taints(pool, None) if t["key"] != SPOT_TAINT_KEY]
    return cast(list[k8s.core.v1.TolerationArgsDict], own)  # key / operator / value / effect


def _selector(pool: GpuNodePool) -> dict[str, str]:
    return {"app.kubernetes.io/name": APP, POOL_LABEL: pool.name}


def pod_spec(model: Platform, pool: GpuNodePool) -> k8s.core.v1.PodSpecArgsDict:
    return {
        "priority_class_name": priority_class_name(model),
        "node_selector": floor_node_selector(model, pool),
        "tolerations": floor_tolerations(pool),
        "affinity": {
            "pod_anti_affinity": {
                "required_during_scheduling_ignored_during_execution": [
                    {"label_selector": {"match_labels": _selector(pool)}, "topology_key": HOSTNAME_KEY}
                ]
            }
        },
        "automount_service_account_token": False,
        "enable_service_links": False,
        # pause exits on SIGTERM at once; an evicted placeholder frees its node immediately.
        "termination_grace_period_seconds": 0,
        "security_context": {
            "run_as_non_root": True,
            "run_as_user": 65535,
            "run_as_group": 65535,
            "seccomp_profile": {"type": "RuntimeDefault"},
        },
        "containers": [
            {
                "name": "pause",
                "image": PAUSE_IMAGE,
                "security_context": {
                    "allow_privilege_escalation": False,
                    "read_only_root_filesystem": True,
                    "capabilities": {"drop": ["ALL"]},
                },
                "resources": {"requests": {"cpu": "1m", "memory": "8Mi"}, "limits": {"memory": "16Mi"}},
            }
        ],
    }


def deployment_spec(model: Platform, pool: GpuNodePool, replicas: int) -> k8s.apps.v1.DeploymentSpecArgsDict:
    selector = _selector(pool)
    return {
        "replicas": replicas,
        "selector": {"match_labels": selector},
        # Recreate: a surge placeholder fits on no node of the pool (one per node), so a rolling
        # update would have Karpenter launch GPU nodes just to replace the pause containers.
        "strategy": {"type": "Recreate"},
        "template": {"metadata": {"labels": selector}, "spec": pod_spec(model, pool)},
    }


def scaled_object_spec(
    model: Platform, pool: GpuNodePool, bounds: tuple[int, int], signal_series: str
) -> dict[str, Any]:
    auto = model.autoscaling
    window = stabilization_seconds(model)
    low, high = bounds
    return {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": floor_name(pool)},
        "minReplicaCount": low,
        "maxReplicaCount": high,
        "pollingInterval": POLLING_SECONDS,
        "cooldownPeriod": auto.cooldown_seconds,
        "advanced": {
            "horizontalPodAutoscalerConfig": {
                "behavior": {
                    "scaleUp": {"stabilizationWindowSeconds": window},
                    "scaleDown": {"stabilizationWindowSeconds": window},
                }
            }
        },
        "triggers": [
            {
                "type": "prometheus",
                "metricType": "Value",
                "metadata": {
                    "serverAddress": PROMETHEUS_URL,
                    "query": f'{signal_series}{{pool="{pool.name}"}}',
                    "threshold": str(auto.scale_up_above),
                    "ignoreNullValues": "false",
                },
            }
        ],
    }
