"""The ``questions-json`` reader: questions files, loaded and validated before anything is retrieved or graded.

Accepted shapes: ``{"needle_doc_id": ..., "questions": [...]}`` (the top-level needle applies to
questions that name none; ``version``, ``name`` and ``description`` there describe the set and are
recorded in the results' ``run.question_set``) or a bare list. Per question: ``id``, ``question``, optional
``expected_answer``, and the needle as ``needle_doc_id``, ``doc_id`` or ``needle_doc_ids`` (a list).
Unknown fields are kept in ``extra`` (``category``, ``difficulty``, ``reference_ranks`` ... are
metadata); those that look like a known field (``answer`` for ``expected_answer``, ``needle`` for
``needle_doc_id``, a typo) get one warning per file, before anything else is done, since the
benchmark does not read them. Every problem raises :class:`InputError` naming the file, the item and
the fix.

Bounds: the file must be a regular file (a symlink to one is fine), or ``-`` for standard input,
of at most :data:`MAX_QUESTIONS_BYTES` (50 MB). A FIFO, device, socket or folder is refused before
anything is read (it is opened non-blocking, so a FIFO without a writer cannot hang the load); at
most cap + 1 bytes are read, in 1 MiB reads, so Ctrl-C is delivered while waiting on a slow pipe.
The JSON must be strict: ``NaN``/``Infinity``, numbers that overflow a float or have more digits
than Python converts, a question nested more than :data:`MAX_QUESTION_DEPTH` levels and lone UTF-16
surrogates (``\\ud800``) are refused, since any of them would break the strict-JSON results, their
writing or their console lines.

Graded relevance: ``needles`` instead of the needle fields, ``{"doc": 2, ...}`` with whole-number
grades (0 is judged non-relevant, not a needle; see :mod:`utils.metrics`). A BEIR folder or a
``queries.jsonl`` (with its qrels) is read by :mod:`components.readers.beir` instead of this module.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import sys
from pathlib import Path
from collections import Counter
from typing import BinaryIO

from loguru import logger

from components.core import Question, QuestionSet
from components.readers import QUESTIONS, Reader, register_reader
from utils.errors import InputError
from utils.files.lines import READING, open_regular

ABOUT_FIELDS = ("version", "name", "description")  # the set's own, at the top level: recorded in run.question_set
_KNOWN = {"id", "question", "expected_answer", "needle_doc_id", "doc_id", "needle_doc_ids", "needles"}
MAX_QUESTIONS_BYTES = 50_000_000  # 50 MB: the Kubernetes sets are 10-30 kB
MAX_QUESTION_DEPTH = 32  # levels of objects/lists in one question, itself included
STDIN = "-"  # --questions - reads standard input
STDIN_NAME = "<stdin>"  # QuestionSet.path and messages when reading standard input
_READ_SIZE = 1 << 20
# Field names people write for a known field (compared lower-cased, "-" and " " read as "_").
_ALIASES = {
    **dict.fromkeys(("answer", "answers", "expected", "expected_answers", "reference_answer", "gold_answer",
                     "ground_truth", "reference"), "expected_answer"),
    **dict.fromkeys(("needle", "needle_id", "needle_doc", "doc", "document", "document_id", "docid", "source_doc",
                     "source_doc_id", "gold_doc_id"), "needle_doc_id"),
    **dict.fromkeys(("needle_ids", "needle_docs", "doc_ids", "document_ids", "documents"),
                    "needle_doc_ids"),
    **dict.fromkeys(("query", "prompt", "question_text", "text", "q"), "question"),
    **dict.fromkeys(("qid", "question_id", "_id"), "id"),
}
_FIX = "pass --questions a JSON file, or - to read standard input"


def _item_name(i: int, raw: dict) -> str:
    qid = raw.get("id")
    return f"question #{i + 1}" + (f" (id {qid!r})" if isinstance(qid, (str, int)) and qid != "" else "")


def _check_values(where: str, item: dict) -> None:
    """Every value of a question (keys included) nests at most MAX_QUESTION_DEPTH levels and is
    valid Unicode. Iterative, so it cannot overflow the stack itself."""
    stack: list[tuple[object, int]] = [(item, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as err:
                raise InputError(f"{where} contains a lone surrogate (\\u{ord(value[err.start]):04x}), which is not "
                                 "valid Unicode: write the character meant (a \\u pair, or UTF-8)") from None
        elif isinstance(value, (dict, list)):
            if depth > MAX_QUESTION_DEPTH:
                raise InputError(f"{where} is nested more than {MAX_QUESTION_DEPTH} levels deep: "
                                 "flatten its extra fields")
            children = [*value.keys(), *value.values()] if isinstance(value, dict) else value
            stack.extend((child, depth + 1) for child in children)


def _parse_question(path: str, i: int, raw: object, default_needle: object) -> Question:
    if not isinstance(raw, dict):
        raise InputError(f"{path}: question #{i + 1} is a {type(raw).__name__}, not an object: "
                         'write each question as {"id": ..., "question": ..., "needle_doc_id": ...}')
    where = f"{path}: {_item_name(i, raw)}"
    _check_values(where, raw)
    if "id" not in raw or raw["id"] in (None, ""):
        raise InputError(f"{where} has no id: give every question a unique \"id\"")
    if not isinstance(raw["id"], (str, int)) or isinstance(raw["id"], bool):
        raise InputError(f"{where}: \"id\" is a {type(raw['id']).__name__}: make it a string")
    for name in ("question", "expected_answer", "needle_doc_id", "doc_id"):
        value = raw.get(name)
        if value is not None and not isinstance(value, str):
            raise InputError(f"{where}: \"{name}\" is a {type(value).__name__}, not a string: make it a string")
    text = raw.get("question")
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{where} has no question text: fill in \"question\"")
    needles: list[str]
    grades = None
    if raw.get("needles") is not None:
        if raw.get("needle_doc_ids") is not None or raw.get("needle_doc_id") or raw.get("doc_id"):
            raise InputError(f"{where} gives both \"needles\" and \"needle_doc_id(s)\": keep one of them")
        needles, grades = _graded_needles(where, raw["needles"])
    elif raw.get("needle_doc_ids") is not None:
        ids = raw["needle_doc_ids"]
        if not isinstance(ids, list) or not ids or not all(isinstance(x, str) and x for x in ids):
            raise InputError(f"{where}: \"needle_doc_ids\" must be a non-empty list of doc id strings")
        needles = list(ids)
    elif raw.get("needle_doc_id") or raw.get("doc_id"):
        needles = [raw.get("needle_doc_id") or raw["doc_id"]]
    elif isinstance(default_needle, str) and default_needle:
        needles = [default_needle]
    else:
        raise InputError(f"{where} has no needle: add \"needle_doc_id\" (or \"doc_id\") naming the document "
                         "that answers it, or a top-level \"needle_doc_id\"")
    expected = raw.get("expected_answer")
    expected = expected.strip() if isinstance(expected, str) and expected.strip() else None
    extra = {k: v for k, v in raw.items() if k not in _KNOWN}
    return Question(id=str(raw["id"]), question=text.strip(), expected_answer=expected,
                    needle_doc_ids=tuple(dict.fromkeys(needles)), extra=extra, needle_grades=grades)


def _graded_needles(where: str, value: object) -> tuple[list[str], dict[str, int] | None]:
    """``(needles, grades)`` of a ``"needles": {"doc": grade}`` object: the documents graded 1 or
    more, in the object's order; grades None when every one is 1."""
    fix = 'write "needles" as {"doc id": grade, ...} with whole-number grades (0 not relevant, 1-3 relevant)'
    if not isinstance(value, dict) or not value:
        raise InputError(f"{where}: \"needles\" is not a non-empty object: {fix}")
    for doc, grade in value.items():
        if not doc or isinstance(grade, bool) or not isinstance(grade, int) or grade < 0:
            raise InputError(f"{where}: \"needles\" gives {doc!r} the grade {grade!r}: {fix}")
    relevant = {doc: grade for doc, grade in value.items() if grade >= 1}
    if not relevant:
        raise InputError(f"{where}: \"needles\" grades no document 1 or more, so the question has no needle: "
                         "grade the document that answers it 1-3")
    return list(relevant), (relevant if any(g != 1 for g in relevant.values()) else None)


def _squash(name: str) -> str:
    return name.casefold().replace("-", "").replace("_", "").replace(" ", "")


def known_field_like(name: str) -> str | None:
    """The known question field an unknown field name looks like (an alias such as ``answer``, a
    different spelling such as ``expectedAnswer``, or a typo such as ``expected_anwser``), else None."""
    if name in _KNOWN:
        return None
    key = name.strip().casefold().replace("-", "_").replace(" ", "_")
    if key in _ALIASES:
        return _ALIASES[key]
    squashed = {_squash(k): k for k in _KNOWN}
    if _squash(name) in squashed:
        return squashed[_squash(name)]
    close = difflib.get_close_matches(key, _KNOWN, n=1, cutoff=0.85)
    return close[0] if close else None


def _needle_fields(raw: dict) -> bool:
    return any(raw.get(k) not in (None, "", []) for k in ("needle_doc_id", "doc_id", "needle_doc_ids"))


def warn_lookalike_fields(name: str, items: list) -> dict[str, str]:
    """One warning (a loguru WARNING) naming the unknown fields of the questions in ``items`` that
    look like a known field the question does not already give; returns them, field → known field."""
    counts: Counter[str] = Counter()
    meant: dict[str, str] = {}
    for raw in items:
        if not isinstance(raw, dict):
            continue
        for key in raw:
            if not isinstance(key, str) or key in _KNOWN:
                continue
            known = known_field_like(key)
            if known is None:
                continue
            already = _needle_fields(raw) if known in ("needle_doc_id", "needle_doc_ids") else \
                raw.get(known) not in (None, "")
            if not already:
                counts[key] += 1
                meant[key] = known
    if counts:
        listed = ", ".join(f"{key!r} in {n} question{'s' if n != 1 else ''} (did you mean {meant[key]!r}?)"
                           for key, n in counts.items())
        logger.warning("{}: fields the benchmark does not read look like known ones: {}; rename them, or they "
                       "stay metadata only", name, listed)
    return {key: meant[key] for key in counts}


def _read_bounded(stream: BinaryIO, where: str) -> bytes:
    """At most MAX_QUESTIONS_BYTES + 1 bytes, one bounded read at a time (Ctrl-C lands between)."""
    parts: list[bytes] = []
    size = 0
    while size <= MAX_QUESTIONS_BYTES:
        part = stream.read(min(_READ_SIZE, MAX_QUESTIONS_BYTES + 1 - size))
        if not part:
            break
        parts.append(part)
        size += len(part)
    if size > MAX_QUESTIONS_BYTES:
        raise InputError(f"{where} is over the {MAX_QUESTIONS_BYTES // 1_000_000} MB cap for a questions file: "
                         "split the questions into several files")
    return b"".join(parts)


_OPENING = {**READING, "folder": "{what} {path} is a folder (with no queries.jsonl): {fix}"}


def _read_file(path: Path) -> bytes:
    stream, info = open_regular(path, messages=_OPENING, what="questions file", fix=_FIX)
    with stream:
        if info.st_size > MAX_QUESTIONS_BYTES:
            raise InputError(f"questions file {path} is over the {MAX_QUESTIONS_BYTES // 1_000_000} MB cap for a "
                             "questions file: split the questions into several files")
        return _read_bounded(stream, f"questions file {path}")


class _NotJson(ValueError):
    """A number strict JSON does not have (NaN, Infinity, 1e999)."""


def _strict_constant(name: str) -> float:
    raise _NotJson(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotJson(f"the number {text[:20]}{'…' if len(text) > 20 else ''} overflows a float")
    return value


def _parse_json(text: str, where: str) -> object:
    try:
        return json.loads(text, parse_constant=_strict_constant, parse_float=_finite_float)
    except json.JSONDecodeError as err:
        raise InputError(f"{where}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg}): "
                         "fix the JSON syntax") from None
    except _NotJson as err:
        raise InputError(f"{where}: {err}: write a finite number, or null") from None
    except RecursionError:
        raise InputError(f"{where}: the JSON is nested too deeply to read: "
                         "a questions file needs at most a few levels") from None
    except ValueError as err:  # int(): more digits than sys.get_int_max_str_digits()
        raise InputError(f"{where}: a number has more than {sys.get_int_max_str_digits()} digits "
                         f"({str(err).split(':')[0]}): write it as a string") from None


def load_questions(path: str | Path, *, qrels: str | Path | None = None, split: str | None = None) -> QuestionSet:
    """Load and validate a questions file; ``"-"`` reads standard input (see the module's bounds).
    ``qrels``/``split`` are refused: they apply to BEIR queries (:mod:`components.readers.beir`)."""
    if qrels is not None or split is not None:
        raise InputError(f"--qrels and --split apply to BEIR queries (a folder or queries.jsonl), not to {path}: "
                         "a questions JSON file names its needles itself")
    if str(path) == STDIN:
        name = STDIN_NAME
        if sys.stdin is None:
            raise InputError("--questions - reads standard input, which is closed: pipe the questions in")
        data = _read_bounded(sys.stdin.buffer, "standard input")
    else:
        name = str(path)
        data = _read_file(Path(path))
    return parse_questions(data, name)


def parse_questions(data: bytes, name: str) -> QuestionSet:
    """A questions file's bytes (``name`` for messages) as a validated :class:`QuestionSet`."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError(f"{name}: not valid UTF-8 (byte {err.start}): save the file as UTF-8") from None
    doc = _parse_json(text, name)
    default_needle = None
    if isinstance(doc, dict):
        if "questions" not in doc:
            raise InputError(f"{name}: the top-level object has no \"questions\" list: "
                             'use {"questions": [...]} or a bare list of questions')
        default_needle = doc.get("needle_doc_id")
        items = doc["questions"]
        if not isinstance(items, list):
            raise InputError(f"{name}: \"questions\" is a {type(items).__name__}, not a list: make it a list")
    elif isinstance(doc, list):
        items = doc
    else:
        raise InputError(f"{name}: the top level is a {type(doc).__name__}: "
                         'use {"questions": [...]} or a bare list of questions')
    if not items:
        raise InputError(f"{name}: the questions list is empty: add at least one question")
    warn_lookalike_fields(name, items)
    questions = [_parse_question(name, i, raw, default_needle) for i, raw in enumerate(items)]
    seen: dict[str, int] = {}
    for i, q in enumerate(questions):
        if q.id in seen:
            raise InputError(f"{name}: question #{i + 1} repeats id {q.id!r} (first used by question "
                             f"#{seen[q.id] + 1}): give every question a unique id")
        seen[q.id] = i
    return QuestionSet(path=name, sha256=hashlib.sha256(data).hexdigest(), questions=questions, document=doc,
                       about=_about(name, doc))


def _about(name: str, doc: object) -> dict:
    """The set's ``version`` (a whole number or a text), ``name`` and ``description`` (texts), those
    its top-level object gives: the run records them."""
    if not isinstance(doc, dict):
        return {}
    about = {key: doc[key] for key in ABOUT_FIELDS if doc.get(key) is not None}
    version = about.get("version")
    if version is not None and (isinstance(version, bool) or not isinstance(version, (int, str))):
        raise InputError(f"{name}: \"version\" is a {type(version).__name__}: make it a whole number or a text")
    for key in ("name", "description"):
        if key in about and not isinstance(about[key], str):
            raise InputError(f"{name}: \"{key}\" is a {type(about[key]).__name__}, not a text: make it a text")
    return about


READER = register_reader(Reader("questions-json", QUESTIONS, lambda path: True, load_questions))
