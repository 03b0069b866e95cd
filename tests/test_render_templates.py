"""The renderers' jinja2 templates: shipped with the package, all in use, strict about names."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import jinja2
import pytest

from gpuplat.render._templates import _ENV, render  # pyright: ignore[reportPrivateUsage]

ROOT = Path(__file__).resolve().parents[1]
RENDER = ROOT / "gpuplat" / "render"
TEMPLATES = sorted((RENDER / "templates").glob("*.j2"))


def test_a_missing_name_fails_instead_of_printing_nothing() -> None:
    with pytest.raises(jinja2.UndefinedError):
        render("comment_policy.md.j2", violations=None)  # no `note`
    assert render("comment_policy.md.j2", violations=None, note="n", mandatory=0, table="") == (
        "### Policy\n\n> [!NOTE]\n> n\n"
    )


def test_every_template_is_used_and_shipped() -> None:
    sources = "\n".join(p.read_text(encoding="utf-8") for p in [*RENDER.glob("*.py"), *TEMPLATES])
    unused = [t.name for t in TEMPLATES if not re.search(rf"[\"']{re.escape(t.name)}[\"']", sources)]
    assert TEMPLATES and unused == []
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "render/templates/*.j2" in data["tool"]["setuptools"]["package-data"]["gpuplat"]


def test_a_short_block_is_not_folded() -> None:
    text = render("_fold.md.j2")  # the macro file renders nothing itself
    assert text.strip() == ""
    fold = vars(_ENV.get_template("_fold.md.j2").module)["fold"]  # the macro, as the comment calls it
    assert str(fold("rows", "| a |", False)) == "| a |"
    assert str(fold("rows", "| a |")) == "<details><summary>rows</summary>\n\n| a |\n\n</details>"
