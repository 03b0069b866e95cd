"""The bare Pulumi SDK cost of registering a recorded set of resources.

`replay` registers the same resources as a recording (same types, names, parents, inputs,
dependsOn, providers, aliases, protect / retainOnDelete) with plain `pulumi.CustomResource`,
`pulumi.ProviderResource` and `pulumi.ComponentResource` objects, under
`pulumi.runtime.set_mocks` with a trivial echo Mocks and the event loop
`@pulumi.runtime.test` drives. No component code, no typed SDK classes, no recording
monitor: what is left is what the SDK itself spends per registration.

Deliberate simplifications (the bare run is a floor of the SDK cost, not a twin):

* Inputs are the recorded plain values; a {"$resource": urn} reference becomes the replayed
  Resource object. The real program passes Outputs between resources instead.
* Invokes (getCallerIdentity, getPartition ...) are not replayed: they are not resources.
* Components register their recorded outputs right after construction, not after their
  children; the SDK's work is the same.
* Python's cycle collector is paused during the replay, as gpuplat's recording engine pauses
  it (gpuplat/preview/engine.py), so both sides are measured without it.
* Resources are created in a topological order of parent, dependsOn, provider and
  resource-reference edges (pre-order where those allow), so every option can name an
  existing Resource object.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
from pulumi.runtime import MockCallArgs, MockResourceArgs, Mocks, set_mocks
from pulumi.runtime.mocks import test as pulumi_test

from gpuplat.preview import RecordedResource
from gpuplat.preview.engine import cycle_collector_paused

STACK_TYPE = "pulumi:pulumi:Stack"
PROVIDER_PREFIX = "pulumi:providers:"


class EchoMocks(Mocks):
    """Every resource's state is its inputs; every invoke returns its arguments."""

    def __init__(self) -> None:
        self.registered = 0  # registrations that reached the monitor (components too)

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[Any, Any]]:
        self.registered += 1
        return (f"{args.name}-id" if args.custom else None), dict(args.inputs)

    def call(self, args: MockCallArgs) -> tuple[dict[Any, Any], list[tuple[str, str]] | None]:
        return dict(args.args), None


def _refs(value: Any, out: set[str]) -> None:
    if isinstance(value, dict):
        if set(value) == {"$resource"} and isinstance(value["$resource"], str):
            out.add(value["$resource"])
            return
        for item in value.values():
            _refs(item, out)
    elif isinstance(value, list):
        for item in value:
            _refs(item, out)


def _edges(r: RecordedResource) -> set[str]:
    needs: set[str] = set(r.options.get("dependsOn", ()))
    if r.parent:
        needs.add(r.parent)
    if r.options.get("provider"):
        needs.add(r.options["provider"])
    needs.update(r.options.get("providers", {}).values())
    _refs(r.inputs, needs)
    _refs(r.outputs, needs)
    return needs


def replay_order(resources: Sequence[RecordedResource]) -> list[RecordedResource]:
    """The resources (without the stack) so that everything a resource names comes first."""
    by_urn = {r.urn: r for r in resources if r.type != STACK_TYPE}
    done: set[str] = set()
    order: list[RecordedResource] = []
    for start in by_urn:
        if start in done:
            continue
        # Iterative depth-first post-order: a dependency chain can be thousands long.
        stack: list[tuple[str, list[str]]] = [(start, sorted(_edges(by_urn[start]) & by_urn.keys()))]
        visiting = {start}
        while stack:
            urn, pending = stack[-1]
            nxt = next((p for p in pending if p not in done), None)
            if nxt is None:
                stack.pop()
                visiting.discard(urn)
                if urn not in done:
                    done.add(urn)
                    order.append(by_urn[urn])
                continue
            pending.remove(nxt)
            if nxt in visiting:
                raise ValueError(f"dependency cycle through {nxt}")
            visiting.add(nxt)
            stack.append((nxt, sorted(_edges(by_urn[nxt]) & by_urn.keys())))
    return order


def _value(value: Any, objects: Mapping[str, pulumi.Resource]) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$resource"} and value["$resource"] in objects:
            return objects[value["$resource"]]
        return {k: _value(v, objects) for k, v in value.items()}
    if isinstance(value, list):
        return [_value(v, objects) for v in value]
    return value


def _alias(raw: Any) -> pulumi.Alias | str:
    if isinstance(raw, str):
        return raw
    # Unset Alias fields must stay unset (the SDK's sentinel is `...`), not None.
    fields = {"name": "name", "type": "type_", "stack": "stack", "project": "project", "parentUrn": "parent"}
    return pulumi.Alias(**{arg: raw[key] for key, arg in fields.items() if key in raw})


def _options(r: RecordedResource, objects: Mapping[str, pulumi.Resource]) -> pulumi.ResourceOptions:
    options = r.options
    depends = [objects[u] for u in options.get("dependsOn", ()) if u in objects]
    provider = objects.get(options.get("provider", ""))
    providers = [objects[u] for u in options.get("providers", {}).values() if u in objects]
    return pulumi.ResourceOptions(
        parent=objects.get(r.parent or ""),
        depends_on=depends or None,
        provider=provider if isinstance(provider, pulumi.ProviderResource) else None,
        providers=[p for p in providers if isinstance(p, pulumi.ProviderResource)] or None,
        aliases=[_alias(a) for a in options.get("aliases", ())] or None,
        protect=options.get("protect"),
        retain_on_delete=options.get("retainOnDelete"),
        id=options.get("read"),
    )


def _register(resources: Sequence[RecordedResource]) -> dict[str, pulumi.Resource]:
    objects: dict[str, pulumi.Resource] = {}
    for r in resources:
        opts = _options(r, objects)
        props = _value(r.inputs, objects)
        obj: pulumi.Resource
        if r.type.startswith(PROVIDER_PREFIX):
            obj = pulumi.ProviderResource(r.type[len(PROVIDER_PREFIX) :], r.name, props, opts)
        elif r.custom:
            obj = pulumi.CustomResource(r.type, r.name, props, opts)
        else:
            component = pulumi.ComponentResource(r.type, r.name, None, opts)
            component.register_outputs(_value(r.outputs, objects))
            obj = component
        objects[r.urn] = obj
    return objects


def replay(resources: Sequence[RecordedResource], *, project: str, stack: str) -> int:
    """Register `resources` with the bare SDK under echo mocks; returns how many registrations
    reached the mock monitor (the stack not counted).

    Like the recording engine, it runs on a fresh thread (fresh contextvars, fresh event
    loop), so nothing leaks between runs. Ordering is done beforehand by the caller
    (replay_order) and is not part of the timed work when the caller times only this.
    """
    outcome: dict[str, Any] = {}

    def target() -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        mocks = EchoMocks()
        try:
            set_mocks(mocks, project=project, stack=stack, preview=True)

            @pulumi_test
            def program() -> None:
                _register(resources)

            program()
            outcome["count"] = mocks.registered
        except BaseException as exc:  # re-raised on the caller's thread
            outcome["error"] = exc
        finally:
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            loop.close()
            asyncio.set_event_loop(None)

    worker = threading.Thread(target=target, name="bench-bare-replay", daemon=True)
    # The collector paused as the recording engine pauses it: its cost is a function of the
    # heap the process holds (here the recordings and provider SDKs the bench loaded), not of
    # the SDK's work, and left on it was 45 % of this floor on the medium spec.
    with cycle_collector_paused():
        worker.start()
        worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return int(outcome["count"])
