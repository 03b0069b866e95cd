"""gpuplat's node fencer: a GPU node whose health condition is False, or for which a GPU health
alert fires, gets a NoSchedule taint.

This file runs inside the cluster, not in the Pulumi program: GpuFence ships it in a ConfigMap
and a Deployment runs it with a stock Python image, so it uses the standard library only. It
lists and watches the nodes carrying the pool label, taints each node whose first unhealthy
condition (one of FENCE_CONDITIONS with status False) is set or for which one of FENCE_ALERTS
fires (Prometheus' /api/v1/alerts, polled; the alert's `node` label names the node), and removes
its own taint once neither holds (the node rebooted healthy). Only its own taint key is touched;
a ValidatingAdmissionPolicy holds its service account to that. Each patch carries the node's
resourceVersion, so a node another writer changed meanwhile is refused (409) and handled again
on the next event of the watch. Each fence and unfence is also an Event on the node (namespace
default, where Kubernetes records node events), so `kubectl describe node` says why it is tainted.
"""

from __future__ import annotations

import json
import os
import ssl
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

TAINT_KEY = "gpuplat.dev/gpu-unhealthy"
WATCH_SECONDS = 300
RETRY_SECONDS = 5
POLL_SECONDS = 30  # Prometheus' default rule evaluation interval


def unhealthy_condition(node: Mapping[str, Any], conditions: Sequence[str]) -> str | None:
    """The first of `conditions` the node reports False; Unknown is no verdict, so it fences nothing."""
    status = {c.get("type"): c.get("status") for c in (node.get("status") or {}).get("conditions") or []}
    return next((c for c in conditions if status.get(c) == "False"), None)


def unhealthy_reason(node: Mapping[str, Any], conditions: Sequence[str],
                     firing: Mapping[str, str] | None = None) -> str | None:
    """Why the node is unhealthy: a condition of `conditions` that is False, else the GPU health
    alert firing for it (`firing`: node name to alert name); None: it is not."""
    return unhealthy_condition(node, conditions) or (firing or {}).get(node["metadata"]["name"])


def firing_nodes(payload: Mapping[str, Any], alerts: Sequence[str]) -> dict[str, str]:
    """Node name to the first of `alerts` firing for it, from Prometheus' /api/v1/alerts answer."""
    found: dict[str, str] = {}
    for alert in (payload.get("data") or {}).get("alerts") or []:
        labels = alert.get("labels") or {}
        name, node = str(labels.get("alertname", "")), str(labels.get("node", ""))
        if alert.get("state") != "firing" or name not in alerts or not node:
            continue
        if node not in found or alerts.index(name) < alerts.index(found[node]):
            found[node] = name
    return found


def wanted_taints(node: Mapping[str, Any], conditions: Sequence[str],
                  firing: Mapping[str, str] | None = None) -> list[dict[str, Any]] | None:
    """The node's taints as they should be, or None when they already are."""
    taints = list((node.get("spec") or {}).get("taints") or [])
    ours = [t for t in taints if t.get("key") == TAINT_KEY]
    others = [t for t in taints if t.get("key") != TAINT_KEY]
    condition = unhealthy_reason(node, conditions, firing)
    if condition is None:
        return others if ours else None
    fence = {"key": TAINT_KEY, "value": condition, "effect": "NoSchedule"}
    if [{k: t.get(k) for k in fence} for t in ours] == [fence]:
        return None
    return [*others, fence]


class Api:
    """The API server as the pod's service account sees it (in-cluster configuration)."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        account = environ.get("SERVICEACCOUNT_DIR", "/var/run/secrets/kubernetes.io/serviceaccount")
        host, port = environ["KUBERNETES_SERVICE_HOST"], environ.get("KUBERNETES_SERVICE_PORT", "443")
        self.base = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
        self.token_file = os.path.join(account, "token")
        self.context = ssl.create_default_context(cafile=os.path.join(account, "ca.crt"))

    def _request(self, method: str, path: str, body: Any = None, content_type: str = "") -> Any:
        with open(self.token_file) as f:  # re-read: the kubelet rotates projected tokens
            token = f.read().strip()
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        return urllib.request.urlopen(request, context=self.context, timeout=WATCH_SECONDS + 30)

    def list_nodes(self, selector: str) -> dict[str, Any]:
        query = urllib.parse.urlencode({"labelSelector": selector})
        with self._request("GET", f"/api/v1/nodes?{query}") as response:
            return json.load(response)

    def watch_nodes(self, selector: str, resource_version: str) -> Iterator[dict[str, Any]]:
        query = urllib.parse.urlencode({"labelSelector": selector, "watch": "1", "resourceVersion": resource_version,
                                        "allowWatchBookmarks": "true", "timeoutSeconds": str(WATCH_SECONDS)})
        with self._request("GET", f"/api/v1/nodes?{query}") as response:
            for line in response:
                if line.strip():
                    yield json.loads(line)

    def get_node(self, name: str) -> dict[str, Any]:
        with self._request("GET", f"/api/v1/nodes/{urllib.parse.quote(name)}") as response:
            return json.load(response)

    def set_taints(self, node: Mapping[str, Any], taints: list[dict[str, Any]]) -> None:
        name = node["metadata"]["name"]
        patch = {"metadata": {"resourceVersion": node["metadata"]["resourceVersion"]}, "spec": {"taints": taints}}
        self._request("PATCH", f"/api/v1/nodes/{urllib.parse.quote(name)}", patch,
                      "application/merge-patch+json").close()

    def create_event(self, event: dict[str, Any]) -> None:
        self._request("POST", "/api/v1/namespaces/default/events", event, "application/json").close()


def node_event(node: Mapping[str, Any], fenced: bool, message: str, now: datetime) -> dict[str, Any]:
    """A core/v1 Event on the node, as `kubectl describe node` lists it."""
    meta = node["metadata"]
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"generateName": f"{meta['name']}.", "namespace": "default"},
        "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": meta["name"], "uid": meta.get("uid", "")},
        "reason": "GpuFenced" if fenced else "GpuUnfenced", "type": "Warning" if fenced else "Normal",
        "message": message, "source": {"component": "gpu-fencer"},
        "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
    }


def reconcile(api: Api, node: Mapping[str, Any], conditions: Sequence[str],
              firing: Mapping[str, str] | None = None) -> None:
    taints = wanted_taints(node, conditions, firing)
    if taints is None:
        return
    name = node["metadata"]["name"]
    condition = unhealthy_reason(node, conditions, firing)
    try:
        api.set_taints(node, taints)
    except urllib.error.HTTPError as error:
        # 409: the node changed since this copy; the watch brings the newer one.
        print(f"node {name}: not {'fenced' if condition else 'unfenced'}: {error.code} {error.reason}", flush=True)
        return
    if condition:
        why = f"{condition} is False" if condition in conditions else f"alert {condition} is firing"
        message = f"tainted {TAINT_KEY}:NoSchedule: {why}; running pods stay, no new pod lands"
    else:
        cleared = [f"{', '.join(conditions)} no longer False"] if conditions else []
        cleared += ["no GPU health alert firing for it"] if firing is not None else []
        message = f"taint {TAINT_KEY} removed: {' and '.join(cleared)}"
    print(f"node {name}: {message}", flush=True)
    try:
        api.create_event(node_event(node, condition is not None, message, datetime.now(UTC)))
    except OSError as error:  # the taint is what matters; an Event is for people
        print(f"node {name}: no Event recorded: {error}", flush=True)


class Fencer:
    """The nodes as last seen and the alerts as last polled; one lock, so a watch event and an
    alert poll never patch the same node at once."""

    def __init__(self, api: Api, selector: str, conditions: Sequence[str], alerts: Sequence[str] = (),
                 prometheus: str = "") -> None:
        self.api, self.selector, self.conditions = api, selector, list(conditions)
        self.alerts, self.prometheus = list(alerts), prometheus.rstrip("/")
        self.nodes: set[str] = set()
        self.firing: dict[str, str] = {}
        self.lock = threading.Lock()

    def seen(self, event_type: str, node: Mapping[str, Any]) -> None:
        with self.lock:
            name = node["metadata"]["name"]
            if event_type == "DELETED":
                self.nodes.discard(name)
                return
            self.nodes.add(name)
            reconcile(self.api, node, self.conditions, self.firing if self.alerts else None)

    def polled(self, firing: dict[str, str]) -> None:
        """A new set of firing alerts: each node whose verdict moved is read afresh and reconciled
        (no watch event would follow a failed patch here)."""
        with self.lock:
            moved = {n for n in set(firing) | set(self.firing) if firing.get(n) != self.firing.get(n)}
            self.firing = firing
            for name in sorted(moved & self.nodes):
                try:
                    reconcile(self.api, self.api.get_node(name), self.conditions, self.firing if self.alerts else None)
                except OSError as error:
                    print(f"node {name}: not reconciled after the alerts moved: {error}", flush=True)

    def poll_alerts(self) -> None:
        while True:
            try:
                with urllib.request.urlopen(f"{self.prometheus}/api/v1/alerts", timeout=30) as response:
                    self.polled(firing_nodes(json.load(response), self.alerts))
            except (OSError, ValueError, AttributeError, TypeError) as error:  # a bad answer: the taints stay
                print(f"alerts not read from {self.prometheus}: {error}", flush=True)
            time.sleep(POLL_SECONDS)

    def watch(self) -> None:
        while True:
            try:
                listed = self.api.list_nodes(self.selector)
                for node in listed.get("items") or []:
                    self.seen("ADDED", node)
                version = listed["metadata"]["resourceVersion"]
                while True:
                    for event in self.api.watch_nodes(self.selector, version):
                        obj = event.get("object") or {}
                        if event.get("type") == "ERROR":
                            raise LookupError(obj.get("message", "watch error"))  # e.g. 410 Gone: list again
                        version = (obj.get("metadata") or {}).get("resourceVersion", version)
                        if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                            self.seen(str(event["type"]), obj)
            except (OSError, LookupError, ValueError) as error:
                print(f"listing again in {RETRY_SECONDS} s: {error}", flush=True)
                time.sleep(RETRY_SECONDS)


def _list(name: str) -> list[str]:
    return [c.strip() for c in os.environ.get(name, "").split(",") if c.strip()]


def main() -> None:
    conditions, alerts = _list("FENCE_CONDITIONS"), _list("FENCE_ALERTS")
    selector, prometheus = os.environ.get("FENCE_NODE_SELECTOR", ""), os.environ.get("FENCE_PROMETHEUS_URL", "")
    if not (conditions or alerts) or not selector or bool(alerts) != bool(prometheus):
        sys.exit("FENCE_NODE_SELECTOR, and FENCE_CONDITIONS or FENCE_ALERTS with FENCE_PROMETHEUS_URL, must be set")
    said = [f"{', '.join(conditions)} is False"] if conditions else []
    said += [f"{', '.join(alerts)} fires at {prometheus}"] if alerts else []
    print(f"fencing nodes ({selector}) while {' or '.join(said)}", flush=True)
    fencer = Fencer(Api(os.environ), selector, conditions, alerts, prometheus)
    if alerts:
        threading.Thread(target=fencer.poll_alerts, daemon=True).start()
    fencer.watch()


if __name__ == "__main__":
    main()
