"""Which series a dashboard may query, and which series a PromQL expression names.

Known series: what the platform's rules record (gpuplat/scaling.py, gpuplat/usage.py), what
the DCGM exporter emits (the counter list the platform gives it, gpuplat/catalog/dcgm.py) and the
kube-state-metrics series the queries use (kube-state-metrics' docs/metrics, collected by
kube-prometheus-stack's kube-state-metrics), and Kueue's and Karpenter's own where the stack
runs them and has them scraped (the charts' ServiceMonitors, turned on in their values). A query
naming anything else would draw an empty panel. tests/test_dashboard_series.py reads the Kueue
and Karpenter names below out of the pinned releases' Go source.

`referenced` is a lexer, not a parser: it finds the metric names an expression selects
(identifiers that are not functions, keywords or label names, and the alternatives of a
`__name__` matcher). Whether the expression parses is the real parser's question (promtool,
in the e2e suite); here brackets must balance and every token be PromQL's.
"""

from __future__ import annotations

import re

from gpuplat import scaling, usage
from gpuplat.catalog.dcgm import COUNTERS
from gpuplat.model import Platform, Provider
from gpuplat.plan.types import Plan

KUBE_STATE_METRICS = frozenset(
    {
        "kube_pod_container_resource_requests",
        "kube_pod_status_phase",
        "kube_pod_status_unschedulable",
        "kube_deployment_spec_replicas",
        "kube_deployment_status_replicas_available",
    }
)
# Kueue v0.19.2, sigs.k8s.io/kueue pkg/metrics/metrics.go (Subsystem constants.KueueName, "kueue");
# the local_queue_* ones are registered under the LocalQueueMetrics gate, on by default since 0.17.
KUEUE_METRICS = frozenset(
    {
        "kueue_pending_workloads",  # cluster_queue, status: active (queued) | inadmissible
        "kueue_local_queue_pending_workloads",  # name, namespace, status
        "kueue_admitted_active_workloads",  # cluster_queue
        "kueue_cluster_queue_resource_usage",  # cohort, cluster_queue, flavor, resource
        "kueue_cluster_queue_nominal_quota",  # cohort, cluster_queue, flavor, resource
        "kueue_cluster_queue_resource_pending",  # cluster_queue, resource
        "kueue_evicted_workloads_total",  # cluster_queue, reason, underlying_cause, priority_class
        "kueue_admission_wait_time_seconds_bucket",  # a histogram's buckets: cluster_queue, le
    }
)
# Karpenter v1.15: the core's sigs.k8s.io/karpenter pkg/metrics/metrics.go (nodeclaims_*) and
# pkg/controllers/disruption/metrics.go (repairs), and the AWS provider's
# github.com/aws/karpenter-provider-aws pkg/controllers/interruption/metrics.go (Namespace "karpenter").
KARPENTER_METRICS = frozenset(
    {
        "karpenter_nodeclaims_created_total",  # reason, nodepool
        "karpenter_nodeclaims_disrupted_total",  # reason (spot_interrupted, unhealthy, ...), nodepool, capacity_type
        "karpenter_nodeclaims_unhealthy_disrupted_total",  # condition, nodepool, capacity_type, image_id
        "karpenter_interruption_received_messages_total",  # message_type
    }
)
# Grafana's built-in variables (docs: "Global variables") and their stand-ins for a parse.
GRAFANA_BUILTINS = {"__range": "1h", "__interval": "1m", "__rate_interval": "1m"}

_TOKEN = re.compile(
    r"""(?P<space>\s+)
      |(?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
      |(?P<duration>\[[0-9smhdwy]+(?::[0-9smhdwy]*)?\])
      |(?P<number>[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)
      |(?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
      |(?P<op>==|!=|=~|!~|>=|<=|[-+*/%^<>=(){},])""",
    re.VERBOSE,
)
_KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset"}
)
_LABEL_LISTS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})
_PAIRS = {")": "(", "}": "{"}


def known_series(model: Platform, plan: Plan) -> frozenset[str]:
    window = model.autoscaling.window
    records = {scaling.metric_record(m, window) for m in scaling.DCGM_METRICS} | {
        scaling.PENDING_RECORD,
        scaling.utilization_record(window),
        scaling.memory_record(window),
        scaling.pressure_record(window),
        scaling.signal_record(window),
    }
    none: frozenset[str] = frozenset()
    components = (KUEUE_METRICS if runs_kueue(model) else none) | (KARPENTER_METRICS if runs_karpenter(model) else none)
    return frozenset(
        records
        | usage.records(model, plan)
        | {c.field for c in COUNTERS if c.kind != "label"}
        | KUBE_STATE_METRICS
        | components
    )


def runs_kueue(model: Platform) -> bool:
    return model.scheduling.queueing == "kueue"


def runs_karpenter(model: Platform) -> bool:
    """Karpenter provisions the pools on aws; on provider kubernetes the nodes are given."""
    return model.target.provider is Provider.AWS


def variables(expr: str) -> set[str]:
    return set(re.findall(r"\$\{?(\w+)\}?", expr))


def substitute(expr: str, values: dict[str, str]) -> str:
    return re.sub(r"\$\{?(\w+)\}?", lambda m: values[m.group(1)], expr)


def referenced(expr: str) -> set[str]:
    """Metric names `expr` selects; ValueError when it is not PromQL's tokens with balanced brackets."""
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(expr):
        match = _TOKEN.match(expr, pos)
        if match is None:
            raise ValueError(f"column {pos + 1}: unexpected {expr[pos : pos + 10]!r}")
        pos = match.end()
        if match.lastgroup != "space":
            tokens.append((str(match.lastgroup), match.group()))
    names: set[str] = set()
    stack: list[str] = []
    for i, (kind, text) in enumerate(tokens):
        before = tokens[i - 1][1] if i else ""
        after = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        if text in "({":
            stack.append(text)
        elif text in _PAIRS and (not stack or stack.pop() != _PAIRS[text]):
            raise ValueError(f"unbalanced {text!r}")
        in_braces = bool(stack) and stack[-1] == "{"
        if kind == "string" and in_braces and tokens[i - 2][1] == "__name__":
            names |= set(text.strip("\"'").split("|"))
        if kind != "ident" or in_braces or after == "(" or after in ("by", "without") or text in _KEYWORDS:
            continue
        if before == "(" and i >= 2 and tokens[i - 2][1] in _LABEL_LISTS:
            continue
        if before == "," and _inside_label_list(tokens, i):
            continue
        names.add(text)
    if stack:
        raise ValueError(f"unclosed {stack[-1]!r}")
    return names


def _inside_label_list(tokens: list[tuple[str, str]], i: int) -> bool:
    depth = 0
    for j in range(i - 1, -1, -1):
        text = tokens[j][1]
        if text == ")":
            depth += 1
        elif text == "(":
            if depth == 0:
                return j >= 1 and tokens[j - 1][1] in _LABEL_LISTS
            depth -= 1
    return False
