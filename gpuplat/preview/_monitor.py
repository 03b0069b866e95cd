# pyright: basic
# (subclasses pulumi's untyped MockMonitor and handles untyped protobuf requests.)
"""The recording resource monitor: pulumi's MockMonitor, made complete and strict.

The base class is a test double: it drops options, resolves resource references by
constructing live resources inside the RPC, and never rejects anything. This subclass
records every registration with its options, answers from the deterministic tables in
_mockdata, and refuses what the real engine refuses (duplicate URNs) or what an offline
engine cannot reproduce faithfully (transforms, resource method calls).

All handlers work on the protobuf requests directly: echoing `request.object` back as the
output state avoids a deserialize/serialize round trip per resource.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.mocks import MockCallArgs, MockMonitor, MockResourceArgs, Mocks
from pulumi.runtime.proto import resource_pb2
from pulumi.runtime.settings import get_project, get_stack

from . import progress
from ._defaults import default_provider
from ._facts_invokes import FactNotFoundError
from ._invokes import invoke
from ._mockdata import FromInput, MockContext, Patch, resource_outputs
from ._render import SIG_KEY, known_string, render_struct, value_to_python
from .records import DuplicateUrnError, RecordedResource, UnsupportedFeatureError


class _NoMocks(Mocks):
    """Every MockMonitor entry point that would consult Mocks is overridden below."""

    def call(self, args: MockCallArgs) -> tuple[dict, list[tuple[str, str]] | None]:
        raise AssertionError("RecordingMonitor answers invokes itself")

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict]:
        raise AssertionError("RecordingMonitor answers registrations itself")


@dataclass
class _Entry:
    urn: str
    type: str
    name: str
    parent: str | None
    custom: bool
    inputs: dict[str, Any]
    options: dict[str, Any]
    id: str
    state: struct_pb2.Struct = field(repr=False)


class RecordingMonitor(MockMonitor):
    def __init__(self, context: MockContext, config: dict[str, str] | None = None) -> None:
        super().__init__(_NoMocks())
        self._context = context.for_region(context.region)
        self._config = dict(config or {})  # the stack's settings: the default providers' inputs
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._outputs: dict[str, dict[str, Any]] = {}
        self._provider_regions: dict[str, str] = {}  # aws provider URN -> its `region` input

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        # The real engine (resource.NewURN) qualifies a type with the parent's WHOLE type chain
        # and leaves the root stack out; the SDK mock uses only the immediate parent type and
        # keeps the stack. Match the engine, so preview URNs equal `pulumi preview`'s and
        # duplicate-URN errors fire exactly where the real engine's would.
        qualified = type_
        if parent:
            parent_type = parent.split("::")[2]
            if parent_type != "pulumi:pulumi:Stack":
                qualified = f"{parent_type}${type_}"
        return "urn:pulumi:" + "::".join([get_stack(), get_project(), qualified, name])

    # ------------------------------------------------------------------ registrations

    def RegisterResource(self, request):
        if request.transforms:
            raise UnsupportedFeatureError(
                f"resource {request.name!r} ({request.type}) uses transforms; the offline preview cannot "
                "apply them the way the engine would, so its recording would be wrong. Set the values "
                "directly in the component instead."
            )
        urn = self.make_urn(request.parent, request.type, request.name)
        custom = bool(request.custom)
        if request.type == "pulumi:providers:aws":
            region = known_string(request.object, "region")
            if region:
                with self._lock:
                    self._provider_regions[urn] = region
        if custom:
            context = self._context_for(request.provider, _own_region(request.type, request.object))
            id_, patch = resource_outputs(request.type, request.name, urn, request.object, context)
        else:
            id_, patch = "", {}
        state = _patched(request.object, patch)
        options = _register_options(request)
        if custom and not request.provider:
            options = self._with_default_provider(request.type, request.version, options)
        self._add(
            _Entry(
                urn=urn,
                type=request.type,
                name=request.name,
                parent=request.parent or None,
                custom=custom,
                inputs=render_struct(request.object),
                options=options,
                id=id_,
                state=state,
            )
        )
        return resource_pb2.RegisterResourceResponse(urn=urn, id=id_, object=state)

    def ReadResource(self, request):
        urn = self.make_urn(request.parent, request.type, request.name)
        context = self._context_for(request.provider, _own_region(request.type, request.properties))
        _, patch = resource_outputs(request.type, request.name, urn, request.properties, context)
        state = _patched(request.properties, patch)
        options: dict[str, Any] = {"read": request.id}
        if request.provider:
            options["provider"] = _provider_urn(request.provider)
        if request.dependencies:
            options["dependsOn"] = sorted(set(request.dependencies))
        options = dict(sorted(options.items()))
        self._add(
            _Entry(
                urn=urn,
                type=request.type,
                name=request.name,
                parent=request.parent or None,
                custom=True,
                inputs=render_struct(request.properties),
                options=options,
                id=request.id,
                state=state,
            )
        )
        return resource_pb2.ReadResourceResponse(urn=urn, properties=state)

    def RegisterResourceOutputs(self, request):
        outputs = render_struct(request.outputs)
        with self._lock:
            self._outputs[request.urn] = outputs
        return empty_pb2.Empty()

    def _with_default_provider(self, type_: str, version: str, options: dict[str, Any]) -> dict[str, Any]:
        """`options` naming the default provider the engine would manage the resource with,
        recorded once per package and version (_defaults.py)."""
        made = default_provider(type_, version, self._config, get_stack(), get_project())
        if made is None:
            return options
        with self._lock:
            known = made.urn in self._entries
        if not known:
            state = struct_pb2.Struct()
            state.update(made.inputs)
            entry = _Entry(made.urn, made.type, made.name, None, True, dict(made.inputs), {}, "default-provider", state)
            with self._lock:
                self._entries.setdefault(made.urn, entry)
        return dict(sorted({**options, "provider": made.urn}.items()))

    def _add(self, entry: _Entry) -> None:
        with self._lock:
            first = self._entries.get(entry.urn)
            if first is not None:
                raise DuplicateUrnError(entry.urn, entry.type, entry.name)
            self._entries[entry.urn] = entry
        progress.registered()

    # ------------------------------------------------------------------------ invokes

    def Invoke(self, request):
        args = render_struct(request.args, mask_secrets=False)
        result = struct_pb2.Struct()
        if request.tok == "pulumi:pulumi:getResource":
            urn = str(args.get("urn", ""))
            with self._lock:
                entry = self._entries.get(urn)
            if entry is None:
                raise KeyError(f"getResource: no resource with URN {urn} was registered")
            result["urn"] = entry.urn
            result["id"] = entry.id
            result.fields["state"].struct_value.CopyFrom(entry.state)
        else:
            region = args.get("region") if request.tok.startswith("aws:") else None
            context = self._context_for(request.provider, region if isinstance(region, str) else None)
            try:
                result.update(invoke(request.tok, args, context))
            except FactNotFoundError as err:
                # A data source that finds nothing fails the invoke, not the program: the SDK
                # raises it where the program called, which may catch it (as the real engine does).
                failed = resource_pb2.ResourceInvokeResponse()
                failed.failures.add(property="id", reason=str(err))
                return failed
        response = resource_pb2.ResourceInvokeResponse()
        getattr(response, "return").CopyFrom(result)  # `return` is a Python keyword
        return response

    def _context_for(self, provider_ref: str, region: str | None) -> MockContext:
        """The region a request targets: its own `region` (pulumi-aws v7 takes one per resource
        and invoke), else its AWS provider's, else the stack's aws:region (default provider)."""
        if not region and provider_ref:
            with self._lock:
                region = self._provider_regions.get(_provider_urn(provider_ref))
        return self._context.for_region(region) if region and region != self._context.region else self._context

    def Call(self, request):
        raise UnsupportedFeatureError(
            f"resource method {request.tok} needs its provider at run time; the offline preview cannot call it"
        )

    def RegisterStackTransform(self, request):
        raise UnsupportedFeatureError(
            "stack transforms (pulumi.runtime.register_resource_transform) are not applied by the offline "
            "preview, so its recording would be wrong; set the values directly in the components"
        )

    def RegisterStackInvokeTransform(self, request):
        raise UnsupportedFeatureError("stack invoke transforms are not supported by the offline preview")

    # ------------------------------------------------------------------------ results

    def recorded(self) -> list[RecordedResource]:
        """Pre-order walk of the parent tree from the stack, siblings by URN.

        Registration order depends on how the event loop interleaves awaits, so it is not
        used; tree order keeps a component next to its children, which is how a reader
        (and a diff) wants to see them. Resources whose parent was never registered (only
        possible through reads) come last, by URN.
        """
        with self._lock:
            entries = dict(self._entries)
            outputs = dict(self._outputs)
        children: dict[str | None, list[str]] = {}
        for urn, entry in entries.items():
            parent = entry.parent if entry.parent in entries else None
            children.setdefault(parent, []).append(urn)
        ordered: list[str] = []
        stack = sorted(children.get(None, []), reverse=True)
        while stack:
            urn = stack.pop()
            ordered.append(urn)
            stack.extend(sorted(children.get(urn, []), reverse=True))
        return [_to_record(entries[urn], outputs.get(urn, {})) for urn in ordered]

    def release(self) -> None:
        """Drop recorded state: pulumi's settings keep the last monitor alive as a default."""
        with self._lock:
            self._entries.clear()
            self._outputs.clear()
            self.resources.clear()


def _to_record(entry: _Entry, outputs: dict[str, Any]) -> RecordedResource:
    return RecordedResource(
        urn=entry.urn,
        type=entry.type,
        name=entry.name,
        parent=entry.parent,
        custom=entry.custom,
        inputs=entry.inputs,
        options=entry.options,
        outputs=outputs,
    )


def _patched(source: struct_pb2.Struct, patch: Patch) -> struct_pb2.Struct:
    state = struct_pb2.Struct()
    state.CopyFrom(source)
    if patch:
        _apply_patch(state, patch, source)
    return state


def _apply_patch(target: struct_pb2.Struct, patch: Patch, source: struct_pb2.Struct) -> None:
    # Inputs win: the echoed inputs are what the provider would have accepted, the patch
    # only fills in what a provider computes.
    for key, value in patch.items():
        if isinstance(value, FromInput):
            if key not in target and value.key in source:
                target.fields[key].CopyFrom(source.fields[value.key])
        elif key not in target:
            target[key] = value
        elif isinstance(value, dict):
            existing = target.fields[key]
            if existing.WhichOneof("kind") == "struct_value" and SIG_KEY not in existing.struct_value:
                _apply_patch(existing.struct_value, value, source)


def _own_region(type_: str, inputs: struct_pb2.Struct) -> str | None:
    return known_string(inputs, "region") if type_.startswith("aws:") else None


def _provider_urn(reference: str) -> str:
    # A provider reference is "<urn>::<id>"; the id is a mock value, the URN is the identity.
    return reference.rsplit("::", 1)[0]


def _register_options(request) -> dict[str, Any]:
    """The resource options the request carries, minus empty and default values."""
    options: dict[str, Any] = {}
    if request.HasField("protect") and request.protect:
        options["protect"] = True
    if request.HasField("retainOnDelete") and request.retainOnDelete:
        options["retainOnDelete"] = True
    if request.dependencies:
        options["dependsOn"] = sorted(set(request.dependencies))
    if request.ignoreChanges:
        options["ignoreChanges"] = sorted(set(request.ignoreChanges))
    if request.replaceOnChanges:
        options["replaceOnChanges"] = sorted(set(request.replaceOnChanges))
    if request.deleteBeforeReplaceDefined and request.deleteBeforeReplace:
        options["deleteBeforeReplace"] = True
    aliases = _aliases(request)
    if aliases:
        options["aliases"] = aliases
    if request.provider:
        options["provider"] = _provider_urn(request.provider)
    if request.providers:
        options["providers"] = {pkg: _provider_urn(ref) for pkg, ref in sorted(request.providers.items())}
    if request.additionalSecretOutputs:
        options["additionalSecretOutputs"] = sorted(set(request.additionalSecretOutputs))
    if request.HasField("customTimeouts"):
        timeouts = {
            key: getattr(request.customTimeouts, key)
            for key in ("create", "update", "delete")
            if getattr(request.customTimeouts, key)
        }
        if timeouts:
            options["customTimeouts"] = timeouts
    if request.importId:
        options["import"] = request.importId
    if request.deletedWith:
        options["deletedWith"] = request.deletedWith
    if request.replace_with:
        options["replaceWith"] = sorted(set(request.replace_with))
    if request.HasField("replacement_trigger"):
        options["replacementTrigger"] = value_to_python(request.replacement_trigger)
    if request.hideDiffs:
        options["hideDiffs"] = sorted(set(request.hideDiffs))
    if request.envVarMappings:
        options["envVarMappings"] = dict(sorted(request.envVarMappings.items()))
    if request.remote:
        # A multi-language component: the real engine expands it in a plugin, so the
        # recording holds one opaque box. Recorded so policy can reject it.
        options["remote"] = True
    hooks = _hooks(request)
    if hooks:
        options["hooks"] = hooks
    return dict(sorted(options.items()))


def _aliases(request) -> list[Any]:
    rendered: list[Any] = []
    for alias in request.aliases:
        if alias.WhichOneof("alias") == "urn":
            rendered.append(alias.urn)
            continue
        spec = alias.spec
        item: dict[str, Any] = {}
        for key in ("name", "type", "stack", "project"):
            if getattr(spec, key):
                item[key] = getattr(spec, key)
        parent = spec.WhichOneof("parent")
        if parent == "parentUrn" and spec.parentUrn:
            item["parentUrn"] = spec.parentUrn
        elif parent == "noParent" and spec.noParent:
            item["noParent"] = True
        rendered.append(item)
    rendered.extend(request.aliasURNs)
    # SDKs merge their own type aliases into options more than once; the engine dedupes.
    unique = {repr(alias): alias for alias in rendered}
    return [unique[key] for key in sorted(unique)]


def _hooks(request) -> dict[str, list[str]]:
    if not request.HasField("hooks"):
        return {}
    names = {
        "before_create": "beforeCreate",
        "after_create": "afterCreate",
        "before_update": "beforeUpdate",
        "after_update": "afterUpdate",
        "before_delete": "beforeDelete",
        "after_delete": "afterDelete",
        "on_error": "onError",
    }
    return {
        camel: list(getattr(request.hooks, snake)) for snake, camel in names.items() if getattr(request.hooks, snake)
    }
