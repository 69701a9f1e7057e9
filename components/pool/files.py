"""What ``pool`` writes in its folder:

* ``qrels.tsv``: TREC qrels by document, ``qid<TAB>0<TAB>docid<TAB>label`` (a document's label its
  best chunk's, 0-3), in question order then doc id order: the same labels give the same bytes;
* ``qrels.chunks.tsv``: the same by chunk id, every labelled chunk;
* ``provenance.jsonl``: one line per labelled chunk: question id, doc id, chunk id, the label, who
  gave it (a judge with its prompt hash, or the panel's lowest vote), each vote and its date;
* ``pool.json``: the figures and the review (:func:`pool_json`);
* ``questions.reviewed.json`` (``--accept-false-negatives``): the questions with every
  false-negative candidate added to their ``needle_doc_ids``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from components.pool.judges import PoolJudge
from components.pool.labels import PairLabel, document_labels
from components.pool.review import Candidate
from components.pool.runs import PoolQuestion
from utils.files.output import write_json_atomic, write_text_atomic
from utils.redaction import Redactor

_ENCODER = json.JSONEncoder(ensure_ascii=False)
QRELS, CHUNK_QRELS, PROVENANCE, POOL_JSON, REVIEWED = ("qrels.tsv", "qrels.chunks.tsv", "provenance.jsonl",
                                                       "pool.json", "questions.reviewed.json")


def qrels_text(labels: Sequence[PairLabel], questions: Sequence[PoolQuestion]) -> str:
    by_doc = document_labels(labels)
    return "".join(f"{q.id}\t0\t{doc}\t{by_doc[q.id][doc]}\n"
                   for q in questions for doc in sorted(by_doc.get(q.id, {})))


def chunk_qrels_text(labels: Sequence[PairLabel], questions: Sequence[PoolQuestion]) -> str:
    by_q: dict[str, dict[str, int]] = {}
    for x in labels:
        if x.label is not None:
            by_q.setdefault(x.pair.question.id, {})[x.pair.item.chunk_id] = x.label
    return "".join(f"{q.id}\t0\t{c}\t{by_q[q.id][c]}\n" for q in questions for c in sorted(by_q.get(q.id, {})))


def _given_by(x: PairLabel, judges: Sequence[PoolJudge]) -> dict:
    q = x.pair.question
    named = [{"judge": j.name, "provider": j.provider, "model": j.model,
              "prompt_sha256": j.prompt_sha256(q.expected_answer)} for j in judges]
    if len(named) == 1:
        return {"kind": "judge", **named[0]}
    return {"kind": "panel", "rule": "lowest vote", "judges": named}


def provenance_text(labels: Sequence[PairLabel], judges: Sequence[PoolJudge]) -> str:
    lines = []
    for x in labels:
        if x.label is None:
            continue
        lines.append(_ENCODER.encode({
            "question_id": x.pair.question.id, "doc_id": x.pair.item.doc_id, "chunk_id": x.pair.item.chunk_id,
            "label": x.label, "given_by": _given_by(x, judges),
            "votes": {name: {"label": v.label, "date": v.created_at, "from_store": v.from_store}
                      for name, v in x.votes.items()},
            "date": x.created_at}))
    return "".join(line + "\n" for line in lines)


def reviewed_questions(questions: Sequence[PoolQuestion], accepted: Sequence[Candidate]) -> dict:
    added: dict[str, list[str]] = {}
    for c in accepted:
        added.setdefault(c.question_id, []).append(c.doc_id)
    out = []
    for q in questions:
        item = {"id": q.id, "question": q.question}
        if q.expected_answer is not None:
            item["expected_answer"] = q.expected_answer
        item["needle_doc_ids"] = [*q.needle_doc_ids, *(d for d in added.get(q.id, []) if d not in q.needle_doc_ids)]
        item.update({k: v for k, v in q.fields.items() if k not in item and k not in ("needle_doc_id", "needles")})
        out.append(item)
    return {"description": "questions with the documents the pool's judges all labelled relevant added as needles",
            "questions": out}


def write_pool(folder: Path, labels: Sequence[PairLabel], questions: Sequence[PoolQuestion],
               judges: Sequence[PoolJudge], summary: dict, secrets: Sequence[str] = (),
               accepted: Sequence[Candidate] | None = None) -> None:
    """Every file of the folder (module docstring), each written atomically."""
    folder.mkdir(parents=True, exist_ok=True)
    write_text_atomic(folder / QRELS, qrels_text(labels, questions))
    write_text_atomic(folder / CHUNK_QRELS, chunk_qrels_text(labels, questions))
    write_text_atomic(folder / PROVENANCE, Redactor(secrets)(provenance_text(labels, judges)))  # judge names
    write_json_atomic(folder / POOL_JSON, summary, secrets)
    if accepted is not None:
        write_json_atomic(folder / REVIEWED, reviewed_questions(questions, accepted), secrets)
