"""The jinja2 environment of the renderers: templates beside them, in gpuplat/render/templates/.

Templates lay the text out (headings, sentences, notes, which section shows); the rows, numbers
and phrases come shaped from Python. Tables are handed in as finished blocks without their last
newline, so each line of a template is one line of output: aligned text tables are width
arithmetic (render/plan.py: table) and markdown tables escape every cell (comment.py), both
better in Python than in whitespace-controlled template loops. StrictUndefined: a misspelt
name fails instead of printing nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jinja2

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("gpuplat.render", "templates"),
    autoescape=False,  # text and markdown, not HTML
    keep_trailing_newline=True,
    trim_blocks=True,
    lstrip_blocks=True,
    undefined=jinja2.StrictUndefined,
)


def render(template: str, **context: Any) -> str:
    return _ENV.get_template(template).render(**context)


def block(text: str) -> str:
    """A rendered table or section as a template line: without its last newline."""
    return text.removesuffix("\n")


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def md_table(header: Sequence[str], rows: Sequence[Sequence[object]], right: int = 0) -> str:
    """Markdown table, every cell escaped; the last `right` columns are right-aligned (numbers)."""
    align = ["---"] * (len(header) - right) + ["---:"] * right
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "| " + " | ".join(align) + " |"]
    lines.extend("| " + " | ".join(_cell(c) for c in row) + " |" for row in rows)
    return "\n".join(lines) + "\n"
