"""The emitted dashboards' queries against the suite's real Prometheus (scenario `dashboard-queries`).

The queries are read from the emitted ConfigMaps the Grafana sidecar would load, not from the
generator. Each is sent to Prometheus as Grafana would send it (`$__range` given a value): the
real parser refuses a malformed one (HTTP 400). Then every series the queries name must have
data there, while the loop's load runs: the DCGM exporter's, the GPU and usage rules', Kueue's,
Karpenter's and kube-state-metrics' (scraped from the processes the suite runs, e2e/podmetrics.py,
e2e/statemetrics.py). A rule or DCGM series with no data at the check is reported; one of
kube-state-metrics' fails the row, and the pending-requests record must count at least the GPUs of
the pod the suite holds Pending (where the release turns kube-state-metrics off, those series are
named as not collected). Of Karpenter's series, two cannot have data here (`KARPENTER_WITHOUT_DATA`
says why), and disruptions are judged once the loop's idle stretch has had Karpenter remove its
empty nodes (`after_idle`). How many queries returned data is reported.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any

from e2e.autoscale import Loop
from e2e.cluster import E2EError, wait_for
from gpuplat import scaling
from gpuplat.dashboards.series import KUBE_STATE_METRICS, referenced, substitute

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
SIDECAR_LABEL = ("grafana_dashboard", "1")
RANGE = {"__range": "10m", "__interval": "1m", "__rate_interval": "1m"}
STATE_SERIES = KUBE_STATE_METRICS | {scaling.PENDING_RECORD}
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
DISRUPTED = "karpenter_nodeclaims_disrupted_total"
# Karpenter's series no event of the suite's makes before the check, and why.
KARPENTER_WITHOUT_DATA = {
    "karpenter_interruption_received_messages_total": "counted by the AWS provider's interruption controller "
    "from its SQS queue; the kwok provider runs no such controller",
    "karpenter_nodeclaims_unhealthy_disrupted_total": "counted when Karpenter repairs a node; the suite's only "
    "node failure (gpu-node-failure) comes after the autoscaling loop and its Prometheus",
}
# After the last node is gone: two of the operator's default 30 s scrape intervals, and some slack.
DISRUPTION_WAIT = 90.0


@dataclass(frozen=True)
class Checked:
    ok: bool
    detail: str
    awaited: bool = False  # DISRUPTED had no data at the check: judged after the idle stretch
    silent: tuple[tuple[str, str], ...] = ()  # (dashboard / panel, PromQL) that answered nothing


def queries(loop: Loop) -> list[tuple[str, str, str]]:
    """(dashboard, panel, expr) of every target of every dashboard ConfigMap the stack emits."""
    out = []
    for config_map in loop.short.of_type(CONFIG_MAP):
        labels: dict[str, Any] = config_map.get("metadata", {}).get("labels", {})
        if labels.get(SIDECAR_LABEL[0]) != SIDECAR_LABEL[1]:
            continue
        for text in config_map.get("data", {}).values():
            board = json.loads(text)
            out += [(board["title"], p["title"], t["expr"]) for p in board["panels"] for t in p["targets"]]
    return out


def _by_reason(found: list[dict[str, Any]]) -> str:
    return ", ".join(f"{s['metric'].get('reason', '?')} {float(s['value'][1]):g}" for s in found)


def _karpenter(loop: Loop, names: set[str]) -> tuple[list[str], list[str], bool]:
    """Problems and notes on Karpenter's series, and whether disruptions wait for the idle stretch."""
    problems, notes = [], []
    query = loop.prometheus.query
    created = "karpenter_nodeclaims_created_total"
    if created in names:
        count = loop.prometheus.value(f"sum({created})")
        if count is None:
            problems.append(f"{created} has no data though Karpenter launched the pools' nodes")
        else:
            notes.append(f"{created}: {count:g} NodeClaims")
    disrupted = query(f"sum by (reason) ({DISRUPTED})") if DISRUPTED in names else []
    if disrupted:
        notes.append(f"{DISRUPTED}: {_by_reason(disrupted)}")
    for name, why in sorted(KARPENTER_WITHOUT_DATA.items()):
        if name in names:
            notes.append(f"{name} has data" if query(f"count({name})") else f"{name} cannot have data here: {why}")
    return problems, notes, DISRUPTED in names and not disrupted


def _state_metrics(loop: Loop, names: set[str]) -> tuple[list[str], list[str]]:
    """Problems and notes on kube-state-metrics and the pending-requests record built on it."""
    state, record = loop.state_metrics, scaling.PENDING_RECORD
    if state.failed:
        return [f"kube-state-metrics not run: {state.failed}"], []
    if state.off:
        return [], [f"not collected ({state.off}): {', '.join(sorted(names & STATE_SERIES)) or 'none'}"]
    readers = [o["metadata"]["name"] for o in loop.short.of_type(SCALED_OBJECT)
               if record in json.dumps(o["spec"].get("triggers", []))]
    read = f"read by ScaledObjects {', '.join(readers)}" if readers else "no ScaledObject reads it"
    pending = loop.prometheus.value(record)
    if pending is None or pending < state.held_gpus:
        found = "no data" if pending is None else f"{pending:g} GPUs"
        return [f"{record} has {found}, though a pod asking for {state.held_gpus} GPU(s) is held Pending ({read})"], []
    return [], [f"all {len(names & KUBE_STATE_METRICS)} kube-state-metrics series have data", state.served,
                f"{record}: {pending:g} GPUs requested by Pending pods, the held pod's {state.held_gpus} among "
                f"them ({read})"]


def check(loop: Loop) -> Checked:
    found = queries(loop)
    if not found:
        return Checked(False, "the stack emits no dashboard ConfigMap")
    problems: list[str] = []
    answered, names, silent = 0, set[str](), list[tuple[str, str]]()
    for board, panel, expr in found:
        promql = substitute(expr, RANGE)
        try:
            if loop.prometheus.query(promql):
                answered += 1
            else:
                silent.append((f"{board} / {panel}", promql))
        except E2EError as err:
            problems.append(f"{board} / {panel}: {err}")
        names |= referenced(promql)
    karpenter_problems, karpenter_notes, awaited = _karpenter(loop, names)
    state_problems, state_notes = _state_metrics(loop, names)
    problems += karpenter_problems + state_problems
    # A rule or DCGM series with no data at this moment is reported, not judged: on the on-prem
    # target two usage records had none in their first run, and whether a pool must feed them then
    # is not settled. Karpenter's are judged above; kube-state-metrics' describe objects that exist
    # the whole time, so each must have data.
    unrun = STATE_SERIES if not loop.state_metrics.served else frozenset()
    judged = {n for n in names - unrun if not n.startswith("karpenter_")}
    empty = sorted(n for n in judged if not loop.prometheus.query(f"count({n})"))
    problems += [f"{n} has no data though kube-state-metrics is scraped" for n in empty if n in KUBE_STATE_METRICS]
    empty = [n for n in empty if n not in KUBE_STATE_METRICS]
    said = (f"{len(found)} queries of {len({b for b, _, _ in found})} dashboards parse; {answered} returned data"
            + (f" (none from: {', '.join(name for name, _ in silent)})" if silent else "")
            + f"; {len(judged) - len(empty)} of the {len(judged)} series they read have data"
            + (f" (none yet, not judged: {', '.join(empty)})" if empty else "")
            + "".join(f"; {note}" for note in karpenter_notes)
            + (f"; {DISRUPTED} judged after the idle stretch" if awaited else "")
            + "".join(f"; {note}" for note in state_notes)
            + "".join(f"; {served}" for served in loop.pod_metrics))
    # A failure names what was forwarded, or why not: Karpenter's series come only through that.
    forwarded = [*loop.pod_metrics, *([loop.state_metrics.served] if loop.state_metrics.served else [])]
    return Checked(not problems, "; ".join([*problems[:8], *forwarded]) if problems else said, awaited, tuple(silent))


def _later(loop: Loop, checked: Checked) -> str:
    """The silent panels asked again: a range panel over a record younger than its subquery's
    one-minute step (a pool's first node came up a minute before the check) answers nothing at
    the check and answers once the record is older; one still silent stays named above."""
    if not checked.silent:
        return ""
    later = []
    for name, promql in checked.silent:
        with contextlib.suppress(E2EError):  # the check already took its answer; this one only adds
            if loop.prometheus.query(promql):
                later.append(name)
    return f"; asked again after the idle stretch, {len(later)} of the {len(checked.silent)} silent answered" + (
        f" ({', '.join(later)})" if later else "")


def after_idle(loop: Loop, checked: Checked, removed: int) -> tuple[bool, str]:
    """The row: `checked`, and Karpenter's disruptions once the idle stretch is over, in which
    Karpenter removed `removed` nodes (each a NodeClaim it disrupted: reason `empty` or
    `underutilized`)."""
    detail = checked.detail + (_later(loop, checked) if checked.ok else "")
    if not checked.awaited:
        return checked.ok, detail
    if not removed:
        return checked.ok, f"{detail}; {DISRUPTED} not judged: Karpenter removed no node in the idle stretch"
    try:
        found = wait_for(lambda: loop.prometheus.query(f"sum by (reason) ({DISRUPTED})") or None, DISRUPTION_WAIT,
                         f"{DISRUPTED} in Prometheus")
    except E2EError as err:
        return False, f"{detail}; after the idle stretch, in which Karpenter removed {removed} node(s): {err}"
    return checked.ok, f"{detail}; after the idle stretch ({removed} node(s) removed): {DISRUPTED}: " \
        + _by_reason(found)
