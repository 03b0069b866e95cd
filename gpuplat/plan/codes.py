"""The planner's finding codes: one record per code, shared by the planner and docs/rules.md.

Semantic rules (gpuplat/validate/registry.py) see the spec; these findings come from the plan
itself (a split, a flow, a memory estimate), so they live beside the planner. Each code is stable
like a rule's (users suppress by code) and carries the same fields: name, level, one-line
rationale naming the fact it rests on, and the URL of that fact's source (empty for a platform
convention). Build findings with `PlanCode.finding` so the level is written once.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplat.catalog import fsx
from gpuplat.diagnostics import Level
from gpuplat.plan.types import PlanFinding
from gpuplat.spec.positions import PathPart

_KUEUE_CQ = "https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/"
_KUEUE_TAS = "https://kueue.sigs.k8s.io/docs/concepts/topology_aware_scheduling/"


@dataclass(frozen=True)
class PlanCode:
    code: str
    name: str
    level: Level
    rationale: str
    source: str = ""
    fix: str = ""  # what to change in the spec, in general, as a rule's fix

    def finding(self, path: tuple[PathPart, ...], message: str) -> PlanFinding:
        return PlanFinding(self.code, self.level, path, message)


PROCUREMENT_INFEASIBLE = PlanCode(
    "GP230",
    "procurement-infeasible",
    Level.ERROR,
    "Nodes are bought whole, so a market's share can only land within one node of its largest pool of the ratio.",
    fix=(
        "Change the `procurement` percentages to ones whole nodes can reach (the message names the nearest), or "
        "widen the pools' `markets`."
    ),
)
PROCUREMENT_POOL_MARKETS = PlanCode(
    "GP231",
    "procurement-pool-markets",
    Level.ERROR,
    "A pool whose markets all get 0 % of the split has no node to run on.",
    fix=(
        "Give one of the pool's markets a share in `procurement`, or add a market that has one to the pool's "
        "`markets`."
    ),
)
PROCUREMENT_PRICE_MISSING = PlanCode(
    "GP232",
    "procurement-price-missing",
    Level.ERROR,
    "Cost and savings are priced per instance type; a type with no on-demand price cannot be costed.",
    "https://aws.amazon.com/ec2/pricing/on-demand/",
    fix="Add the instance type's on-demand hourly price under `procurement.prices`, or use a type the catalog prices.",
)
KUEUE_FLAVORS_PER_GROUP = PlanCode(
    "GP233",
    "kueue-flavors-per-group",
    Level.ERROR,
    "A ClusterQueue resource group lists at most 64 flavors (Kueue CRD spec.resourceGroups[].flavors maxItems).",
    _KUEUE_CQ,
    fix="Give the tenant a `pools` allow-list with fewer pools, so each resource it asks for has at most 64 flavors.",
)
HARD_QUOTA_UNPLACEABLE = PlanCode(
    "GP234",
    "hard-quota-unplaceable",
    Level.ERROR,
    "Kueue lends only unused quota, so a hard tenant's guarantee beyond its pools' capacity cannot be kept.",
    _KUEUE_CQ,
    fix="Lower the hard tenant's `gpus`, raise its pools' `nodes.max`, or make it `isolation: soft`.",
)
WORKLOAD_DOES_NOT_FIT = PlanCode(
    "GP236",
    "workload-does-not-fit",
    Level.ERROR,
    "A workload's memory per unit must fit the usable 90 % of one unit of its pool.",
    fix=(
        "Run the workload on a pool with more memory per unit (a larger MIG profile, whole GPUs), or shrink what it"
        " needs: `microBatch`, `sequenceLength` or `contextLength`, `gradientCheckpointing`, `sharding`, "
        "`precision`."
    ),
)
HOT_TIER_CHECKPOINTS = PlanCode(
    "GP237",
    "hot-tier-checkpoints",
    Level.ERROR,
    "The hot tier holds the last keepCheckpoints checkpoints of every training workload at once.",
    fix="Raise `storage.hot.capacityTiB`, or lower the workloads' `keepCheckpoints`.",
)
WORKLOAD_GPUS_EXCEED_POOL = PlanCode(
    "GP238",
    "workload-gpus-exceed-pool",
    Level.ERROR,
    "A workload cannot use more units than its pool has at nodes.max.",
    fix="Lower the workload's GPUs, or raise its pool's `nodes.max`.",
)
FABRIC_TOO_SMALL = PlanCode(
    "GP240",
    "fabric-too-small",
    Level.ERROR,
    "A fat-tree of switch radix k holds at most k^2/2 hosts in two tiers and k^3/4 in three (full bisection).",
    "https://en.wikipedia.org/wiki/Fat_tree",
    fix="Raise `network.fabric.switchRadix` or `tiers`, or lower the fabric pools' `nodes.max`.",
)
SOFT_QUOTA_OVERSUBSCRIBED = PlanCode(
    "GP351",
    "soft-quota-oversubscribed",
    Level.WARNING,
    "Kueue lends only quota others leave idle: a soft tenant's GPUs beyond its pools' capacity are not guaranteed.",
    _KUEUE_CQ,
    fix="Lower the tenant's `gpus` to what its pools hold, or acknowledge that the rest is borrowed.",
)
TOPOLOGY_AWARE_OFF = PlanCode(
    "GP352",
    "topology-aware-off-autoscaled",
    Level.WARNING,
    "Kueue admits topology-aware work only onto existing nodes, and Karpenter adds nodes only for existing pods.",
    _KUEUE_TAS,
    fix="Set the fabric pool's `nodes.min` equal to `nodes.max` (a fixed size), or acknowledge it.",
)
MINIMUM_NOT_HELD = PlanCode(
    "GP353",
    "minimum-nodes-not-held",
    Level.WARNING,
    "A pool's minimum is held on reserved and on-demand capacity only: spot can be taken away at any time.",
    "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-interruptions.html",
    fix="Add on-demand to the pool's `markets` or shift `procurement` toward it, or lower `nodes.min`.",
)
# An error, though in the 3xx band where it began as a warning (codes never change): Kueue never
# admits such a job, and `verify` fails its journey, so `check` must not pass it.
NO_QUOTA_ON_POOL = PlanCode(
    "GP354",
    "no-quota-on-allowed-pool",
    Level.ERROR,
    "Kueue admits a job only within quota: nominal of its ClusterQueue, or borrowed from the cohort's other queues.",
    _KUEUE_CQ,
    fix="Give the tenant quota on that pool (its `gpus` and `pools`), or remove the pool from its `pools`.",
)
NO_INSTANCE_TOPOLOGY = PlanCode(
    "GP355",
    "topology-aware-off-no-instance-topology",
    Level.WARNING,
    "Kueue places topology-aware work only on nodes carrying every level's label; EKS labels only the "
    "instance types EC2's instance topology describes.",
    "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-topology-prerequisites.html",
    fix=(
        "Use an instance type with EC2 instance topology for the fabric pool, or acknowledge that placement is by "
        "placement group only."
    ),
)
LUSTRE_OVER_DEFAULT_QUOTA = PlanCode(
    "GP356",
    "lustre-storage-over-default-quota",
    Level.WARNING,
    "FSx refuses a Lustre file system that takes the account's PERSISTENT_2 Lustre storage in the region "
    f"past its quota ('{fsx.STORAGE_QUOTA_NAME}', {fsx.STORAGE_QUOTA_CODE}); the default is "
    f"{fsx.DEFAULT_STORAGE_QUOTA_GIB:,} GiB and an increase is granted on request.",
    fsx.QUOTAS_GUIDE,
    fix=f"Ask AWS for more '{fsx.STORAGE_QUOTA_NAME}' ({fsx.STORAGE_QUOTA_CODE}) in the region (Service "
    "Quotas), or lower the hot tier's capacity.",
)

PLAN_CODES: dict[str, PlanCode] = {
    c.code: c
    for c in (
        PROCUREMENT_INFEASIBLE,
        PROCUREMENT_POOL_MARKETS,
        PROCUREMENT_PRICE_MISSING,
        KUEUE_FLAVORS_PER_GROUP,
        HARD_QUOTA_UNPLACEABLE,
        WORKLOAD_DOES_NOT_FIT,
        HOT_TIER_CHECKPOINTS,
        WORKLOAD_GPUS_EXCEED_POOL,
        FABRIC_TOO_SMALL,
        SOFT_QUOTA_OVERSUBSCRIBED,
        TOPOLOGY_AWARE_OFF,
        MINIMUM_NOT_HELD,
        NO_QUOTA_ON_POOL,
        NO_INSTANCE_TOPOLOGY,
        LUSTRE_OVER_DEFAULT_QUOTA,
    )
}
