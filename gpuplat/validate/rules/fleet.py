"""Rules on `fleet`: the references within the section, then what the members' own specs must
agree on (read offline by gpuplat/fleet/members.py; a member that cannot be read is skipped)."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplat.diagnostics import Level
from gpuplat.fleet.members import LoadedMember, load_member, loading_members
from gpuplat.fleet.quota import tenant_units
from gpuplat.model.fleet import DEFAULT_QUEUE
from gpuplat.validate.registry import Finding, rule
from gpuplat.validate.rules._common import Data, as_list, as_map, as_str, did_you_mean, listing, section

_MULTIKUEUE = "https://kueue.sigs.k8s.io/docs/concepts/multikueue/"
_SETUP = "https://kueue.sigs.k8s.io/docs/tasks/manage/setup_multikueue/"


def _members(fleet: Data) -> list[tuple[int, Data]]:
    return [(i, m) for i, m in enumerate(as_list(fleet.get("members"))) if as_map(m) is not None]


def _names(fleet: Data) -> list[str]:
    return [n for _, m in _members(fleet) if (n := as_str(m.get("name"))) is not None]


@rule(
    "GP288",
    "fleet-references",
    Level.ERROR,
    "MultiKueue dispatches from one manager cluster to worker clusters: the manager and every tenant's "
    "workers must be members, each named once, and a cluster cannot dispatch to itself (the remote "
    "workload would be the same object as its original).",
    source=_MULTIKUEUE,
    fix="Name the manager and each tenant's workers among `fleet.members` (by member name, once each); "
    "leave the manager out of the tenants' `members`; do not name the fleet queue `default`.",
)
def fleet_references(data: Data) -> Iterator[Finding]:
    fleet = section(data, "fleet")
    if fleet is None:
        return
    names: dict[str, int] = {}
    stacks: dict[str, int] = {}
    for i, member in _members(fleet):
        name, stack = as_str(member.get("name")), as_str(member.get("stack"))
        if name is not None and name in names:
            yield Finding(
                ("fleet", "members", i, "name"), f"member {name} is named twice (first: members[{names[name]}])"
            )
        if stack is not None and stack in stacks:
            yield Finding(
                ("fleet", "members", i, "stack"),
                f"stack {stack} is already member {listing(_names(fleet)[stacks[stack] : stacks[stack] + 1])}: "
                "one cluster would dispatch to itself",
            )
        names.setdefault(name or "", i)
        stacks.setdefault(stack or "", i)
    manager = as_str(fleet.get("manager"))
    if manager is not None and manager not in names:
        hint = did_you_mean(manager, names)
        yield Finding(
            ("fleet", "manager"),
            f"manager {manager} is not a member (members: {listing(names)})"
            + (f"; did you mean {hint}?" if hint else ""),
        )
    if as_str(fleet.get("queue")) == "default":
        yield Finding(
            ("fleet", "queue"),
            "the fleet queue cannot be `default`: that LocalQueue feeds the platform's own ClusterQueue, "
            f"on the manager too; use another name (the default is {DEFAULT_QUEUE})",
        )
    for t, tenant in enumerate(as_list(fleet.get("tenants"))):
        entry = as_map(tenant)
        for j, target in enumerate(as_list(entry.get("members")) if entry is not None else []):
            if target == manager:
                yield Finding(
                    ("fleet", "tenants", t, "members", j),
                    f"{target} is the manager: it dispatches the tenant's fleet jobs and cannot dispatch to itself "
                    "(its own GPUs serve its `default` queue)",
                )
            elif isinstance(target, str) and target not in names:
                hint = did_you_mean(target, names)
                yield Finding(
                    ("fleet", "tenants", t, "members", j),
                    f"{target} is not a member (members: {listing(names)})"
                    + (f"; did you mean {hint}?" if hint else ""),
                )


def _loaded(fleet: Data) -> Iterator[tuple[int, LoadedMember]]:
    """Each member compiled from its own files; nothing while members are being compiled."""
    if loading_members():
        return
    for i, member in _members(fleet):
        yield i, load_member(member)


@rule(
    "GP289",
    "fleet-member-kueue",
    Level.ERROR,
    "A member is a Kueue cluster: the manager runs the MultiKueue admission check, a worker admits the "
    "dispatched workloads in its own queues. A member without Kueue, or whose spec does not compile, "
    "cannot take part.",
    source=_SETUP,
    fix="Give the member `scheduling.queueing: kueue` and fix its spec (`gpuplat check` on its files); "
    "a member of this project needs stacks/<stack>.yaml or `spec`; a worker on provider kubernetes needs "
    "`server`.",
)
def fleet_member_kueue(data: Data) -> Iterator[Finding]:
    fleet = section(data, "fleet")
    if fleet is None:
        return
    for i, member in _loaded(fleet):
        if member.problem:
            yield Finding(
                ("fleet", "members", i, "spec" if "spec" in _members(fleet)[i][1] else "stack"),
                f"member {member.name} cannot be compiled: {member.problem}",
            )
        elif (
            member.model is not None
            and member.model.target.provider.value == "kubernetes"
            and (member.name != as_str(fleet.get("manager")) and as_str(_members(fleet)[i][1].get("server")) is None)
        ):
            yield Finding(
                ("fleet", "members", i),
                f"member {member.name} is a worker on provider kubernetes without `server`: its credentials need "
                "the API server URL the manager reaches it at",
            )
        if member.model is not None and member.model.scheduling.queueing != "kueue":
            yield Finding(
                ("fleet", "members", i),
                f"member {member.name} ({member.source}) has scheduling.queueing: {member.model.scheduling.queueing}; "
                "a fleet member needs Kueue",
            )


@rule(
    "GP299",
    "fleet-sections-agree",
    Level.ERROR,
    "MultiKueue creates each job on a worker in the same namespace and LocalQueue as on the manager, so "
    "every member must name the same fleet queue; and members must agree on the manager and the order, or "
    "two managers would dispatch to each other (a cycle).",
    source=_SETUP,
    fix="Give every member's spec the same `fleet` section (name, manager, queue, members).",
)
def fleet_sections_agree(data: Data) -> Iterator[Finding]:
    fleet = section(data, "fleet")
    if fleet is None:
        return
    name, manager = as_str(fleet.get("name")), as_str(fleet.get("manager"))
    queue = as_str(fleet.get("queue")) or DEFAULT_QUEUE
    order = _names(fleet)
    for i, member in _loaded(fleet):
        theirs = member.model.fleet if member.model is not None else None
        if member.model is None:
            continue
        where = ("fleet", "members", i)
        if theirs is None:
            yield Finding(
                where,
                f"member {member.name} ({member.source}) has no fleet section: it would emit no "
                f"LocalQueue {queue} and no credentials for the manager",
            )
            continue
        if theirs.queue != queue:
            yield Finding(
                where,
                f"member {member.name} names the fleet queue {theirs.queue}, this spec {queue}: "
                f"jobs dispatched to it would find no LocalQueue {queue}",
            )
        if theirs.manager != manager or theirs.name != name:
            yield Finding(
                where,
                f"member {member.name} belongs to fleet {theirs.name} managed by {theirs.manager}, "
                f"this spec to fleet {name} managed by {manager}: two managers dispatching to each "
                "other form a cycle",
            )
        elif [m.name for m in theirs.members] != order:
            yield Finding(
                where,
                f"member {member.name} lists the members as {listing(m.name for m in theirs.members)}, "
                f"this spec as {listing(order)}",
            )


@rule(
    "GP239",
    "fleet-tenant-resources",
    Level.ERROR,
    "MultiKueue may dispatch a tenant's job to any worker the tenant may use, into the tenant's namespace "
    "there: each of those workers must have the tenant and offer it every resource name (nvidia.com/gpu, "
    "a MIG profile, nvidia.com/gpu.shared) its jobs may ask for, or the job waits there unadmitted.",
    source=_MULTIKUEUE,
    fix="Add the tenant to the worker's spec with pools offering the same resources, or leave that worker "
    "out of the tenant's `fleet.tenants[].members`.",
)
def fleet_tenant_resources(data: Data) -> Iterator[Finding]:
    fleet = section(data, "fleet")
    if fleet is None:
        return
    manager = as_str(fleet.get("manager"))
    loaded = {m.name: (i, m) for i, m in _loaded(fleet)}
    reach = {
        as_str(t.get("name")): (k, as_list(t.get("members")))
        for k, t in enumerate(as_list(fleet.get("tenants")))
        if as_map(t) is not None
    }
    manager_model = loaded[manager][1].model if manager in loaded else None
    if manager_model is None:
        return
    for tenant in manager_model.tenants:
        k, allowed = reach.get(tenant.name, (None, None))
        workers = [n for n in _names(fleet) if n != manager and (allowed is None or n in allowed)]
        offered = {w: _units(loaded, w, tenant.name) for w in workers}
        wanted = sorted({r for units in offered.values() if units for r in units})
        for w in workers:
            units = offered[w]
            if units is None:
                continue  # not readable offline
            where: tuple[str | int, ...] = (
                ("fleet", "tenants", k, "members", allowed.index(w))
                if allowed is not None and k is not None
                else ("fleet", "members", loaded[w][0])
            )
            if not units:
                yield Finding(
                    where,
                    f"tenant {tenant.name} may use member {w}, whose spec has no tenant {tenant.name} "
                    f"(no namespace, no LocalQueue there)",
                )
                continue
            missing = [r for r in wanted if r not in units]
            if missing:
                yield Finding(
                    where,
                    f"tenant {tenant.name} may use member {w}, whose pools offer it no "
                    f"{listing(missing)} (other members do): such jobs would wait there unadmitted",
                )


def _units(loaded: dict[str, tuple[int, LoadedMember]], member: str, tenant: str) -> dict[str, int] | None:
    entry = loaded.get(member)
    if entry is None or entry[1].model is None or entry[1].plan is None:
        return None
    if entry[1].model.scheduling.queueing != "kueue":
        return None  # GP289 reports it; without Kueue there are no queues to compare
    return tenant_units(entry[1].model, entry[1].plan, tenant)
