"""Property tests: any mutation of a valid spec compiles or yields diagnostics.

Mutations act on the data of the shipped specs (values of other types, renamed or added
keys, deleted items, emptied lists, extreme numbers, garbage strings, dropped sections)
and on their YAML text (deleted spans, inserted junk, shuffled or re-indented lines), plus
the families that once crashed the loader or the planner: merge keys and tags, numbers at
and past every schema bound, deep and wide documents, and overlays carrying all of these.
The whole pipeline runs from files, as the CLI does; the only acceptable outcomes are a
model with no errors (whose plan renders as text and as strict JSON), or errors.
"""

from __future__ import annotations

import copy
import io
import json
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from gpuplat.catalog import fsx
from gpuplat.compile import Sources, compile_sources
from gpuplat.diagnostics import render_github, render_json, render_text
from gpuplat.render.plan import plan_json, plan_text
from gpuplat.validate.schema import schema

ROOT = Path(__file__).resolve().parent.parent
SPECS = {
    "aws": (ROOT / "platform" / "platform.yaml").read_text(encoding="utf-8"),
    "kubernetes": (ROOT / "tests" / "fixtures" / "kubernetes_example.yaml").read_text(encoding="utf-8"),
    "workloads": (ROOT / "tests" / "fixtures" / "workloads_example.yaml").read_text(encoding="utf-8"),
}
OVERLAYS = {env: (ROOT / "stacks" / f"{env}.yaml").read_text(encoding="utf-8") for env in ("dev", "staging", "prod")}

Path_ = tuple[str | int, ...]

# The suite runs 150 examples a property (a few seconds each), derandomized so a failure
# reproduces on every run. A longer fuzz run raises the count and draws fresh random inputs
# without touching the code: `GPUPLAT_FUZZ_EXAMPLES=5000 pytest tests/test_properties.py`
# (hypothesis prints the failing example and how to reproduce it).
EXAMPLES = int(os.environ.get("GPUPLAT_FUZZ_EXAMPLES", "150"))
PROPERTY_SETTINGS = settings(
    derandomize="GPUPLAT_FUZZ_EXAMPLES" not in os.environ,
    deadline=None,
    max_examples=EXAMPLES,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# Deep and wide documents cost up to a second each (the bounds are that generous): fewer.
LARGE_DOCUMENT_SETTINGS = settings(PROPERTY_SETTINGS, max_examples=max(EXAMPLES // 5, 1))

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=True, allow_infinity=True)
    | _text
    | st.sampled_from(["", "on-demand", "mig", "p5.48xlarge", "all-1g.10gb", "1.33", "5m", "train", "hard"])
)
json_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6,
)


def _load(text: str) -> Any:
    return YAML(typ="safe").load(text)


def _dump(data: Any) -> str:
    out = io.StringIO()
    yaml = YAML(typ="safe")
    yaml.default_flow_style = False
    yaml.dump(data, out)
    return out.getvalue()


def _paths(node: Any, prefix: Path_ = ()) -> list[Path_]:
    found: list[Path_] = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*prefix, index))
    return found


def _get(node: Any, path: Path_) -> Any:
    for part in path:
        node = node[part]
    return node


def _mutate(data: Any, draw: st.DataObject) -> Any:
    path = draw.draw(st.sampled_from(_paths(data)), label="path")
    if not path:  # the root: replace or empty it only rarely matters, but must not crash either
        return draw.draw(st.sampled_from([{}, [], None, "text", 0]), label="root")
    parent, last = _get(data, path[:-1]), path[-1]
    value = parent[last]
    kind = draw.draw(
        st.sampled_from(["replace", "rename", "add", "delete", "empty", "number", "string", "drop-section"]),
        label="kind",
    )
    if kind == "replace":
        parent[last] = draw.draw(json_values, label="value")
    elif kind == "rename" and isinstance(parent, dict):
        new = draw.draw(_text | st.sampled_from(["name", "remove", "mode", "gpus", "instanceTyp"]), label="key")
        parent[new] = parent.pop(last)
    elif kind == "add" and isinstance(value, dict):
        value[draw.draw(_text, label="key")] = draw.draw(json_values, label="value")
    elif kind == "delete":
        del parent[last]
    elif kind == "empty" and isinstance(value, list | dict):
        value.clear()
    elif kind == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        parent[last] = draw.draw(st.sampled_from([-value, 0, 10**18, -1, value + 0.5, 1e308]), label="number")
    elif kind == "string" and isinstance(value, str):
        parent[last] = draw.draw(_text, label="string")
    elif kind == "drop-section" and isinstance(data, dict) and data:
        data.pop(draw.draw(st.sampled_from(sorted(data)), label="section"), None)
    else:
        parent[last] = draw.draw(json_values, label="value")
    return data


def _compile(spec_text: str | bytes, overlay_text: str | None = None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "platform.yaml"
        if isinstance(spec_text, bytes):
            spec.write_bytes(spec_text)
        else:
            spec.write_text(spec_text, encoding="utf-8")
        overlay = None
        if overlay_text is not None:
            overlay = Path(tmp) / "overlay.yaml"
            overlay.write_text(overlay_text, encoding="utf-8")
        compiled = compile_sources(Sources(spec, overlay))
    errors = [d for d in compiled.diagnostics if d.is_error]
    assert compiled.model is not None or errors, "no model and no error"
    if compiled.model is not None:
        assert not errors
    assert len(set(compiled.diagnostics)) == len(compiled.diagnostics), "a diagnostic reported twice"
    for d in compiled.diagnostics:
        assert d.line >= 1 and d.col >= 1 and d.file and d.path.startswith("$"), d
    render_text(compiled.diagnostics).encode("utf-8")
    render_json(compiled.diagnostics).encode("utf-8")
    render_github(compiled.diagnostics).encode("utf-8")
    if compiled.model is not None and compiled.plan is not None:
        json.dumps(plan_json(compiled.model, compiled.plan), allow_nan=False)  # no inf / nan in the plan
        text = plan_text(compiled.model, compiled.plan)
        assert not re.search(r"\b(inf|nan)\b", text), text


@PROPERTY_SETTINGS
@given(spec=st.sampled_from(sorted(SPECS)), rounds=st.integers(1, 3), draw=st.data())
def test_mutated_spec_never_crashes(spec: str, rounds: int, draw: st.DataObject) -> None:
    data = copy.deepcopy(_load(SPECS[spec]))
    for _ in range(rounds):
        if not isinstance(data, dict | list) or not data:
            break
        data = _mutate(data, draw)
    _compile(_dump(data))


@PROPERTY_SETTINGS
@given(env=st.sampled_from(sorted(OVERLAYS)), rounds=st.integers(1, 3), draw=st.data())
def test_mutated_overlay_never_crashes(env: str, rounds: int, draw: st.DataObject) -> None:
    data = copy.deepcopy(_load(OVERLAYS[env]))
    for _ in range(rounds):
        if not isinstance(data, dict | list) or not data:
            break
        data = _mutate(data, draw)
    _compile(SPECS["aws"], _dump(data))


def _edit_text(text: str, draw: st.DataObject) -> str:
    lines = text.splitlines(keepends=True)
    kind = draw.draw(st.sampled_from(["delete-span", "insert", "replace-char", "dup-line", "swap", "indent"]))
    if kind in ("dup-line", "swap", "indent") and lines:
        i = draw.draw(st.integers(0, len(lines) - 1))
        j = draw.draw(st.integers(0, len(lines) - 1))
        if kind == "dup-line":
            lines.insert(j, lines[i])
        elif kind == "swap":
            lines[i], lines[j] = lines[j], lines[i]
        else:
            shift = draw.draw(st.sampled_from(["", " ", "   ", "\t", "- "]))
            lines[i] = shift + lines[i].lstrip(" ") if shift != "- " else shift + lines[i]
        return "".join(lines)
    at = draw.draw(st.integers(0, len(text)))
    if kind == "delete-span":
        return text[:at] + text[at + draw.draw(st.integers(1, 40)) :]
    junk = draw.draw(_text | st.sampled_from([":", "- ", "{", "]", "&a ", "*a", "!!binary ", "\n  ", "'", '"', "#"]))
    end = at + 1 if kind == "replace-char" else at
    return text[:at] + junk + text[end:]


@PROPERTY_SETTINGS
@given(spec=st.sampled_from(sorted(SPECS)), rounds=st.integers(1, 4), draw=st.data())
def test_edited_yaml_text_never_crashes(spec: str, rounds: int, draw: st.DataObject) -> None:
    text = SPECS[spec]
    for _ in range(rounds):
        text = _edit_text(text, draw)
    _compile(text)


@PROPERTY_SETTINGS
@given(raw=st.binary(max_size=200))
def test_arbitrary_bytes_never_crash(raw: bytes) -> None:
    _compile(raw)


@PROPERTY_SETTINGS
@given(tib=st.floats(min_value=1e-6, max_value=2e6))
def test_fsx_size_is_one_aws_accepts_and_holds_the_request(tib: float) -> None:
    requested = tib * fsx.GIB_PER_TIB
    size = fsx.capacity_gib(requested)
    assert size >= requested - 1e-6
    assert size == fsx.MIN_GIB or size % fsx.STEP_GIB == 0
    # and it is the smallest such size
    assert size == fsx.MIN_GIB or size - fsx.STEP_GIB < requested - 1e-9 or size - fsx.STEP_GIB < fsx.MIN_GIB


# --- families that crashed the loader or the planner ---------------------------------------

_TAGS = ["!!omap ", "!!set ", "!!binary ", "!!str ", "!!int ", "!!float ", "!!map ", "!!seq ", "!local ", "! "]


def _merge_pools(text: str, draw: st.DataObject) -> str:
    """Anchor one pool and let a later one merge it (`- <<: *p` then its own keys), or merge it
    into itself or into something that is not a mapping."""
    starts = [m.start() for m in re.finditer(r"^  - name: ", text, flags=re.MULTILINE)]
    if len(starts) < 2:
        return text
    i = draw.draw(st.integers(0, len(starts) - 2), label="anchored")
    j = draw.draw(st.integers(i, len(starts) - 1), label="merging")
    target = draw.draw(st.sampled_from(["*p", "[*p, {fabric: false}]", "*p\n    <<: *p", "1", "[*p, 2]"]))
    out = text[: starts[j]] + f"  - <<: {target}\n    " + text[starts[j] + 4 :]
    return out[: starts[i]] + "  - &p\n    " + out[starts[i] + 4 :]


def _tag_values(text: str, draw: st.DataObject) -> str:
    spots = [m.end() for m in re.finditer(r": (?=\S)", text)]
    at = draw.draw(st.sampled_from(spots), label="tagged")
    return text[:at] + draw.draw(st.sampled_from(_TAGS), label="tag") + text[at:]


@PROPERTY_SETTINGS
@given(spec=st.sampled_from(sorted(SPECS)), draw=st.data(), tags=st.integers(0, 2))
def test_merge_keys_and_tags_never_crash(spec: str, draw: st.DataObject, tags: int) -> None:
    text = _merge_pools(SPECS[spec], draw)
    for _ in range(tags):
        text = _tag_values(text, draw)
    _compile(text)


def _numeric_paths(node: Any, sub: Any, prefix: Path_ = ()) -> list[tuple[Path_, dict[str, Any]]]:
    """(path, schema) of every number in `node`, with the schema that bounds it."""
    sub = _resolve(sub)
    if isinstance(node, bool):
        return []
    if isinstance(node, int | float):
        return [(prefix, sub)]
    found: list[tuple[Path_, dict[str, Any]]] = []
    if isinstance(node, dict):
        props = sub.get("properties", {})
        for key, value in node.items():
            found += _numeric_paths(value, props.get(key, sub.get("additionalProperties", {})), (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _numeric_paths(value, sub.get("items", {}), (*prefix, index))
    return found


def _resolve(sub: Any) -> dict[str, Any]:
    while isinstance(sub, dict) and "$ref" in sub:
        merged = {k: v for k, v in sub.items() if k != "$ref"}
        sub = {**schema()["$defs"][sub["$ref"].rsplit("/", 1)[1]], **merged}
    return sub if isinstance(sub, dict) else {}


def _extremes(sub: dict[str, Any]) -> list[int | float]:
    values: list[int | float] = [0, -1, 2**31, 2**63, 10**400, -(10**400), 1e308, -1e308, 5e-324]
    for bound in ("maximum", "minimum", "exclusiveMinimum"):
        if bound in sub:
            limit = sub[bound]
            values += [limit, limit + 1, limit - 1, limit + 0.5, math.nextafter(float(limit), math.inf)]
    return values


@PROPERTY_SETTINGS
@given(spec=st.sampled_from(sorted(SPECS)), draw=st.data(), rounds=st.integers(1, 3))
def test_numbers_at_and_past_every_bound_never_crash(spec: str, draw: st.DataObject, rounds: int) -> None:
    data = copy.deepcopy(_load(SPECS[spec]))
    numbers = _numeric_paths(data, schema())
    for _ in range(rounds):
        path, sub = draw.draw(st.sampled_from(numbers), label="number")
        _get(data, path[:-1])[path[-1]] = draw.draw(st.sampled_from(_extremes(sub)), label="value")
    _compile(_dump(data))


@LARGE_DOCUMENT_SETTINGS
@given(
    depth=st.integers(1, 3000),
    width=st.integers(0, 30_000),
    flow=st.booleans(),
    closed=st.booleans(),
    where=st.sampled_from(["top", "pools", "labels"]),
)
def test_deep_and_wide_documents_never_crash(depth: int, width: int, flow: bool, closed: bool, where: str) -> None:
    if flow:
        nest = "[" * depth + ("0, " * width) + "0" + ("]" * depth if closed else "")
    else:
        nest = "\n" + "".join(f"{'  ' * (i + 2)}k{i}:\n" for i in range(min(depth, 200))) + f"{'  ' * 3}- 0\n" * width
    if where == "top":
        text = nest if flow else "a:" + nest
    elif where == "pools":
        text = SPECS["aws"].replace("gpuNodePools:\n", f"gpuNodePools: {nest}\nx:\n", 1)
    else:
        text = SPECS["aws"].replace("  - name: train\n", f"  - name: train\n    labels: {nest}\n", 1)
    _compile(text)


@PROPERTY_SETTINGS
@given(env=st.sampled_from(sorted(OVERLAYS)), draw=st.data(), tags=st.integers(0, 1))
def test_overlays_with_merges_tags_and_extremes_never_crash(env: str, draw: st.DataObject, tags: int) -> None:
    data = copy.deepcopy(_load(OVERLAYS[env]))
    numbers = _numeric_paths(data, schema())
    if numbers:
        path, sub = draw.draw(st.sampled_from(numbers), label="number")
        _get(data, path[:-1])[path[-1]] = draw.draw(st.sampled_from(_extremes(sub)), label="value")
    text = _dump(data)
    if draw.draw(st.booleans(), label="merge") and "\n  - name: " in text:
        text = "x-base: &b {nodes: {min: 0, max: 2}}\n" + text.replace("\n  - name: ", "\n  - <<: *b\n    name: ", 1)
    for _ in range(tags):
        text = _tag_values(text, draw) if ": " in text else text
    _compile(SPECS["aws"], text)


def _emitted(spec_text: str, overlay_text: str | None) -> dict[str, Any]:
    """What the components emit from the plan, keyed by name wherever a list's order means nothing."""
    from components.kubernetes._quota import resource_groups
    from components.kubernetes.autoscaling import prometheus_rule_spec
    from components.kubernetes.tenant import quota_hard

    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "platform.yaml"
        spec.write_text(spec_text, encoding="utf-8")
        overlay = None
        if overlay_text is not None:
            overlay = Path(tmp) / "overlay.yaml"
            overlay.write_text(overlay_text, encoding="utf-8")
        compiled = compile_sources(Sources(spec, overlay))
    model, plan = compiled.model, compiled.plan
    assert model is not None and plan is not None, compiled.diagnostics
    document = plan_json(model, plan)
    capacity = document["capacity"]

    def groups(tenant: Any) -> list[Any]:
        # Kueue tries one group's flavors in order: that order follows the spec (compared as sets here).
        emitted = resource_groups(model, tenant, plan)
        return [{**g, "flavors": sorted(g["flavors"], key=lambda f: f["name"])} for g in emitted]

    return {
        "pools": {p["name"]: p for p in document["pools"]},
        "nodePools": {n["name"]: n for n in capacity["nodePools"]},
        "flavors": {f["name"]: f for f in capacity["flavors"]},
        "quotas": sorted(json.dumps(q, sort_keys=True) for q in capacity["quotas"]),
        "reservations": sorted(json.dumps(r, sort_keys=True) for r in document["reservations"]),
        "rules": prometheus_rule_spec(model),
        "queues": {t.name: groups(t) for t in model.tenants},
        "quota": {t.name: quota_hard(model, plan, t) for t in model.tenants},
    }


@settings(PROPERTY_SETTINGS, max_examples=max(EXAMPLES // 5, 1))
@given(spec=st.sampled_from(sorted(SPECS)), overlay=st.sampled_from([None, *sorted(OVERLAYS)]), draw=st.data())
def test_the_order_of_pools_and_tenants_changes_no_emitted_object(
    spec: str, overlay: str | None, draw: st.DataObject
) -> None:
    overlay_text = OVERLAYS[overlay] if overlay is not None and spec == "aws" else None
    data = _load(SPECS[spec])
    before = _emitted(_dump(data), overlay_text)
    data["gpuNodePools"] = draw.draw(st.permutations(data["gpuNodePools"]), label="pools")
    data["tenants"] = draw.draw(st.permutations(data["tenants"]), label="tenants")
    assert _emitted(_dump(data), overlay_text) == before
