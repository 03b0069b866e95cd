"""Every `pattern` of the schema means what JSON Schema (ECMA-262) means: `$` is the end of the
value, not the place before a final line break, and `\\d` is an ASCII digit. A block scalar
(`|`, `>`) ends in a line break, so Python's own reading let `cooldown: "10m\\n"` or a name
with a trailing line break through to crash the model or the preview."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuplat.cli import main
from gpuplat.validate.schema import _validator  # pyright: ignore[reportPrivateUsage]
from gpuplat.validate.schema_fast import compile_schema

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "schemas" / "platform.schema.json").read_text(encoding="utf-8"))


def _patterns(node: Any, where: str = "#") -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        mapping = cast("dict[str, Any]", node)
        if isinstance(mapping.get("pattern"), str):
            yield where, mapping["pattern"]
        for key, value in mapping.items():
            yield from _patterns(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, item in enumerate(cast("list[Any]", node)):
            yield from _patterns(item, f"{where}/{index}")


PATTERNS = sorted(set(_patterns(SCHEMA)))


def test_the_schema_has_patterns() -> None:
    assert len({p for _, p in PATTERNS}) >= 15


def _accepts(pattern: str, value: str) -> tuple[bool, bool]:
    """(jsonschema's pass, the fast pass) on a string schema with `pattern`."""
    node = {"type": "string", "pattern": pattern}
    full = not any(True for _ in _validator().evolve(schema=node).iter_errors(value))
    fast = compile_schema(node, {})
    assert fast is not None
    return full, fast(value)


@pytest.mark.parametrize(("where", "pattern"), PATTERNS, ids=[w for w, _ in PATTERNS])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_pattern_refuses_a_trailing_line_break(where: str, pattern: str, data: st.DataObject) -> None:
    value = data.draw(st.from_regex(re.compile(pattern, re.ASCII), fullmatch=True).filter(lambda v: "\n" not in v))
    assert _accepts(pattern, value) == (True, True), (where, value)
    for tail in ("\n", "\r\n"):
        assert _accepts(pattern, value + tail) == (False, False), (where, value)


def test_digits_of_other_scripts_are_not_digits() -> None:
    assert _accepts(r"^1\.\d{2}$", "1.33") == (True, True)
    assert _accepts(r"^1\.\d{2}$", "1.\u0663\u0663") == (False, False)  # Arabic-Indic 3
    assert _accepts(r"^a$|^b[$]$", "b$") == (True, True)  # a `$` in a class is a character


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("cooldown: 10m", 'cooldown: "10m\\n"'),
        ("vpcCidr: 10.40.0.0/16", "vpcCidr: |\n    10.40.0.0/16"),
        ('kubernetesVersion: "1.36"', 'kubernetesVersion: "1.36\\n"'),
        ("name: atlas", 'name: "atlas\\n"'),
        ("{name: product,", '{name: "product\\n",'),
        ("  - name: dev\n", "  - name: >\n      dev\n"),
    ],
)
def test_a_value_ending_in_a_line_break_is_refused_where_written(
    old: str, new: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = (ROOT / "platform" / "platform.yaml").read_text(encoding="utf-8")
    assert old in spec
    path = tmp_path / "platform.yaml"
    path.write_text(spec.replace(old, new, 1), encoding="utf-8")
    code = main(["check", "--spec", str(path), "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 1 and not err, err
    errors = [d for d in json.loads(out)["diagnostics"] if d["level"] == "error"]
    line = spec[: spec.index(old)].count("\n") + 1
    assert errors and errors[0]["code"].startswith("GP1"), errors
    assert abs(errors[0]["line"] - line) <= 1, (errors, line)
