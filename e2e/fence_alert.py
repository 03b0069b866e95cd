"""The GPU fence on GpuHealth's alerts: an XID on a node's GPU, through the real Prometheus and
the emitted rules, taints the node; the alert resolving lifts it.

On provider kubernetes no detector sets a GPU node condition, so the alerts are the fencer's
only signal (on aws it reads the condition too; the condition rows of e2e/fence.py run there).
The scenario runs inside the autoscaling loop (e2e/autoscale.py), where the real Prometheus
scrapes the DCGM exporter's stand-in and evaluates the emitted PrometheusRules:

- the exporter's endpoint for one pool node reports XID 79 on its GPU 0 (e2e/exporter.py);
- Prometheus scrapes it and fires `GpuFatalXid` (the emitted rule; the suite reads `ALERTS`);
- the emitted fencer, run as its pod would (e2e/fence.py: script and environment from the
  cluster, a token of its service account) with the Prometheus Service name it is given resolved
  to the suite's Prometheus, polls the alerts and taints the node;
- the real scheduler refuses the node to a probe pod that tolerates every other taint on it;
- the exporter reports no XID again: the alert resolves, the taint goes, the probe binds.
"""

from __future__ import annotations

import time
from pathlib import Path

from components.conventions import POOL_LABEL
from components.kubernetes.node_fencer import POLL_SECONDS, TAINT_KEY
from e2e import autoscale, fence, prometheus
from e2e.cluster import Cluster, E2EError, wait_for
from e2e.report import Report
from e2e.stack import Stack

ROW = "gpu-node-fence-alert"
ALERT = "GpuFatalXid"
XID = 79  # fallen off the bus
# Scrape and rule evaluation every 30 s (the chart's defaults), then the fencer's poll.
FIRING_SECONDS = 150
FENCE_SECONDS = POLL_SECONDS + 30


def firing(loop: autoscale.Loop, node: str) -> bool | None:
    found = loop.prometheus.query(f'ALERTS{{alertname="{ALERT}", alertstate="firing", node="{node}"}}')
    return True if found else None


def resolved(loop: autoscale.Loop, node: str) -> bool | None:
    return None if loop.prometheus.query(f'ALERTS{{alertname="{ALERT}", node="{node}"}}') else True


def alert_fence(cluster: Cluster, stack: Stack, report: Report, loop: autoscale.Loop) -> None:
    label = stack.target.label
    pool_nodes = {n["metadata"]["name"] for n in cluster.items("nodes")
                  if POOL_LABEL in (n["metadata"].get("labels") or {})}
    node = next((n for n in loop.exporter.served_nodes() if n in pool_nodes), None)
    if node is None:
        report.scenario(label, ROW, False, "no pool node has a DCGM exporter endpoint to report an XID")
        return
    hosts = {name: loop.prometheus.address for name in prometheus.service_names(stack)}
    try:
        with fence.fencer_running(cluster, stack, hosts) as log:
            if _fenced(cluster, stack, report, loop, node, log):
                _lifted(cluster, stack, report, loop, node, log)
                fence.least_privilege(cluster, report, label, stack, node)
    except E2EError as err:
        report.scenario(label, ROW, False, str(err))
    finally:
        loop.exporter.heal(node)
        fence.remove_probe(cluster, stack)
        cluster.kubectl("taint", "node", node, f"{TAINT_KEY}:NoSchedule-", check=False)


def _fenced(cluster: Cluster, stack: Stack, report: Report, loop: autoscale.Loop, node: str, log: Path) -> bool:
    label, namespace = stack.target.label, fence.system_namespace(stack)
    report.mark()
    start = time.monotonic()
    loop.exporter.fail(node, XID)
    try:
        wait_for(lambda: firing(loop, node), FIRING_SECONDS, f"{ALERT} firing for {node}", 1.0)
        fired = time.monotonic() - start
        taint = wait_for(lambda: fence.fence_taint(cluster.get("node", node)), FENCE_SECONDS,
                         f"the fence taint on {node}", 0.5)
        fenced = time.monotonic() - start
        refused, event = fence.probe_refused(cluster, node, namespace)
    except E2EError as err:
        report.scenario(label, ROW, False, f"XID {XID} on {node}'s GPU 0: {err}; the fencer said: {fence.tail(log)}")
        return False
    report.scenario(label, ROW, taint.get("value") == ALERT,
                    f"XID {XID} on {node}'s GPU 0: {ALERT} firing in the suite's Prometheus {fired:.0f} s after the "
                    f"fault, node tainted {TAINT_KEY}={taint.get('value')}:{taint.get('effect')} at {fenced:.0f} s "
                    f"by the emitted fencer (alerts polled every {POLL_SECONDS} s); the scheduler on a pod tolerating "
                    f"the node's other taints: {refused[:200]}; Event {event}")
    return True


def _lifted(cluster: Cluster, stack: Stack, report: Report, loop: autoscale.Loop, node: str, log: Path) -> None:
    label, namespace = stack.target.label, fence.system_namespace(stack)
    report.mark()
    start = time.monotonic()
    loop.exporter.heal(node)
    try:
        wait_for(lambda: resolved(loop, node), FIRING_SECONDS, f"{ALERT} resolved for {node}", 1.0)
        cleared = time.monotonic() - start
        lifted, bound, event = fence.probe_bound(cluster, node, namespace, start, FENCE_SECONDS)
    except E2EError as err:
        report.scenario(label, f"{ROW}-lifted", False, f"{err}; the fencer said: {fence.tail(log)}")
        return
    report.scenario(label, f"{ROW}-lifted", bound == node,
                    f"the GPU reports no XID again: {ALERT} gone {cleared:.0f} s later, taint removed at "
                    f"{lifted:.0f} s, {fence.PROBE} bound to {bound}; Event {event}")
