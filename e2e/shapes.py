"""The jobs each journey is tried with, sized against what the spec fixes (e2e/expect.py says
which rules of the spec decide a job's outcome, and why a job it cannot decide runs with either
outcome allowed on aws and is a skipped row elsewhere).

Per slot: one unit; one pod of a whole node's units; a gang of one such pod on each of two nodes;
one unit more than the tenant's `gpus` worth; on a topology-aware pool, jobs sized against its
leaves and blocks (the suite's sites: `leaf_nodes`, `site_labels`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from e2e.expect import EITHER, HOSTNAME, PREFERRED_TOPOLOGY, QUOTA_SAYS, REQUIRED_TOPOLOGY, RUNS, WAITS, Slot, slug
from gpuplat.model import SharingMode


@dataclass(frozen=True)
class Shape:
    """One job of a slot: `pods` pods of `units` each, admitted as one workload (all or none)."""

    slot: Slot
    name: str  # short, in the job's name and the report: single, node, gang, tas-<level>, ...
    pods: int
    units: int
    expect: str = RUNS  # runs | blocked
    why: str = ""  # the spec's reason for `expect`
    skip: str = ""  # non-empty: the suite cannot run it here, and why
    annotations: dict[str, str] = field(default_factory=dict)
    # Kueue's words that must explain a blocked job (a fragment of its own message).
    kueue_says: str = ""
    # A topology-aware job that runs: the level all its pods must share, the level they must span.
    within: str = ""
    spans: str = ""

    @property
    def total(self) -> int:
        return self.pods * self.units

    @property
    def together(self) -> bool:
        """A job of several pods that should run: a gang, judged on its pods running at once
        (e2e/gang.py)."""
        return self.pods > 1 and self.expect != WAITS

    @property
    def label(self) -> str:
        placed = "".join(f", {k.rsplit('-', 1)[-1]} {v}" for k, v in self.annotations.items()
                         if k == REQUIRED_TOPOLOGY)
        return f"{self.pods} pod{'s' if self.pods > 1 else ''} x {self.units} ({self.name}{placed})"

    @property
    def job_name(self) -> str:
        return f"e2e-{slug(self.slot.pool)}-{slug(self.slot.resource.split('/')[-1])}-{self.name}"[:63].rstrip("-")


def _sized(slot: Slot, name: str, pods: int, units: int, annotations: dict[str, str] | None = None,
           within: str = "", spans: str = "") -> Shape:
    """A job whose expected outcome follows from its size against what the spec fixes."""
    total = pods * units
    shape = Shape(slot, name, pods, units, annotations=dict(annotations or {}), within=within, spans=spans)
    if total > slot.flavor_ceiling:
        return dataclasses.replace(shape, expect=WAITS, kueue_says="> maximum capacity",
                                   why=f"{total} > {slot.tenant}'s gpus ({slot.tenant_gpus}) x {slot.per_gpu}: one "
                                       "job holds at most that of one flavor")
    if total <= slot.per_gpu:
        return dataclasses.replace(shape, why=f"{total} <= one GPU's worth ({slot.per_gpu}), which `check` guarantees "
                                              f"{slot.tenant} on {slot.pool} (it refuses a spec that leaves it none)")
    if slot.reach is None:
        return _open(shape, slot.why)
    guaranteed = slot.reach * slot.per_gpu
    if total <= guaranteed:
        return dataclasses.replace(shape, why=f"{total} <= the {slot.reach} GPU(s) x {slot.per_gpu} the spec gives "
                                              f"{slot.tenant} on {slot.pool} with the cohort idle")
    between = f"what the spec guarantees {slot.tenant} on {slot.pool} ({guaranteed}) and the most it allows"
    return _open(shape, f"{total} units lie between {between} ({slot.flavor_ceiling}): the plan's rounding decides")


def _open(shape: Shape, why: str) -> Shape:
    """A job the spec does not decide: on aws it is run, and must run or wait for quota in
    Kueue's words (its nodes are Karpenter's to launch); on provider kubernetes a skipped row."""
    if not shape.slot.aws:
        return dataclasses.replace(shape, skip=why)
    return dataclasses.replace(shape, expect=EITHER, kueue_says=QUOTA_SAYS,
                               why=f"{why}; at most {shape.slot.tenant}'s gpus worth, so it runs or waits for quota")


def leaf_nodes(nodes: int) -> int:
    """Nodes per narrowest fabric domain (leaf) in the suite's sites: four leaves, two per
    block, so a pool spans several blocks and leaves."""
    return max(1, nodes // 4)


def site_labels(levels: tuple[str, ...], index: int, nodes: int) -> dict[str, str]:
    """The fabric labels of a pool's `index`th node (levels widest first, hostname excluded):
    the narrowest level groups `leaf_nodes` nodes, each wider one twice as many."""
    wide = [level for level in levels if level != HOSTNAME]
    size = leaf_nodes(nodes)
    return {level: f"{level.rsplit('/', 1)[-1]}-{index // (size * 2 ** (len(wide) - 1 - depth))}"
            for depth, level in enumerate(wide)}


def per_container(slot: Slot) -> int:
    """The most units of a node one container can ask for: all of them, except HAMi's vGPUs, of
    which a container gets at most one per physical GPU."""
    return slot.gpus_per_node if slot.sharing is SharingMode.FRACTIONAL else slot.per_node


def shapes(slot: Slot) -> list[Shape]:
    """The jobs a slot is tried with: one unit; one pod of a whole node's units; a gang of one
    such pod on each of two nodes; one unit more than the tenant's `gpus` worth (it waits, in
    pods of one unit, so no node size is involved); on a topology-aware pool, one pod per node on one node more
    than a leaf holds, required within a block (it must span leaves) and within a leaf (it must
    wait)."""
    placed = {PREFERRED_TOPOLOGY: HOSTNAME} if slot.topology else {}
    found = [Shape(slot, "single", 1, 1, RUNS, f"{slot.tenant} may use {slot.pool}: `check` refuses a spec that "
                   "leaves it no GPU there", annotations=placed)]
    if slot.sharing is SharingMode.MPS:
        found.append(Shape(slot, "node", 1, slot.per_node, skip="MPS: the device plugin refuses more than one unit "
                           "per container (failRequestsGreaterThanOne), at container start, which kwok does not play"))
    else:
        found.append(_sized(slot, "node", 1, per_container(slot), annotations=placed))
    if slot.nodes < 2:
        found.append(Shape(slot, "gang", 2, slot.per_node, skip=f"{slot.pool} has one node at most"))
    elif slot.sharing is SharingMode.MPS:
        found.append(_sized(slot, "gang", 2, 1, annotations=placed))
    else:
        found.append(_sized(slot, "gang", 2, per_container(slot), annotations=placed))
    found.append(Shape(slot, "over", slot.flavor_ceiling + 1, 1, WAITS,
                       f"one unit more than {slot.tenant}'s gpus ({slot.tenant_gpus}) x {slot.per_gpu}: one job holds "
                       "at most that of one flavor", annotations=placed, kueue_says="> maximum capacity"))
    wide = [level for level in slot.topology if level != HOSTNAME]
    if slot.no_topology:
        found.append(Shape(slot, "tas-block", leaf_nodes(slot.nodes) + 1, slot.per_node, skip=slot.no_topology))
    if wide:
        size = leaf_nodes(slot.nodes)
        leaf, block = wide[-1], (wide[-2] if len(wide) > 1 else "")
        pods = size + 1
        if pods > slot.nodes:
            found.append(Shape(slot, "tas-leaf", pods, slot.per_node,
                               skip=f"{slot.pool}'s {slot.nodes} node(s) make one leaf"))
        else:
            over_leaf = _sized(slot, "tas-leaf", pods, slot.per_node, annotations={REQUIRED_TOPOLOGY: leaf})
            if not over_leaf.skip and over_leaf.expect == RUNS:  # sized to run: a leaf is what stops it
                over_leaf = Shape(slot, "tas-leaf", pods, slot.per_node, WAITS,
                                  f"{pods} whole nodes, required within one {leaf} of {size} node(s)",
                                  annotations={REQUIRED_TOPOLOGY: leaf}, kueue_says="allows to fit only")
            found.append(over_leaf)
            if block:
                found.append(_sized(slot, "tas-block", pods, slot.per_node, annotations={REQUIRED_TOPOLOGY: block},
                                    within=block, spans=leaf))
    return found
