"""The diagnostic codes that come before the rules: reading a file (GP00x), merging an overlay
(GP01x), what the project adds around the spec (GP02x), the inputs beside the spec (GP03x:
traces, Capacity Block schedules, account facts, recordings) and the schema pass (GP1xx).

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
    stage: str  # read | merge | project | input | schema
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
    InputCode("GP030", "input-not-text", _E, "A trace, utilisation CDF, Capacity Block schedule, account-facts file, "
              "recording or policy configuration is a UTF-8 text file within its size limit (a trace 256 MiB, a JSON "
              "export 64 MiB, a recording 64 MiB, account facts 16 MiB, a schedule or policy configuration 1 MiB); "
              "binary input is refused at its first block.",
              "Give the file itself, uncompressed UTF-8 text (a CSV, the JSON a command wrote); split a trace "
              "past the limit into the periods to replay.", "input"),
    InputCode("GP031", "json-past-limits", _E, "JSON inputs are read by one reader with limits: strict JSON, at "
              "most 64 levels deep, integers of at most 20 digits, no NaN or Infinity, no number past a double's "
              "range. No input gpuplat reads needs more, and each would otherwise fail deep in a command.",
              "Fix the JSON at the position given; regenerate the file with the command that writes it "
              "(`preflight --save`, `preview --format json`, a Prometheus query_range).", "input",
              "https://www.rfc-editor.org/rfc/rfc8259"),
    InputCode("GP032", "input-value", _E, "Each value of a trace or schedule has its type, is finite and in its "
              "range: GPUs whole, times within 10^10 s, durations and the whole trace within 366 days of the "
              "first submission, which bounds a replay's time.", "Correct the value at the line given "
              "(docs/simulate.md lists each column's range); split a trace longer than 366 days.", "input"),
    InputCode("GP033", "input-shape", _E, "A trace is one of the shapes docs/simulate.md lists (a header naming "
              "its columns, or a Prometheus export) and holds at least one GPU job; a schedule has its columns.",
              "Give the header the columns the message lists (no spaces inside a name), or export the "
              "DCGM series docs/simulate.md names.", "input"),
    InputCode("GP034", "facts-shape", _E, "Account facts are the object `gpuplat preflight --save` writes: each "
              "key of its type, counts whole and within range.", "Save the facts again with `gpuplat preflight "
              "--save`, or correct the key the message names.", "input"),
    InputCode("GP035", "recording-shape", _E, "A recording is what `gpuplat preview --format json` writes: "
              "resources with a type and inputs, each URN once.", "Record it again with `gpuplat preview "
              "--format json`, or fix the resource the message names (an edit that copied a resource keeps its "
              "URN: give the copy its own).", "input"),
    InputCode("GP036", "recording-other-stack", _E, "verify follows the journeys of the stack it is asked "
              "about; a recording of another stack or project would judge that one's resources against this "
              "stack's plan.", "Pass the recording of this stack (`gpuplat preview --stack STACK --format json`), "
              "or verify the stack the recording is of.", "input"),
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
