"""Questions files: load and validate before anything is retrieved or graded.

Accepted shapes: ``{"needle_doc_id": ..., "questions": [...]}`` (the top-level needle applies to
questions that name none) or a bare list. Per question: ``id``, ``question``, optional
``expected_answer``, and the needle as ``needle_doc_id``, ``doc_id`` or ``needle_doc_ids`` (a list).
Unknown fields are kept in ``extra``. Every problem raises :class:`InputError` naming the file,
the item and the fix.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from utils.errors import InputError

_KNOWN = {"id", "question", "expected_answer", "needle_doc_id", "doc_id", "needle_doc_ids"}


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    expected_answer: str | None
    needle_doc_ids: tuple[str, ...]
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class QuestionSet:
    path: str
    sha256: str
    questions: list[Question]


def _item_name(i: int, raw: dict) -> str:
    qid = raw.get("id")
    return f"question #{i + 1}" + (f" (id {qid!r})" if isinstance(qid, (str, int)) and qid != "" else "")


def _parse_question(path: Path, i: int, raw: object, default_needle: object) -> Question:
    if not isinstance(raw, dict):
        raise InputError(f"{path}: question #{i + 1} is a {type(raw).__name__}, not an object: "
                         'write each question as {"id": ..., "question": ..., "needle_doc_id": ...}')
    where = f"{path}: {_item_name(i, raw)}"
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
    if raw.get("needle_doc_ids") is not None:
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
                    needle_doc_ids=tuple(dict.fromkeys(needles)), extra=extra)


def load_questions(path: str | Path) -> QuestionSet:
    path = Path(path)
    if not path.exists():
        raise InputError(f"questions file {path} does not exist: pass --questions the path of a JSON questions file")
    if path.is_dir():
        raise InputError(f"questions file {path} is a folder: pass --questions the path of a JSON questions file")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: not valid UTF-8 (byte {err.start}): save the file as UTF-8") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"{path}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg}): "
                         "fix the JSON syntax") from None
    default_needle = None
    if isinstance(doc, dict):
        if "questions" not in doc:
            raise InputError(f"{path}: the top-level object has no \"questions\" list: "
                             'use {"questions": [...]} or a bare list of questions')
        default_needle = doc.get("needle_doc_id")
        items = doc["questions"]
        if not isinstance(items, list):
            raise InputError(f"{path}: \"questions\" is a {type(items).__name__}, not a list: make it a list")
    elif isinstance(doc, list):
        items = doc
    else:
        raise InputError(f"{path}: the top level is a {type(doc).__name__}: "
                         'use {"questions": [...]} or a bare list of questions')
    if not items:
        raise InputError(f"{path}: the questions list is empty: add at least one question")
    questions = [_parse_question(path, i, raw, default_needle) for i, raw in enumerate(items)]
    seen: dict[str, int] = {}
    for i, q in enumerate(questions):
        if q.id in seen:
            raise InputError(f"{path}: question #{i + 1} repeats id {q.id!r} (first used by question "
                             f"#{seen[q.id] + 1}): give every question a unique id")
        seen[q.id] = i
    return QuestionSet(path=str(path), sha256=hashlib.sha256(data).hexdigest(), questions=questions)


def check_needles(questions: QuestionSet, corpus_ids: set[str], corpus_source: str) -> None:
    """Every needle must be a document of the corpus; name up to three close ids when not."""
    for i, q in enumerate(questions.questions):
        for needle in q.needle_doc_ids:
            if needle in corpus_ids:
                continue
            close = difflib.get_close_matches(needle, corpus_ids, n=3, cutoff=0.6)
            hint = f"did you mean {', '.join(repr(c) for c in close)}?" if close else \
                "check --corpus, or the doc id (a file stem)"
            raise InputError(f"{questions.path}: question #{i + 1} (id {q.id!r}): needle {needle!r} is not a "
                             f"document of the corpus {corpus_source}: {hint}")
