"""The generated pages of docs/: the spec reference, the rules page and the catalog page, rendered from jinja2
templates kept beside this module (gpuplat/docs/templates/). `python -m gpuplat.docs` (or
`make docs`) rewrites them; `python -m gpuplat.docs --check` fails when a committed page is stale.
docs/architecture.md is written by hand and not generated.

The pages render from the installed package alone (its schema, registries, catalog), so an
installed gpuplat prints them too: `gpuplat docs spec|rules|catalog`, `gpuplat explain CODE`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import jinja2

from gpuplat.catalog.instances import InstanceType
from gpuplat.docs.schema_fields import fields
from gpuplat.input_codes import INPUT_CODES
from gpuplat.plan.codes import PLAN_CODES
from gpuplat.validate.registry import RULES, STACK_RULES  # importing gpuplat.validate registers every rule
from gpuplat.vocabulary import SCHEMA_PATH

ROOT = Path(__file__).resolve().parents[2]  # the repository, where `python -m gpuplat.docs` writes
SCHEMA = SCHEMA_PATH  # the package's copy: in this repository a link to schemas/platform.schema.json
DOCS = ROOT / "docs"

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("gpuplat.docs", "templates"),
    autoescape=False,  # Markdown, not HTML
    keep_trailing_newline=True,
    trim_blocks=True,
    lstrip_blocks=True,
    undefined=jinja2.StrictUndefined,
)


@dataclass(frozen=True)
class RuleRow:
    code: str
    level: str
    name: str
    rationale: str
    source: str
    # validate (a semantic rule), plan (a planner finding), stack (the stack's settings), or an
    # input code's (gpuplat/input_codes.py)
    stage: str
    fix: str


def _cell(text: str) -> str:
    """A Markdown table cell: pipes escaped, one line."""
    return " ".join(text.replace("|", "\\|").split())


def rule_rows() -> list[RuleRow]:
    rows = [RuleRow(c.code, c.level.value, c.name, c.rationale, c.source, c.stage, c.fix) for c in INPUT_CODES.values()]
    rows += [RuleRow(r.code, r.level.value, r.name, r.rationale, r.source, "validate", r.fix) for r in RULES.values()]
    rows += [RuleRow(c.code, c.level.value, c.name, c.rationale, c.source, "plan", c.fix) for c in PLAN_CODES.values()]
    rows += [
        RuleRow(r.code, r.level.value, r.name, r.rationale, r.source, "stack", r.fix) for r in STACK_RULES.values()
    ]
    return sorted(rows, key=lambda r: r.code)


def render_spec() -> str:
    schema = json.loads(SCHEMA.read_text())
    rows = fields(schema)
    sections = [(top, [f for f in rows if f.path.split(".")[0].split("[")[0] == top]) for top in schema["properties"]]
    return _ENV.get_template("spec.md.j2").render(schema=schema, sections=sections, cell=_cell)


def render_rules() -> str:
    return _ENV.get_template("rules.md.j2").render(rows=rule_rows(), cell=_cell)


def _size_order(t: InstanceType) -> tuple[str, int, str]:
    """g5.2xlarge before g5.12xlarge: family, then the size's multiple."""
    family, _, size = t.name.partition(".")
    digits = size.removesuffix("xlarge")
    return family, int(digits) if digits.isdigit() else (1 if digits == "" else 10_000), size


def render_catalog() -> str:
    from gpuplat.catalog.gpus import GPUS
    from gpuplat.catalog.instances import INSTANCE_TYPES
    from gpuplat.catalog.prices import PRICES_AS_OF
    from gpuplat.catalog.regional_prices import SNAPSHOT_ON_DEMAND_HOURLY_USD, gpu_families
    from gpuplat.catalog.sharing import REPLICAS_MAX, REPLICAS_MIN, SHARING_OVERHEAD, SHARING_RESOURCE

    sharing = [
        (mode, SHARING_RESOURCE.get(mode, "nvidia.com/mig-<profile>"), overhead)
        for mode, overhead in SHARING_OVERHEAD.items()
    ]
    regions = [(region, ", ".join(gpu_families(region))) for region in sorted(SNAPSHOT_ON_DEMAND_HOURLY_USD)]
    return _ENV.get_template("catalog.md.j2").render(
        instances=sorted(INSTANCE_TYPES.values(), key=_size_order),
        regions=[(region, families or "none of the catalogued GPU types") for region, families in regions],
        prices_as_of=PRICES_AS_OF,
        gpus=sorted(GPUS.values(), key=lambda g: g.name),
        sharing=sharing,
        replicas_min=REPLICAS_MIN,
        replicas_max=REPLICAS_MAX,
    )


def pages() -> dict[Path, str]:
    """Every generated page: path -> its text."""
    return {
        DOCS / "spec.md": render_spec(),
        DOCS / "rules.md": render_rules(),
        DOCS / "catalog.md": render_catalog(),
    }


def stale() -> list[Path]:
    return [path for path, text in pages().items() if not path.is_file() or path.read_text() != text]


def write() -> list[Path]:
    changed = stale()
    DOCS.mkdir(exist_ok=True)
    for path, text in pages().items():
        path.write_text(text)
    return changed
