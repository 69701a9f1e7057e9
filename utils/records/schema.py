"""The JSON Schema (draft 2020-12) of a results file, derived from the records' types
(:mod:`utils.results`, the sections' :mod:`utils.records.sections`) and the metric registry
(:mod:`utils.metrics`).

``docs/results.schema.json`` is :func:`json_schema` as JSON (``docs/results.md`` says how to regenerate it).
"""

from __future__ import annotations

import types
import typing
from dataclasses import MISSING, fields, is_dataclass
from typing import Any, Union

from utils import metrics as M
from utils.results import PANEL_ROW_FIELDS, SCHEMA_VERSION, QuestionResult, RunInfo, RunResult
from utils.records.diagnosis_schema import DIAGNOSIS_SCHEMA
from utils.records.judge_signal import VERDICTS as SIGNAL_VERDICTS
from utils.records.judge_signal import JudgeSignal
from utils.records.known_answers import VERDICTS as KNOWN_VERDICTS
from utils.records.known_answers import KnownAnswers
from utils.records.typecheck import KEYS, hints, remembers_keys

SCHEMA_ID = "https://retrieval-benchmark.invalid/results.schema.json"


def type_schema(tp: Any) -> dict:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return {}
    if origin in (Union, types.UnionType):
        return {"anyOf": [type_schema(a) for a in args]}
    if tp is type(None):
        return {"type": "null"}
    simple = {str: "string", int: "integer", float: "number", bool: "boolean"}
    if tp in simple:
        return {"type": simple[tp]}
    if origin is list or tp is list:
        return {"type": "array", **({"items": type_schema(args[0])} if args else {})}
    if origin is dict or tp is dict:
        return {"type": "object", **({"additionalProperties": type_schema(args[1])} if args else {})}
    if is_dataclass(tp):
        return _record_schema(tp)
    raise TypeError(f"no JSON Schema for {tp}")  # pragma: no cover - a programming error


def _record_schema(cls: type) -> dict:
    """A record's object: its fields (less those that keep unknown keys); required: every field, less
    a panel run's row fields, or for a section record (one that remembers its keys) the fields
    without a default."""
    types_of = hints(cls)
    names = [f.name for f in fields(cls) if f.name not in ("extra", "details", "source", KEYS)]
    if remembers_keys(cls):
        required = [f.name for f in fields(cls) if f.name in names and f.default is MISSING
                    and f.default_factory is MISSING]
    else:
        required = [n for n in names if n not in PANEL_ROW_FIELDS]  # a panel run's fields: absent otherwise
    return {"type": "object", "properties": {n: type_schema(types_of[n]) for n in names}, "required": required,
            "additionalProperties": True}


def json_schema() -> dict:
    """The JSON Schema (draft 2020-12) of a results file this version writes, derived from the
    records' types and the metric registry; ``docs/results.schema.json`` is this, as JSON."""
    number = {"type": ["number", "null"]}
    metrics = {m.key: {**number, "description": f"{m.label} ({M.UNITS[m.unit]}; {m.level} level): {m.description}"}
               for m in M.metrics()}
    types_of = hints(RunResult)
    top = {name: type_schema(types_of[name]) for name in ("question_count", "graded_count", "ungraded_count",
                                                        "grade_errors", "avg_latency_ms", "index_time_s", "bootstrap",
                                                        "groups", "diagnosis_counts", "chunk_relevance_count",
                                                        "judge_consistency", "order_check", "quality_bands",
                                                        "targets", "panel", "adaptive")}
    rows = _record_schema(QuestionResult)
    rows["properties"]["diagnosis"] = DIAGNOSIS_SCHEMA
    top["ci95"] = {"type": "object", "additionalProperties": {
        "anyOf": [{"type": "null"}, {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}]}}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
        "title": "Retrieval benchmark results", "type": "object",
        "properties": {"schema_version": {"const": SCHEMA_VERSION}, "run": _judge_checks(_record_schema(RunInfo)),
                       **metrics, **top, "results": {"type": "array", "items": rows}},
        "required": ["schema_version", "run", "question_count", "graded_count", "ungraded_count", "ci95", "results"],
        "additionalProperties": True,
    }


def _judge_checks(run: dict) -> dict:
    """``run`` with the judge's checks: ``run.judge.judge_signal`` (:mod:`utils.records.judge_signal`) and
    ``run.known_answers`` (:mod:`utils.records.known_answers`: one judge's check, or a panel's), neither required."""
    signal = type_schema(JudgeSignal)
    signal["properties"]["verdict"] = {"enum": list(SIGNAL_VERDICTS)}
    run["properties"]["judge"]["properties"]["judge_signal"] = signal
    one = type_schema(KnownAnswers)
    one["properties"]["verdict"] = {"enum": list(KNOWN_VERDICTS)}
    panel = {"type": "object", "properties": {"verdict": {"enum": list(KNOWN_VERDICTS)},
                                              "blind": {"type": "array", "items": {"type": "string"}},
                                              "judges": {"type": "object", "additionalProperties": one}},
             "required": ["verdict", "blind", "judges"], "additionalProperties": True}
    run["properties"]["known_answers"] = {"anyOf": [{"type": "null"}, one, panel]}
    return run
