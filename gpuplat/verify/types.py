# pyright: strict
"""The records a journey is made of: steps, journeys, and what one step hands the next."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

QUEUE = "queue"  # 1. LocalQueue -> ClusterQueue selecting the namespace
QUOTA = "quota"  # 2. a flavor of the pool with quota for one unit
PLACEMENT = "placement"  # 3. the flavor's node labels, taints, tolerations
TOPOLOGY = "topology"  # 3b. a flavor naming a Topology takes the job (Kueue's TAS-only rule)
NODES = "nodes"  # 4. nodes carrying those labels, whose taints the job tolerates
CAPACITY = "capacity"  # 5. Karpenter knows the nodes offer the resource (aws)
DEVICE_PLUGIN = "device-plugin"  # 6. a device plugin advertises the resource on those nodes
ADMISSION = "admission"  # 7. LimitRange, Pod Security, ResourceQuota admit the pod
VOLUMES = "volumes"  # 8. the tenant's claims bind to distinct volumes
REPAIR = "repair"  # 9. what replaces the pool's failed node is on, and only if the spec asks (repair.py)

STEP_ORDER = (QUEUE, QUOTA, PLACEMENT, TOPOLOGY, NODES, CAPACITY, DEVICE_PLUGIN, ADMISSION, VOLUMES, REPAIR)


@dataclass(frozen=True)
class Step:
    step: str
    ok: bool
    detail: str
    # False: what the step reads could not be known here (a chart not given to render); the
    # step is then not a failure (ok), and the output says it was not checked.
    checked: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "ok": self.ok, "checked": self.checked, "detail": self.detail}


def not_checked(step: str, why: str) -> Step:
    return Step(step, True, f"not checked: {why}", checked=False)


@dataclass(frozen=True)
class Journey:
    tenant: str
    pool: str
    resource: str
    steps: tuple[Step, ...]

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.steps)

    @property
    def failed(self) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if not s.ok)

    @property
    def unchecked(self) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if not s.checked)

    def to_json(self) -> dict[str, Any]:
        return {
            "tenant": self.tenant,
            "pool": self.pool,
            "resource": self.resource,
            "ok": self.ok,
            "steps": [s.to_json() for s in self.steps],
        }


@dataclass(frozen=True)
class Placement:
    """Where a flavor sends an admitted job: the node labels it selects, the tolerations it has."""

    flavor: str
    node_labels: dict[str, str]
    tolerations: list[dict[str, Any]]  # injected by the flavor plus the job's own
    spot: bool


@dataclass(frozen=True)
class Nodes:
    """The nodes a placement lands on, as far as the emitted objects describe them."""

    source: str  # e.g. "NodePool train-spot" or "pool nodeSelector + DaemonSet atlas-system/pool-labeler-lab"
    labels: dict[str, str]
    taints: list[dict[str, Any]]
    node_pool: dict[str, Any] | None = None  # aws: the Karpenter NodePool
    instance_types: tuple[str, ...] = field(default_factory=lambda: ())


@dataclass(frozen=True)
class Outcome:
    """A step's result and, when it succeeded, what the next step works from."""

    step: Step
    value: Any = None
