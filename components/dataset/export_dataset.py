"""``python benchmark.py export-dataset --questions Q [-o dataset.jsonl]`` — a retrieval dataset in
the mining schema (query, positive contexts, hard negatives): one JSON line per question, in the
questions file's order (without ``-o``: ``dataset.jsonl`` in the current folder).

* ``id`` — ``<questions file stem>:<question id>``; ``source`` — ``benchmark_mining`` (the
  queries are mined from an existing benchmark, not generated); ``query`` — the question text.
* ``positive_ctxs`` — the needle document's best ``--positives`` chunks (default 1; per needle
  document when there are several, pooled and re-ranked): the chunks that hold the expected
  answer's key terms first (the lexical judge's per-chunk rule: 60% or more of the answer's
  IDF-weighted key terms in the chunk), BM25 for the query ordering the rest (see
  :meth:`components.dataset.context_index.ContextIndex.answer_first`; without an expected answer,
  BM25 only); ``rank_relevance`` is 1 for the best (the primary target), 2, 3 ... for the next ones.
* ``negative_ctxs`` — hard negatives: the ``--hard-negatives`` (default 5) best chunks by BM25
  for the query over the whole corpus that are not from a needle document and score above 0,
  each with ``is_hard_negative: true``.
* Each context has ``doc_id``, ``chunk_id``, ``title``, ``heading_path``, ``text`` (the chunk's
  indexed text: title and heading path, then the body — what retrievers index and judges see)
  and ``bm25_score``.
* ``metadata`` — ``required_concepts`` (the expected answer's key concepts, most specific first:
  :mod:`components.dataset.required_concepts`; a question's own ``required_concepts`` field is kept
  instead), the question's own extra fields (``difficulty``, ``category``, ``type`` ...),
  ``expected_answer``, ``needle_doc_ids``, ``questions_file``, ``positive_has_answer`` (whether the
  first positive holds the expected answer's key terms: false flags a line where no needle chunk
  does, counted in the summary line; null without an expected answer), and ``validation`` (the
  verdict, flags, reasons and the two check grades from a ``validate`` JSON given with
  ``--validation``, else null).

Strict JSON lines (UTF-8, no NaN). A needle that is not in the corpus is an input error; a needle
document without text gives a line with no positives (and a warning).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from loguru import logger

from components.core import Question, QuestionSet, ScoredChunk
from components.core.questions import check_needles
from components.dataset.context_index import ContextIndex, Positive
from components.dataset.required_concepts import required_concepts
from components.readers import load_questions
from utils.errors import InputError
from utils.files.output import check_output, strict_json_value, write_text_atomic
from utils.redaction import Redactor
from utils.records.typecheck import describe_json

SOURCE = "benchmark_mining"


def _context(scored: ScoredChunk) -> dict:
    c = scored.chunk
    return {"doc_id": c.doc_id, "chunk_id": c.chunk_id, "title": c.title, "heading_path": list(c.heading_path),
            "text": c.index_text, "bm25_score": round(scored.score, 4)}


_VALIDATION_FIX = "pass the JSON written by `benchmark.py validate`"
# the fields of a validation entry the dataset lines take: (name, the types it may hold, what it should be)
_ENTRY_FIELDS = (("verdict", (str, type(None)), "a string"), ("flags", (list,), "a list of strings"),
                 ("reasons", (list,), "a list of strings"), ("judge", (str, type(None)), "a string"),
                 ("sufficiency", (dict, type(None)), "an object"), ("necessity", (dict, type(None)), "an object"))


def _check_entry(path: Path, i: int, entry: object) -> dict:
    """One entry of ``questions``, each field the dataset lines take of the type validate writes."""
    where = f"--validation {path}: questions[{i}]"
    if not isinstance(entry, dict):
        raise InputError(f"{where} is {describe_json(entry)}, not an object: {_VALIDATION_FIX}")
    if not isinstance(entry.get("id"), str):
        raise InputError(f"{where}.id is {describe_json(entry.get('id'))}, not a string: {_VALIDATION_FIX}")
    for name, types, should in _ENTRY_FIELDS:
        value = entry.get(name)
        if name in ("flags", "reasons") and name not in entry:
            continue
        if not isinstance(value, types) or name in ("flags", "reasons") and not all(isinstance(x, str) for x in value):
            raise InputError(f"{where}.{name} is {describe_json(value)}, not {should}: {_VALIDATION_FIX}")
        if isinstance(value, dict):
            grade = value.get("grade")
            if grade is not None and (isinstance(grade, bool) or not isinstance(grade, (int, float))):
                raise InputError(f"{where}.{name}.grade is {describe_json(grade)}, not a number: {_VALIDATION_FIX}")
    return entry


def load_validation(path: Path, qset: QuestionSet) -> dict[str, dict]:
    """The ``validate`` JSON's per-question entries by id; it must have been made for ``qset``. Read
    as every input is (a regular file with a size bound, strict JSON), and each field the dataset
    lines take checked: :class:`InputError` (one line naming the file and the field) otherwise."""
    from utils.results import read_json_file

    try:
        doc = read_json_file(path, what="validation file", fix=_VALIDATION_FIX)
    except InputError as err:
        raise InputError(f"--validation {err}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("questions"), list) or "questions_sha256" not in doc:
        raise InputError(f"--validation {path} is not a validation file (no questions_sha256/questions): "
                         f"{_VALIDATION_FIX}")
    if doc["questions_sha256"] != qset.sha256:
        raise InputError(f"--validation {path} was made for another questions file (sha256 "
                         f"{str(doc['questions_sha256'])[:12]}…, not {qset.sha256[:12]}…): run validate on "
                         f"{qset.path} again")
    return {q["id"]: q for q in (_check_entry(path, i, e) for i, e in enumerate(doc["questions"]))}


def _validation_summary(entry: dict | None) -> dict | None:
    if entry is None:
        return None
    grade = {name: (entry.get(name) or {}).get("grade") for name in ("sufficiency", "necessity")}
    return {"verdict": entry.get("verdict"), "flags": entry.get("flags", []), "reasons": entry.get("reasons", []),
            "sufficiency_grade": grade["sufficiency"], "necessity_grade": grade["necessity"],
            "judge": entry.get("judge")}


def dataset_line(q: Question, index: ContextIndex, *, questions_path: str, positives: int, hard_negatives: int,
                 validation: dict | None) -> dict:
    """One line of the dataset (see the module docstring)."""
    best: list[Positive] = [p for doc in q.needle_doc_ids
                            for p in index.answer_first(q.question, q.expected_answer, [doc], positives)]
    best.sort(key=lambda p: (-(p.answer_relevance or 0), -p.scored.score))  # stable: ties keep needle order
    positive_ctxs = [dict(_context(p.scored), rank_relevance=rank) for rank, p in enumerate(best, start=1)]
    if q.expected_answer is None or (best and best[0].holds_answer is None):
        has_answer = None
    else:
        has_answer = bool(best) and best[0].holds_answer
    negative_ctxs = [dict(_context(s), is_hard_negative=True)
                     for s in index.hard_negatives(q.question, q.needle_doc_ids, hard_negatives)]
    concepts = required_concepts(q.expected_answer, index.chunks_of(q.needle_doc_ids), index.lexical.stats)
    metadata = {"required_concepts": concepts, **q.extra,
                "expected_answer": q.expected_answer, "needle_doc_ids": list(q.needle_doc_ids),
                "questions_file": Path(questions_path).name, "positive_has_answer": has_answer,
                "validation": _validation_summary(validation)}
    return {"id": f"{Path(questions_path).stem}:{q.id}", "source": SOURCE, "query": q.question,
            "positive_ctxs": positive_ctxs, "negative_ctxs": negative_ctxs, "metadata": metadata}


def write_dataset(questions: Path, output: Path, *, corpus_path: Path | None = None, validation: Path | None = None,
                  positives: int = 1, hard_negatives: int = 5, secrets: Iterable[str] = ()) -> Path:
    """``export-dataset``'s work: one line per question of ``questions`` (see the module docstring)
    over ``corpus_path`` (default: the built-in one), with ``validation``'s verdicts when given, written
    to ``output`` (``secrets`` redacted). Returns the file written. Raises :class:`InputError`."""
    output = check_output(output, option="--output", inputs=[("the questions file", questions),
                          ("the --validation file", validation)], corpus=corpus_path, example="dataset.jsonl")
    redact = Redactor(secrets)
    qset = load_questions(questions)
    verdicts = load_validation(validation, qset) if validation is not None else None
    from components.core.chunking import chunk_corpus
    from components.readers import load_corpus

    corpus = load_corpus(corpus_path)
    check_needles(qset, corpus.ids(), corpus.source)
    index = ContextIndex(chunk_corpus(corpus.documents))
    lines = []
    without_answer: list[str] = []
    for q in qset.questions:
        entry = None
        if verdicts is not None:
            entry = verdicts.get(q.id)
            if entry is None:
                logger.warning("{}: question {!r} is not in {} (validation null)", qset.path, q.id, validation)
        line = strict_json_value(dataset_line(q, index, questions_path=qset.path, positives=positives,
                                              hard_negatives=hard_negatives, validation=entry), redact)
        if not line["positive_ctxs"]:
            logger.warning("question {!r}: its needle document has no text: no positive context", q.id)
        if line["metadata"]["positive_has_answer"] is False:
            without_answer.append(q.id)
            logger.debug("question {!r}: no chunk of its needle holds the expected answer's key terms", q.id)
        lines.append(json.dumps(line, ensure_ascii=False, allow_nan=False))
    write_text_atomic(output, "".join(line + "\n" for line in lines))
    shown = ", ".join(without_answer[:5]) + (f" and {len(without_answer) - 5} more" if len(without_answer) > 5 else "")
    logger.info("{} dataset lines written to {} (positives per needle {}, hard negatives up to {}); {} without a "
                "positive holding the expected answer's key terms (positive_has_answer false{})", len(lines),
                output, positives, hard_negatives, len(without_answer),
                f": {shown}" if without_answer else "")
    return output
