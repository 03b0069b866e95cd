"""gpuplat's node fencer: a GPU node whose health condition is False gets a NoSchedule taint.

This file runs inside the cluster, not in the Pulumi program: GpuFence ships it in a ConfigMap
and a Deployment runs it with a stock Python image, so it uses the standard library only. It
lists and watches the nodes carrying the pool label, taints each node whose first unhealthy
condition (one of FENCE_CONDITIONS with status False) is set, and removes its own taint once every
condition is True again or gone (the node rebooted healthy). Only its own taint key is touched;
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


def unhealthy_condition(node: Mapping[str, Any], conditions: Sequence[str]) -> str | None:
    """The first of `conditions` the node reports False; Unknown is no verdict, so it fences nothing."""
    status = {c.get("type"): c.get("status") for c in (node.get("status") or {}).get("conditions") or []}
    return next((c for c in conditions if status.get(c) == "False"), None)


def wanted_taints(node: Mapping[str, Any], conditions: Sequence[str]) -> list[dict[str, Any]] | None:
    """The node's taints as they should be, or None when they already are."""
    taints = list((node.get("spec") or {}).get("taints") or [])
    ours = [t for t in taints if t.get("key") == TAINT_KEY]
    others = [t for t in taints if t.get("key") != TAINT_KEY]
    condition = unhealthy_condition(node, conditions)
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


def reconcile(api: Api, node: Mapping[str, Any], conditions: Sequence[str]) -> None:
    taints = wanted_taints(node, conditions)
    if taints is None:
        return
    name = node["metadata"]["name"]
    condition = unhealthy_condition(node, conditions)
    try:
        api.set_taints(node, taints)
    except urllib.error.HTTPError as error:
        # 409: the node changed since this copy; the watch brings the newer one.
        print(f"node {name}: not {'fenced' if condition else 'unfenced'}: {error.code} {error.reason}", flush=True)
        return
    if condition:
        message = f"tainted {TAINT_KEY}:NoSchedule: {condition} is False; running pods stay, no new pod lands"
    else:
        message = f"taint {TAINT_KEY} removed: {', '.join(conditions)} no longer False"
    print(f"node {name}: {message}", flush=True)
    try:
        api.create_event(node_event(node, condition is not None, message, datetime.now(UTC)))
    except OSError as error:  # the taint is what matters; an Event is for people
        print(f"node {name}: no Event recorded: {error}", flush=True)


def run(api: Api, selector: str, conditions: Sequence[str]) -> None:
    while True:
        try:
            listed = api.list_nodes(selector)
            for node in listed.get("items") or []:
                reconcile(api, node, conditions)
            version = listed["metadata"]["resourceVersion"]
            while True:
                for event in api.watch_nodes(selector, version):
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        raise LookupError(obj.get("message", "watch error"))  # e.g. 410 Gone: list again
                    version = (obj.get("metadata") or {}).get("resourceVersion", version)
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        reconcile(api, obj, conditions)
        except (OSError, LookupError, ValueError) as error:
            print(f"listing again in {RETRY_SECONDS} s: {error}", flush=True)
            time.sleep(RETRY_SECONDS)


def main() -> None:
    conditions = [c.strip() for c in os.environ.get("FENCE_CONDITIONS", "").split(",") if c.strip()]
    selector = os.environ.get("FENCE_NODE_SELECTOR", "")
    if not conditions or not selector:
        sys.exit("FENCE_CONDITIONS and FENCE_NODE_SELECTOR must be set")
    print(f"fencing nodes ({selector}) while {', '.join(conditions)} is False", flush=True)
    run(Api(os.environ), selector, conditions)


if __name__ == "__main__":
    main()
