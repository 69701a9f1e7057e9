"""The JSON Schema of a row's ``diagnosis`` (the classifier is
:mod:`components.analysis.diagnosis`; :mod:`utils.records.schema` puts this in the results schema)."""

from __future__ import annotations

_TYPE = {"type": ["string", "null"]}

DIAGNOSIS_SCHEMA = {"anyOf": [{"type": "null"}, {
    "type": "object",
    "description": "why the question missed: one primary failure type and at most one secondary (docs/report.md)",
    "properties": {
        "tags": {"type": "array", "items": {"type": "string"},
                 "description": "one or two failure types, the primary first (files written before the primary "
                                "type may list more)"},
        "primary": {**_TYPE, "description": "the most likely cause: tags[0]"},
        "secondary": {**_TYPE, "description": "tags[1], or null"},
        "sentence": {"type": "string"},
        "fixes": {"type": "object", "additionalProperties": {"type": "string"},
                  "description": "type → one remedy"},
        "details": {"type": "object", "description": "the figures the rules compared"},
    },
    "required": ["tags", "sentence"],
    "additionalProperties": True,
}]}
