"""Rules on how failed nodes are repaired and their work resumed (docs/health.md):
`gpuNodePools[].health` and `scheduling.requeueLimit`."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplat.diagnostics import Level
from gpuplat.validate.registry import Finding, rule
from gpuplat.validate.rules._common import Data, as_map, as_str, is_int, markets, pool_name, pools, provider, section
from gpuplat.vocabulary import Market

REPAIR_SOURCE = "https://karpenter.sh/docs/concepts/disruption/#node-auto-repair"


def _repair(data: Data, pool: Data) -> str:
    """The pool's repair as written, else the provider's default."""
    health = as_map(pool.get("health")) or {}
    written = as_str(health.get("repair"))
    return written or ("replace" if provider(data) == "aws" else "none")


@rule(
    "GP380",
    "health-repair-needs-provisioner",
    Level.ERROR,
    "Replacing or rebooting a failed node needs Karpenter, which launches and reboots nodes; on provider "
    "kubernetes the nodes are the team's own and gpuplat provisions none.",
    source=REPAIR_SOURCE,
    fix=(
        "On provider kubernetes set `health.repair: none` (or leave it out) and repair nodes the way the cluster "
        "allows."
    ),
)
def health_repair_needs_provisioner(data: Data) -> Iterator[Finding]:
    if provider(data) != "kubernetes":
        return
    for i, pool in pools(data):
        health = as_map(pool.get("health")) or {}
        repair = health.get("repair")
        if repair in ("replace", "reboot"):
            yield Finding(
                ("gpuNodePools", i, "health", "repair"),
                f"pool {pool_name(pool, i)}: repair {repair} needs Karpenter, which provider kubernetes does not have "
                f"(the cluster's nodes are its own); use repair: none",
            )


@rule(
    "GP381",
    "health-repair-one-switch",
    Level.ERROR,
    "Karpenter's node repair is one feature gate for the whole controller (NodeRepair), and reboot in place "
    "another (the AWS provider's RebootForRepair): once on, each acts on unhealthy nodes of every NodePool, "
    "so pools cannot differ.",
    source=REPAIR_SOURCE,
    fix="Give every aws pool the same `health.repair` (replace is the default).",
)
def health_repair_one_switch(data: Data) -> Iterator[Finding]:
    if provider(data) != "aws":
        return
    chosen = [(i, pool, _repair(data, pool)) for i, pool in pools(data)]
    if len({r for _, _, r in chosen}) < 2:
        return
    # The first pool that turns a gate on (reboot turns both) sets the controller's repair.
    first = next((c for want in ("reboot", "replace") for c in chosen if c[2] == want), chosen[0])
    said = {"reboot": "turns Karpenter's node repair and its reboot in place on",
            "replace": "turns Karpenter's node repair on"}.get(first[2], "turns node repair off")
    for i, pool, repair in chosen:
        if repair != first[2]:
            yield Finding(
                ("gpuNodePools", i, "health", "repair"),
                f"pool {pool_name(pool, i)} says repair {repair}, but pool {pool_name(first[1], first[0])} says "
                f"{first[2]}, which {said} for every pool; give all pools the same repair",
            )


@rule(
    "GP382",
    "health-spare-nodes-reserved",
    Level.ERROR,
    "Spare nodes are reserved capacity a replacement launches into; they need a reservation, and a repair "
    "that launches replacements.",
    source="https://karpenter.sh/docs/tasks/odcrs/",
    fix=(
        "Add `reserved` to the pool's `markets` and keep `health.repair: replace` or `reboot` (provider aws), "
        "or remove `health.spareNodes`."
    ),
)
def health_spare_nodes_reserved(data: Data) -> Iterator[Finding]:
    for i, pool in pools(data):
        health = as_map(pool.get("health")) or {}
        spare = health.get("spareNodes")
        if not is_int(spare) or spare <= 0:
            continue
        name, at = pool_name(pool, i), ("gpuNodePools", i, "health", "spareNodes")
        if provider(data) != "aws":
            yield Finding(at, f"pool {name}: spare nodes are held in an aws reservation; provider kubernetes has none")
        elif Market.RESERVED not in markets(pool):
            yield Finding(at, f"pool {name} keeps {spare} spare nodes but buys no reserved capacity to hold them in; "
                              f"add reserved to its markets")
        elif _repair(data, pool) == "none":
            yield Finding(at, f"pool {name} keeps {spare} spare nodes but repair none never launches a replacement "
                              f"into them; set repair: replace or reboot, or remove spareNodes")


@rule(
    "GP383",
    "requeue-limit-needs-kueue",
    Level.WARNING,
    "The requeue limit is Kueue's (waitForPodsReady.requeuingStrategy.backoffLimitCount); without Kueue "
    "nothing evicts, requeues or counts.",
    source="https://kueue.sigs.k8s.io/docs/tasks/manage/setup_wait_for_pods_ready/",
    fix="Set `scheduling.queueing: kueue`, or remove `scheduling.requeueLimit`.",
)
def requeue_limit_needs_kueue(data: Data) -> Iterator[Finding]:
    scheduling = section(data, "scheduling")
    if scheduling is not None and scheduling.get("queueing") == "none" and "requeueLimit" in scheduling:
        yield Finding(
            ("scheduling", "requeueLimit"),
            "requeueLimit has no effect with queueing: none, because Kueue is what requeues a job whose pods were "
            "lost; use queueing: kueue or remove requeueLimit",
        )
