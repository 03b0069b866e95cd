"""The GPU-failure scenarios of one target (docs/health.md): on aws the real Karpenter repairs the
failed node; on provider kubernetes nothing replaces a node, the operator cordons and drains it;
on both, Kueue replaces a fenced node in a topology-aware job's assignment."""

from __future__ import annotations

from e2e import fence, reboot, repair, repair_share, requeue, resume, tas_replace
from e2e.cluster import Cluster
from e2e.report import Report
from e2e.stack import Stack


def scenarios(cluster: Cluster, stack: Stack, report: Report, timeout: float) -> None:
    if stack.provider == "aws":
        fence.fence(cluster, stack, report, timeout)
        repair.node_failure(cluster, stack, report, timeout)
        reboot.node_reboot(cluster, stack, report, timeout)
        resume.multinode(cluster, stack, report, timeout)
        repair_share.unhealthy_share(cluster, stack, report, timeout)
    else:
        for name in ("gpu-node-failure", reboot.ROW, resume.ROW, repair_share.SHARE):
            report.skip(stack.target.label, name, "provider kubernetes: no Karpenter removes the failed node")
        report.skip(stack.target.label, fence.ROW,
                    "provider kubernetes: no detector sets a GPU node condition; the fencer acts on the GpuHealth "
                    "alerts there (gpu-node-fence-alert)")
        requeue.drain_requeue(cluster, stack, report, timeout)
    tas_replace.replacement(cluster, stack, report, timeout)
