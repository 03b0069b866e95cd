"""The diagnostic codes that come before the rules: reading a file (GP00x), merging an overlay
(GP01x), what the project adds around the spec (GP02x) and the schema pass (GP1xx).

The semantic rules carry their codes in their registry (gpuplat/validate/registry.py) and the
planner's findings in gpuplat/plan/codes.py; this table gives these the same fields, so
`gpuplat explain` and docs/rules.md cover every code gpuplat reports. The modules that emit them
keep their literals; tests/test_explain.py holds the two equal.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplat.diagnostics import Level

_YAML = "https://yaml.org/spec/1.2.2/"
_SCHEMA = "https://json-schema.org/draft/2020-12/json-schema-validation"


@dataclass(frozen=True)
class InputCode:
    code: str
    name: str
    level: Level
    rationale: str
    fix: str
    stage: str  # read | merge | project | schema
    source: str = ""


_E, _W = Level.ERROR, Level.WARNING
_CODES = (
    InputCode("GP001", "file-unreadable", _E, "A spec or overlay is a regular file gpuplat can open and read.",
              "Give the path of the spec or overlay file itself (not a directory, pipe or device), readable by you.",
              "read"),
    InputCode("GP002", "yaml-syntax", _E, "The spec is YAML; a syntax error or a key written twice stops the parser "
              "where it is.", "Fix the YAML at the position given: indentation, a missing colon or quote, a key named "
              "twice in one mapping.", "read", _YAML),
    InputCode("GP003", "not-a-mapping", _E, "A spec is a mapping of fields at the top level.",
              "Write the spec's fields (apiVersion, kind, metadata, ...) as a mapping at the top level.", "read"),
    InputCode("GP004", "not-spec-text", _E, "A spec is UTF-8 text of at most 256 KiB, with no integer longer than "
              "any field takes.", "Give the spec as UTF-8 YAML text; a binary, a huge file or an endless number is "
              "the wrong input.", "read"),
    InputCode("GP005", "nesting-too-deep", _E, "No spec nests more than 32 levels; deeper input is rejected before "
              "it is loaded.", "Give the platform spec itself; its deepest field is a few levels down.", "read"),
    InputCode("GP006", "too-many-values", _E, "No spec has 20,000 values (50,000 once aliases are expanded); more "
              "is rejected before it is loaded.", "Give the platform spec itself, and expand no alias into "
              "thousands of copies.", "read"),
    InputCode("GP007", "unsupported-yaml", _E, "A spec is plain mappings, lists and scalars: no custom tags, no "
              "alias inside the node it names.", "Write plain YAML: remove the tag or the cyclic alias.", "read",
              _YAML),
    InputCode("GP008", "anchor-redefined", _W, "An anchor defined twice makes later aliases mean the new value.",
              "Give each anchor its own name.", "read", _YAML),
    InputCode("GP010", "overlay-removes-unknown", _E, "`remove: true` drops an item the base defines; a name the "
              "base lacks removes nothing.", "Name an item of the base (the message suggests the nearest), or "
              "drop the item from the overlay.", "merge"),
    InputCode("GP011", "overlay-item-without-name", _E, "Overlay list items merge into the base's by `name`.",
              "Give the item its `name`.", "merge"),
    InputCode("GP012", "overlay-marker-not-boolean", _E, "`remove` and `new` are true or false, and an item is not "
              "both removed and new.", "Write `remove: true` or `new: true`, one of them.", "merge"),
    InputCode("GP013", "overlay-deletes-key", _W, "A key set to null in an overlay deletes the base's value.",
              "Remove the line to keep the base's value, or give the value the stack needs.", "merge"),
    InputCode("GP014", "overlay-name-twice", _E, "An overlay changes each named item once.",
              "Merge the two items of the overlay list into one.", "merge"),
    InputCode("GP015", "overlay-name-unknown", _E, "An overlay item with a name the base lacks is a typo unless it "
              "says it is new.", "Fix the name (the message suggests the base's nearest), or mark the item "
              "`new: true`.", "merge"),
    InputCode("GP016", "overlay-new-known", _E, "`new: true` adds an item; the base already has one of that name.",
              "Drop `new: true` to change the base's item, or choose another name.", "merge"),
    InputCode("GP020", "acknowledgement-stale", _W, "An acknowledgement that covers no warning any more hides "
              "nothing and misleads the reader.", "Remove the acknowledgement (or its path) that no warning "
              "matches.", "project"),
    InputCode("GP021", "acknowledgement-not-a-warning", _E, "Only warnings can be acknowledged; an error must be "
              "fixed.", "Remove the code from `acknowledge:` and fix the error.", "project"),
    InputCode("GP022", "required-tag-missing", _E, "The organisation policy (policy/config.json) requires these "
              "tags on every AWS resource.", "Add the tag to `metadata.tags` (or the stack's aws:defaultTags).",
              "project"),
    InputCode("GP023", "editor-schema-stale", _W, "Editors check the spec against the schema file its "
              "yaml-language-server line names; a copy of another gpuplat's schema accepts fields this one "
              "rejects, or the reverse.", "Run `gpuplat schema`: it writes the installed gpuplat's schema where "
              "the line points.", "project"),
    InputCode("GP101", "unknown-key", _E, "Every mapping of the schema is closed (additionalProperties: false): an "
              "unknown key is a typo or a field of another version.", "Fix the key (the message suggests the "
              "nearest allowed one); `gpuplat docs spec` lists the fields.", "schema", _SCHEMA),
    InputCode("GP102", "missing-field", _E, "The schema requires the field.", "Add the field; `gpuplat docs spec` "
              "says what it takes.", "schema", _SCHEMA),
    InputCode("GP103", "wrong-type", _E, "The schema fixes each field's type.", "Write the value as the type named "
              "(quote a string that YAML reads as a number or boolean).", "schema", _SCHEMA),
    InputCode("GP104", "value-not-allowed", _E, "The schema bounds values: enums, patterns, ranges, lengths, list "
              "sizes, uniqueness.", "Use a value the message allows; `gpuplat docs spec` gives each field's bounds.",
              "schema", _SCHEMA),
    InputCode("GP105", "schema-violation", _E, "The value breaks another constraint of the schema.",
              "Change the value as the message says; `gpuplat docs spec` describes the field.", "schema", _SCHEMA),
)

INPUT_CODES: dict[str, InputCode] = {c.code: c for c in _CODES}
