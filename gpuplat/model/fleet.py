"""The `fleet` section as frozen data: members by Pulumi stack, the manager, dispatch order, reach.

A stack finds its own role by its Pulumi stack name (`role_of`): the manager emits the fleet's
queue and MultiKueue objects, a worker its matching queues and the credentials the manager
reads. Nothing here reads another member's spec (gpuplat/fleet/members.py does).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpuplat.vocabulary import DEFAULT_CREDENTIAL_GENERATION, DEFAULT_FLEET_QUEUE

DEFAULT_QUEUE = DEFAULT_FLEET_QUEUE
# Kueue's controller for the MultiKueue admission check (kueue.x-k8s.io/v1beta2 AdmissionCheck).
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"


@dataclass(frozen=True)
class FleetMember:
    name: str
    stack: str  # `stack` of this project or `org/project/stack`
    spec: str | None = None  # where its spec is read offline; None: this project's stack files
    server: str | None = None  # API server URL the manager reaches it at (default: EKS endpoint)

    @property
    def project_stack(self) -> str | None:
        """The stack's name when it is a stack of this project (no org/project), else None."""
        return None if "/" in self.stack else self.stack

    def is_stack(self, stack: str, project: str) -> bool:
        parts = self.stack.split("/")
        if len(parts) == 1:
            return parts[0] == stack
        return parts[1] == project and parts[2] == stack


@dataclass(frozen=True)
class Fleet:
    name: str
    manager: str
    queue: str
    members: tuple[FleetMember, ...]  # dispatch order
    reach: Mapping[str, tuple[str, ...]]  # tenant -> workers it may use (explicit entries only)
    credential_generation: int = 0

    @property
    def workers(self) -> tuple[FleetMember, ...]:
        """The dispatch targets in order: every member but the manager."""
        return tuple(m for m in self.members if m.name != self.manager)

    @property
    def manager_member(self) -> FleetMember:
        return next(m for m in self.members if m.name == self.manager)

    def tenant_workers(self, tenant: str) -> tuple[str, ...]:
        """The workers a tenant may use, in dispatch order (default: every worker)."""
        allowed = self.reach.get(tenant)
        return tuple(m.name for m in self.workers if allowed is None or m.name in allowed)

    def role_of(self, stack: str, project: str) -> tuple[str, FleetMember] | None:
        """('manager' | 'worker', member) of the stack, or None when it is no member."""
        for member in self.members:
            if member.is_stack(stack, project):
                return ("manager" if member.name == self.manager else "worker"), member
        return None


def build_fleet(raw: Mapping[str, Any] | None) -> Fleet | None:
    if raw is None:
        return None
    return Fleet(
        name=raw["name"],
        manager=raw["manager"],
        queue=raw.get("queue", DEFAULT_QUEUE),
        members=tuple(FleetMember(m["name"], m["stack"], m.get("spec"), m.get("server")) for m in raw["members"]),
        reach={t["name"]: tuple(t["members"]) for t in raw.get("tenants", [])},
        credential_generation=int(raw.get("credentialGeneration", DEFAULT_CREDENTIAL_GENERATION)),
    )
