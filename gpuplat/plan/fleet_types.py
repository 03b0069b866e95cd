"""The fleet's numbers as plain records (built by gpuplat/fleet/plan.py, carried by Plan as
`cluster_fleet`): members with role, dispatch position, GPUs and cost; per tenant its workers,
their quotas and the combined quota."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MemberPlan:
    name: str
    stack: str
    role: str  # manager | worker
    position: int | None  # 1-based dispatch position of a worker; None for the manager
    source: str  # the files read; "" when the member cannot be read offline
    provider: str | None = None
    gpus: int | None = None
    monthly_usd: float | None = None  # None: not priced (provider kubernetes) or unknown


@dataclass(frozen=True)
class TenantReach:
    tenant: str
    workers: tuple[str, ...]  # in dispatch order
    per_worker: Mapping[str, Mapping[str, int]]  # worker -> resource -> nominal units (readable ones)
    combined: Mapping[str, int]  # resource -> the manager's quota for the tenant
    unknown: tuple[str, ...] = ()  # workers whose share is not known offline


@dataclass(frozen=True)
class FleetPlan:
    name: str
    manager: str
    queue: str
    members: tuple[MemberPlan, ...]
    tenants: tuple[TenantReach, ...]

    @property
    def known_monthly_usd(self) -> float:
        return sum(m.monthly_usd or 0.0 for m in self.members)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "manager": self.manager,
            "queue": self.queue,
            "members": [
                {
                    "name": m.name,
                    "stack": m.stack,
                    "role": m.role,
                    "dispatchPosition": m.position,
                    "source": m.source or None,
                    "provider": m.provider,
                    "gpus": m.gpus,
                    "monthlyUsd": m.monthly_usd,
                }
                for m in self.members
            ],
            "tenants": [
                {
                    "name": t.tenant,
                    "workers": list(t.workers),
                    "combinedQuota": dict(t.combined),
                    "perWorker": {w: dict(u) for w, u in t.per_worker.items()},
                    "unknownWorkers": list(t.unknown),
                }
                for t in self.tenants
            ],
        }
