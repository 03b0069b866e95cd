# pyright: strict
"""Step 9, repair: what replaces the pool's failed node, as emitted (docs/health.md).

aws: Karpenter repairs a node only with its `NodeRepair` feature gate on, read from the
controller Deployment the Karpenter release renders (FEATURE_GATES), and acts on conditions
something must set: the EKS node monitoring agent add-on sets `AcceleratedHardwareReady` and
the others (kubelet `Ready` is the kubelet's own). The gate must say what the pool's
`health.repair` says, and with `reboot` the AWS provider's `RebootForRepair` gate too
(AWS_FEATURE_GATES). Provider kubernetes: nothing gpuplat runs replaces a node.
On both the step also reads the fence: the GPU fencer's Deployment, which taints a node on
GpuHealth's critical alerts and, on aws, the moment the agent's condition turns False, whatever
the pool's repair.
"""

from __future__ import annotations

from dataclasses import replace

from gpuplat.catalog.labels import GPU_FENCE_TAINT, GPU_FENCER
from gpuplat.model import GpuNodePool, Platform, Provider, Repair

from .k8s import as_list, as_map, dig
from .types import REPAIR, Step, not_checked
from .view import View

DETECTOR_ADDON = "eks-node-monitoring-agent"


def feature_gates(view: View, variable: str = "FEATURE_GATES") -> tuple[dict[str, bool] | None, str]:
    """Karpenter's feature gates as its controller runs them (None: unknown, its chart not given);
    `variable`: AWS_FEATURE_GATES for the AWS provider's own."""
    release = view.release_of_chart("karpenter")
    if release is None:
        return {}, "no Karpenter release is emitted"
    unknown = view.not_rendered(release)
    if unknown:
        return None, unknown
    for deployment in view.find_rendered(release, "Deployment"):
        for container in as_list(dig(deployment, "spec", "template", "spec", "containers")):
            for env in as_list(as_map(container).get("env")):
                if as_map(env).get("name") == variable:
                    text = str(as_map(env).get("value"))
                    pairs = (g.partition("=") for g in text.split(",") if g)
                    return {k: v == "true" for k, _, v in pairs}, f"{variable} {text}"
    return {}, f"release {release} renders no {variable}"


def fencer_env(view: View) -> dict[str, str]:
    """The GPU fencer container's environment, as emitted (empty: no fencer Deployment)."""
    for deployment in view.find("Deployment", name=GPU_FENCER):
        for container in as_list(dig(deployment, "spec", "template", "spec", "containers")):
            return {str(as_map(e).get("name")): str(as_map(e).get("value", "")) for e in as_list(
                as_map(container).get("env"))}
    return {}


def fence_words(view: View, provider: Provider) -> str | None:
    """What fences a node on a GPU fault, as emitted (None: nothing does): on aws the agent's
    condition, at once; on kubernetes the fatal-XID alert, by the next poll."""
    env = fencer_env(view)
    if provider is Provider.AWS:
        if "AcceleratedHardwareReady" in env.get("FENCE_CONDITIONS", "").split(","):
            return f"Deployment {GPU_FENCER} taints it {GPU_FENCE_TAINT}:NoSchedule at once"
        return None
    alerts = [a for a in env.get("FENCE_ALERTS", "").split(",") if a]
    if "GpuFatalXid" in alerts and env.get("FENCE_PROMETHEUS_URL"):
        return (f"Deployment {GPU_FENCER} taints it {GPU_FENCE_TAINT}:NoSchedule while {', '.join(alerts)} fires "
                f"for it at {env['FENCE_PROMETHEUS_URL']}")
    return None


def repair_step(view: View, model: Platform, pool: GpuNodePool) -> Step:
    prefix = f"pool {pool.name}"
    fence = fence_words(view, model.target.provider)
    if model.target.provider is not Provider.AWS:
        if fence is None:
            return Step(REPAIR, False, f"{prefix}: no {GPU_FENCER} Deployment fences a node on GpuFatalXid: a node "
                        "whose GPU failed takes new work until someone cordons it")
        return Step(REPAIR, True, f"{prefix}: health.repair none; no node is replaced (the cluster's own nodes); "
                    f"on a GPU fault, {fence}")
    step = _aws_repair(view, pool)
    if fence is None:
        return Step(REPAIR, False, f"{step.detail}; and no {GPU_FENCER} Deployment fences a node whose "
                    "AcceleratedHardwareReady is False: it takes new work until it is repaired")
    return replace(step, detail=f"{step.detail}; on the fault, {fence}") if step.ok and step.checked else step


def _aws_repair(view: View, pool: GpuNodePool) -> Step:
    prefix = f"pool {pool.name}"
    wanted = pool.health.repair is not Repair.NONE
    gates, said = feature_gates(view)
    if gates is None:
        why = f"{prefix}: health.repair {pool.health.repair}; whether its feature gate is on: {said}"
        return not_checked(REPAIR, why)
    on = gates.get("NodeRepair", False)
    if wanted and not on:
        return Step(REPAIR, False, f"{prefix}: health.repair {pool.health.repair}, but Karpenter's NodeRepair gate is "
                    f"off ({said})")
    if not wanted and on:
        return Step(
            REPAIR, False, f"{prefix}: health.repair none, but Karpenter's NodeRepair gate is on ({said}): it replaces "
            "the pool's unhealthy nodes"
        )
    if not wanted:
        return Step(REPAIR, True, f"{prefix}: health.repair none; Karpenter's NodeRepair gate off ({said})")
    if DETECTOR_ADDON not in view.addons:
        return Step(
            REPAIR, False, f"{prefix}: Karpenter's NodeRepair gate is on, but no EKS add-on {DETECTOR_ADDON} is "
            "emitted: nothing sets AcceleratedHardwareReady, so a failed GPU is never repaired"
        )
    reboot = reboot_gate(view, pool)
    if isinstance(reboot, Step):
        return reboot
    return Step(
        REPAIR, True, f"{prefix}: Karpenter's NodeRepair gate on ({said}); add-on {DETECTOR_ADDON} sets "
        f"AcceleratedHardwareReady, a node unhealthy for 10 minutes is {reboot}"
    )


def reboot_gate(view: View, pool: GpuNodePool) -> Step | str:
    """What the AWS provider's RebootForRepair gate does to a GPU fault, as the pool's repair
    wants it (the words for the step), else the failed or unchecked step."""
    prefix, wanted = f"pool {pool.name}", pool.health.repair is Repair.REBOOT
    gates, said = feature_gates(view, "AWS_FEATURE_GATES")
    if gates is None:
        why = f"{prefix}: health.repair {pool.health.repair}; whether RebootForRepair is on: {said}"
        return not_checked(REPAIR, why)
    on = gates.get("RebootForRepair", False)
    if wanted != on:
        return Step(REPAIR, False, f"{prefix}: health.repair {pool.health.repair}, but the AWS provider's "
                    f"RebootForRepair gate is {'on' if on else 'off'} ({said})")
    if on:
        return "rebooted in place for a reboot-clearable XID (RebootForRepair on), replaced for any other"
    return "replaced"
