"""Property tests: any mutation of a valid spec compiles or yields diagnostics.

Mutations act on the data of the shipped specs (values of other types, renamed or added
keys, deleted items, emptied lists, extreme numbers, garbage strings, dropped sections)
and on their YAML text (deleted spans, inserted junk, shuffled or re-indented lines). The
whole pipeline runs from files, as the CLI does; the only acceptable outcomes are a model
with no errors, or errors. Derandomized, so a failure reproduces on every run.
"""

from __future__ import annotations

import copy
import io
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from gpuplat.catalog import fsx
from gpuplat.compile import Sources, compile_sources
from gpuplat.diagnostics import render_github, render_json, render_text

ROOT = Path(__file__).resolve().parent.parent
SPECS = {
    "aws": (ROOT / "platform" / "platform.yaml").read_text(encoding="utf-8"),
    "kubernetes": (ROOT / "tests" / "fixtures" / "kubernetes_example.yaml").read_text(encoding="utf-8"),
    "workloads": (ROOT / "tests" / "fixtures" / "workloads_example.yaml").read_text(encoding="utf-8"),
}
OVERLAYS = {env: (ROOT / "stacks" / f"{env}.yaml").read_text(encoding="utf-8") for env in ("dev", "staging", "prod")}

Path_ = tuple[str | int, ...]

PROPERTY_SETTINGS = settings(
    derandomize=True,
    deadline=None,
    max_examples=150,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

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
    render_text(compiled.diagnostics)
    render_json(compiled.diagnostics)
    render_github(compiled.diagnostics)


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
