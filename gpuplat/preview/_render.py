# pyright: basic
# (protobuf's Struct/ListValue accessors and pulumi's rpc constants are untyped.)
"""Turn the protobuf property maps the SDK sends to the monitor into plain, sorted Python.

pulumi.runtime.rpc.deserialize_properties is deliberately not used for the recording: it
re-hydrates resource references into live Resource objects (each one issues a getResource
RPC from inside the monitor), hoists secretness to the enclosing object and turns unknowns
into None outside a preview. A preview wants the opposite: a stable, inert, JSON-ready
picture of exactly what the engine would receive. The wire signatures are pulumi's own.

Representation (also documented in gpuplat/preview/__init__.py):
  unknown (computed) value        -> "<computed>"
  secret                          -> "<secret>"        (mask mode; raw mode unwraps)
  resource reference              -> {"$resource": urn}
  asset                           -> {"$asset": {"path"|"text"|"uri": ..., ["sha256": ...]}}
  archive                         -> {"$archive": {"assets"|"path"|"uri": ...}}
  first-class output value        -> its value, or "<computed>" / "<secret>"
  whole-number floats             -> int   (the wire has only doubles)
  None-valued map entries         -> dropped (the SDK drops them too); kept inside lists
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from google.protobuf import struct_pb2
from pulumi.runtime import rpc

COMPUTED = "<computed>"
SECRET = "<secret>"
UNKNOWN = rpc.UNKNOWN

# The wire format's signature keys have no public names.
SIG_KEY = rpc._special_sig_key
_ASSET = rpc._special_asset_sig
_ARCHIVE = rpc._special_archive_sig
_SECRET = rpc._special_secret_sig
_RESOURCE = rpc._special_resource_sig
_OUTPUT = rpc._special_output_value_sig


def render_struct(struct: struct_pb2.Struct, *, mask_secrets: bool = True) -> dict[str, Any]:
    """A property map as a plain dict with sorted keys."""
    value = render_value(struct, mask_secrets=mask_secrets)
    return value if isinstance(value, dict) else {"value": value}


def render_value(value: Any, *, mask_secrets: bool = True) -> Any:
    if isinstance(value, str):
        return COMPUTED if value == UNKNOWN else value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, struct_pb2.Struct):
        if SIG_KEY in value:
            return _render_special(value, mask_secrets)
        out: dict[str, Any] = {}
        # The map of Values directly: Struct.keys() and struct[key] copy and convert per call
        # (protobuf's Python accessors), a few percent of a whole preview.
        for key, field in sorted(value.fields.items(), key=_first):
            item = render_value(_value_kind(field), mask_secrets=mask_secrets)
            if item is not None:
                out[key] = item
        return out
    if isinstance(value, struct_pb2.ListValue):
        return [render_value(item, mask_secrets=mask_secrets) for item in value]
    if isinstance(value, struct_pb2.Value):
        return render_value(_value_kind(value), mask_secrets=mask_secrets)
    return value  # bool, None


def _first(item: tuple[str, Any]) -> str:
    return item[0]


def _value_kind(value: struct_pb2.Value) -> Any:
    kind = value.WhichOneof("kind")
    if kind is None or kind == "null_value":
        return None
    return getattr(value, kind)


def _render_special(struct: struct_pb2.Struct, mask_secrets: bool) -> Any:
    sig = struct[SIG_KEY]
    if sig == _SECRET:
        if mask_secrets:
            return SECRET
        if "value" not in struct:
            return None
        return render_value(struct["value"], mask_secrets=False)
    if sig == _RESOURCE:
        return {"$resource": str(struct["urn"]) if "urn" in struct else COMPUTED}
    if sig == _OUTPUT:
        secret = "secret" in struct and struct["secret"] is True
        if secret and mask_secrets:
            return SECRET
        if "value" not in struct:
            return COMPUTED
        return render_value(struct["value"], mask_secrets=mask_secrets)
    if sig == _ASSET:
        return {"$asset": _asset_body(struct, mask_secrets)}
    if sig == _ARCHIVE:
        body: dict[str, Any] = {}
        for key in ("assets", "path", "uri"):
            if key in struct:
                body[key] = render_value(struct[key], mask_secrets=mask_secrets)
        return {"$archive": body}
    return {"$unknownSignature": str(sig)}


def _asset_body(struct: struct_pb2.Struct, mask_secrets: bool) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for key in ("path", "text", "uri"):
        if key in struct:
            body[key] = render_value(struct[key], mask_secrets=mask_secrets)
    path = body.get("path")
    if isinstance(path, str) and path != COMPUTED:
        # The engine diffs file assets by content; without a hash an edited file
        # would be invisible to `preview --base`.
        digest = _file_sha256(path)
        if digest is not None:
            body["sha256"] = digest
    return body


def _file_sha256(path: str) -> str | None:
    try:
        with open(os.fspath(path), "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None


def value_to_python(value: struct_pb2.Value) -> Any:
    """A google.protobuf.Value (e.g. replacement_trigger) rendered like inputs."""
    return render_value(_value_kind(value))


def known_string(struct: struct_pb2.Struct, key: str) -> str | None:
    """The value of `key` when it is a plain, known, non-secret string."""
    if key not in struct:
        return None
    value = struct[key]
    if isinstance(value, str) and value != UNKNOWN:
        return value
    return None
