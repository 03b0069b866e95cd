# pyright: strict
"""Every account fact a deploy depends on, checked against one account's facts.

One implementation for the three places that ask: the Pulumi program at start, before its first
resource (components/aws/preflight.py, so also under `up --skip-preview`), `gpuplat preflight`
and `gpuplat preview --account-facts`. Pure: facts in, sentences out; a fact not read is not
checked. The runner's way to a private endpoint is stack config, not an account fact, and is
checked where the config is read.
"""

from __future__ import annotations

from gpuplat.catalog.s3express import s3_express_problem
from gpuplat.model import Platform, Provider
from gpuplat.plan import Plan

from .facts import AccountFacts, CapacityBlock
from .offerings import offering_problem
from .quotas import quota_problems

_HOLDING = ("scheduled", "active", "payment-pending")


def _zone_problems(model: Platform, plan: Plan, zones: dict[str, str]) -> list[str]:
    region = model.target.region or ""
    problems = [
        f"availability zone {zone} is not among the zones {region} reports to this account "
        f"({', '.join(sorted(zones))}); check target.zones"
        for zone in model.target.zones
        if zone not in zones
    ]
    warm = model.storage.warm
    zone = plan.fabric_zone
    if warm is not None and warm.zone_id is None and zone is not None and zone in zones:
        problem = s3_express_problem(region, zone, zones[zone])
        if problem is not None:
            problems.append(problem)
    return problems


def _eks_problem(model: Platform, versions: tuple[str, ...]) -> str | None:
    minor = model.target.kubernetes_version
    if minor in versions:
        return None
    return (
        f"EKS in {model.target.region} does not create clusters on Kubernetes {minor} for this account "
        f"(it offers {', '.join(versions) or 'none'}); set target.kubernetesVersion to one of them"
    )


def _selected(block: CapacityBlock, ids: tuple[str, ...], tags: dict[str, str]) -> bool:
    # Karpenter's capacityReservationSelectorTerms: any term selects (ids or the whole tag set).
    return block.id in ids or (bool(tags) and all(block.tags.get(k) == v for k, v in tags.items()))


def _block_problems(plan: Plan, blocks: tuple[CapacityBlock, ...]) -> list[str]:
    problems: list[str] = []
    for use in plan.capacity_blocks:
        found = [
            b
            for b in blocks
            if _selected(b, use.ids, dict(use.tags)) and b.instance_type == use.instance_type and b.state in _HOLDING
        ]
        held = sum(b.instances for b in found)
        if held < use.nodes:
            which = ", ".join([*use.ids, *(f"{k}={v}" for k, v in sorted(use.tags.items()))])
            problems.append(
                f"pool {use.pool}: the Capacity Blocks selected by {which} hold {held} {use.instance_type} "
                f"instance(s) in this account, and the plan puts {use.nodes} reserved node(s) in them; buy "
                f"blocks for the rest or lower the pool's reserved share"
            )
    return problems


def preflight_problems(model: Platform, plan: Plan, facts: AccountFacts) -> list[str]:
    """Sentences, each naming what AWS would refuse and how to fix it; [] when the deploy can start."""
    if model.target.provider is not Provider.AWS:
        return []
    if facts.region != model.target.region:
        return [
            f"the account facts were read in {facts.region}, and the spec deploys to {model.target.region}; "
            f"read them again (gpuplat preflight --save) in the spec's region"
        ]
    problems: list[str] = []
    if facts.zones is not None:
        problems += _zone_problems(model, plan, dict(facts.zones))
    if facts.offerings is not None:
        for pool in model.pools:
            offered = list(facts.offerings.get(pool.instance_type or "", ()))
            problem = offering_problem(model, plan, pool, offered)
            if problem is not None:
                problems.append(problem)
    if facts.eks_versions is not None and (problem := _eks_problem(model, facts.eks_versions)) is not None:
        problems.append(problem)
    if facts.capacity_blocks is not None:
        problems += _block_problems(plan, facts.capacity_blocks)
    if facts.quotas is not None:
        problems += quota_problems(model, plan, facts.quotas)
    return problems
