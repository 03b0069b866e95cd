"""FleetWorker: what a fleet's worker offers its manager.

- The fleet LocalQueue in each tenant's namespace the fleet may send here, feeding the tenant's
  own ClusterQueue: MultiKueue creates a dispatched job in the same namespace and LocalQueue as on
  the manager, so the worker admits it against the tenant's quota here, like local work.
- The least a MultiKueue manager needs on a worker: a ServiceAccount in Kueue's namespace bound
  to a ClusterRole that creates, watches and deletes the job kinds the fleet carries (the
  manager's Kueue enables those only, scheduling.FLEET_FRAMEWORKS: batch Jobs, plain pods,
  StatefulSets) and Kueue Workloads, reads their status and writes Workloads' status; nothing
  else (no Secrets, no RBAC, no nodes). Kueue's own setup script
  (site/static/examples/multikueue/create-multikueue-kubeconfig.sh) grants the same for the
  kinds it lists.
- A token Secret for that ServiceAccount, named with `fleet.credentialGeneration`: bumping it
  replaces the token (rotation by an edit); the manager's next update reads the new credentials.
- `kubeconfig`: the credentials as a Pulumi secret, exported by the program as the stack output
  the manager's StackReference reads (components/kubernetes/fleet_manager.py). The
  token Secret's data is filled by Kubernetes' token controller; pulumi-kubernetes waits for it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpuplat.catalog import CHARTS
from gpuplat.model import Platform
from gpuplat.model.fleet import Fleet

from .._common import child_opts
from ._common import meta
from .scheduling import FLEET_FRAMEWORKS, KUEUE_API, cluster_queue_name

_JOB_VERBS = ["create", "delete", "get", "list", "watch"]

# (API group, resource) of each job kind the fleet manager's Kueue dispatches (and watches here).
JOB_KINDS: tuple[tuple[str, str], ...] = tuple(FLEET_FRAMEWORKS.values())


def manager_rules() -> list[k8s.rbac.v1.PolicyRuleArgsDict]:
    """The ClusterRole of a MultiKueue manager on this worker."""
    rules: list[k8s.rbac.v1.PolicyRuleArgsDict] = []
    for group, resource in JOB_KINDS:
        rules.append({"api_groups": [group], "resources": [resource], "verbs": list(_JOB_VERBS)})
        rules.append({"api_groups": [group], "resources": [f"{resource}/status"], "verbs": ["get"]})
    rules.append({"api_groups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": [*_JOB_VERBS, "update"]})
    rules.append(
        {"api_groups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]}
    )
    return rules


def account_name(fleet: Fleet) -> str:
    return f"multikueue-{fleet.name}"


def worker_kubeconfig(fleet: str, member: str, server: str, ca_data: str, token: str) -> str:
    """A kubeconfig of one cluster, one user (the token), one context; JSON is YAML, and the
    kubeconfig loader Kueue uses reads either."""
    cluster, user = f"{fleet}-{member}", f"{fleet}-{member}-manager"
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": cluster, "cluster": {"server": server, "certificate-authority-data": ca_data}}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": user}}],
            "current-context": cluster,
        },
        sort_keys=True,
    )


@dataclass(frozen=True)
class FleetWorkerArgs:
    model: Platform
    member: str
    provider: pulumi.ProviderResource
    server: pulumi.Input[str]  # the API server URL the manager reaches this cluster at
    kueue: pulumi.Resource | None
    namespaces: Mapping[str, pulumi.Resource] = field(default_factory=lambda: {})
    depends_on: Sequence[pulumi.Resource] = ()


class FleetWorker(pulumi.ComponentResource):
    kubeconfig: pulumi.Output[str | None]

    def __init__(self, name: str, args: FleetWorkerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:FleetWorker", name, None, opts)
        model, provider = args.model, args.provider
        fleet = model.fleet
        assert fleet is not None, "a worker belongs to a fleet"
        kueue = [args.kueue] if args.kueue is not None else []
        for tenant in model.tenants:
            if args.member not in fleet.tenant_workers(tenant.name) or tenant.name not in args.namespaces:
                continue
            k8s.apiextensions.CustomResource(
                f"{name}-lq-{tenant.name}",
                api_version=KUEUE_API,
                kind="LocalQueue",
                metadata=meta(fleet.queue, tenant.name),
                spec={"clusterQueue": cluster_queue_name(model, tenant.name)},
                opts=child_opts(self, provider, [*kueue, args.namespaces[tenant.name]]),
            )
        namespace = CHARTS["kueue"].namespace
        account = account_name(fleet)
        ready = [*args.depends_on, *kueue]  # Kueue's release creates its namespace
        service_account = k8s.core.v1.ServiceAccount(
            f"{name}-sa", metadata=meta(account, namespace), opts=child_opts(self, provider, ready)
        )
        role = k8s.rbac.v1.ClusterRole(
            f"{name}-role", metadata=meta(account), rules=manager_rules(), opts=child_opts(self, provider, ready)
        )
        k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-binding",
            metadata=meta(account),
            role_ref={"api_group": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": account},
            subjects=[{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
            opts=child_opts(self, provider, [role, service_account]),
        )
        token = k8s.core.v1.Secret(
            f"{name}-token",
            metadata=meta(
                f"{account}-token-{fleet.credential_generation}",
                namespace,
                annotations={"kubernetes.io/service-account.name": account},
            ),
            type="kubernetes.io/service-account-token",
            opts=child_opts(self, provider, [service_account]),
        )
        member = args.member

        def build(parts: list[Any]) -> str | None:
            server, data = parts
            if not isinstance(data, Mapping) or not data.get("token"):
                return None  # not filled yet (an offline preview): nothing to hand out
            plain = base64.b64decode(str(data["token"])).decode()  # pyright: ignore[reportUnknownArgumentType]
            return worker_kubeconfig(fleet.name, member, str(server), str(data.get("ca.crt", "")), plain)  # pyright: ignore[reportUnknownArgumentType]

        self.kubeconfig = pulumi.Output.secret(pulumi.Output.all(args.server, token.data).apply(build))
        self.register_outputs({})
