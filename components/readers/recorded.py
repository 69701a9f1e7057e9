"""The ``recorded`` reader: a questions JSON file whose questions carry what their system already
retrieved, for ``--strategy recorded`` (grade and score a production retrieval log, no retriever run).

The file is a questions JSON file (:mod:`components.readers.questions_json`, ``version``, ``name``
and ``description`` included) where every question has ``retrieved``, best first::

    {"version": 1, "name": "support-log-2026-05", "description": "...", "questions": [
      {"id": "q1", "question": "...", "expected_answer": "...", "needle_doc_id": "install",
       "retrieved": [{"doc_id": "install", "text": "Run acme --version ...", "score": 0.82,
                      "title": "Installing acme"}, ...]}]}

Per item: ``doc_id`` and ``text`` (texts, required), ``score`` (a number or null) and ``title``
(a text) optional, and ``chunk_id`` when the log has one (else ``<doc_id>#<hash of the text>``).
An empty list says the system retrieved nothing. A set where a question has no ``retrieved`` is
refused, naming the first such question; so is an item that is not one. Other keys of an item are
left out, named in one warning.

Its ``detect`` says no to every path (a recorded set is a questions JSON file too): the run asks
this reader by its name for ``--strategy recorded``. Any other strategy reads the same file as
plain questions (``retrieved`` is then one of their own fields).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path

from loguru import logger

from components.core import QuestionSet
from components.readers import QUESTIONS, Reader, register_reader
from components.readers.questions_json import load_questions
from utils.errors import InputError

FIELD = "retrieved"
ITEM_KEYS = ("doc_id", "text", "score", "title", "chunk_id")
_FIX = 'write each item as {"doc_id": "...", "text": "...", "score": 0.8, "title": "..."} (score and title optional)'


@dataclass(frozen=True)
class RecordedItem:
    """One item a system retrieved for a question (its position in the list is its rank)."""

    doc_id: str
    text: str
    score: float | None = None
    title: str | None = None
    chunk_id: str | None = None

    @property
    def id(self) -> str:
        """The item's chunk id: the log's, else ``<doc_id>#<first 10 hex of the text's SHA-256>``."""
        return self.chunk_id or f"{self.doc_id}#{hashlib.sha256(self.text.encode('utf-8')).hexdigest()[:10]}"


def _item(where: str, raw: object, ignored: set[str]) -> RecordedItem:
    if not isinstance(raw, dict):
        raise InputError(f"{where} is a {type(raw).__name__}, not an object: {_FIX}")
    doc_id, text = raw.get("doc_id"), raw.get("text")
    if not isinstance(doc_id, str) or not doc_id.strip():
        raise InputError(f"{where} has no \"doc_id\" text: {_FIX}")
    if not isinstance(text, str):
        raise InputError(f"{where} ({doc_id!r}) has no \"text\": {_FIX}")
    score = raw.get("score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))
                              or not math.isfinite(score)):
        raise InputError(f"{where} ({doc_id!r}): \"score\" {score!r} is not a number: give a number, or null")
    for key in ("title", "chunk_id"):
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise InputError(f"{where} ({doc_id!r}): \"{key}\" is a {type(raw[key]).__name__}, not a text: {_FIX}")
    ignored.update(str(k) for k in raw if k not in ITEM_KEYS)
    return RecordedItem(doc_id, text, None if score is None else float(score), raw.get("title"), raw.get("chunk_id"))


def recorded_items(qset: QuestionSet, *, warn: bool = True) -> dict[str, list[RecordedItem]]:
    """``{question id: its recorded items, best first}``; :class:`InputError` naming the first question
    without ``retrieved``, or the first item that is not one. ``warn``: name the items' keys left out."""
    out: dict[str, list[RecordedItem]] = {}
    ignored: set[str] = set()
    for i, q in enumerate(qset.questions):
        where = f"{qset.path}: question #{i + 1} (id {q.id!r})"
        raw = q.extra.get(FIELD)
        if raw is None:
            raise InputError(f"{where} has no \"{FIELD}\" list: --strategy recorded grades what each question's "
                             f"system retrieved, so every question needs one (an empty list when it retrieved nothing)")
        if not isinstance(raw, list):
            raise InputError(f"{where}: \"{FIELD}\" is a {type(raw).__name__}, not a list: {_FIX}")
        out[q.id] = [_item(f"{where}, {FIELD}[{j}]", item, ignored) for j, item in enumerate(raw)]
    if ignored and warn:
        logger.warning("{}: the recorded items' keys {} are not read (only {} are)", qset.path,
                       ", ".join(repr(k) for k in sorted(ignored)), ", ".join(ITEM_KEYS))
    return out


def load_recorded(path: str | Path, *, qrels: str | Path | None = None, split: str | None = None) -> QuestionSet:
    """The recorded set at ``path`` (``-``: standard input), every question's items checked."""
    qset = load_questions(path, qrels=qrels, split=split)
    recorded_items(qset)
    return qset


READER = register_reader(Reader("recorded", QUESTIONS, lambda path: False, load_recorded))
