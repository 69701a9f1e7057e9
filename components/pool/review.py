"""The review of a pool, with an asymmetric rule (LLM judges err toward "relevant": their negatives
can mostly be trusted, their positives need agreement):

* **false-negative candidates**: a document that is not a needle of the question, one of whose
  chunks **every** judge labels 2 or 3: another document that may answer the question;
* **gold-error candidates**: a needle every judge labels 0 in every chunk the pool holds of it, read
  blind (document ids hidden, order shuffled): a needle that may not hold the answer. A needle that
  no run retrieved within the depth is not in the pool and cannot be reviewed.

Each candidate carries the question, the document, each judge's vote (its best chunk's label) and,
per chunk, the votes and the text the judges read. The review is the user's: every such document is
listed, however many a question has.

A judge that labels (nearly) everything relevant makes the false-negative list say little: when at
least :data:`LENIENT_SHARE` of a judge's labels (over :data:`LENIENT_MIN` or more) are 2 or 3,
:func:`lenient_judges` names it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from components.pool.labels import PairLabel
from utils.console import escape_control

RELEVANT = 2  # a label of at least 2 is relevant (ir_measures' rel=2)
LENIENT_SHARE = 0.95
LENIENT_MIN = 5


@dataclass(frozen=True)
class Candidate:
    question_id: str
    question: str
    doc_id: str
    votes: dict[str, int]  # judge → the document's label by that judge (its best chunk's)
    chunks: list[dict]  # {chunk_id, votes, text}

    def to_json(self) -> dict:
        return {"question_id": self.question_id, "doc_id": self.doc_id, "question": self.question,
                "votes": self.votes, "chunks": self.chunks}


def _by_document(labels: Sequence[PairLabel]) -> dict[tuple[str, str], list[PairLabel]]:
    out: dict[tuple[str, str], list[PairLabel]] = {}
    for x in labels:
        out.setdefault((x.pair.question.id, x.pair.item.doc_id), []).append(x)
    return out


def _candidate(chunks: list[PairLabel]) -> Candidate:
    first = chunks[0].pair
    votes: dict[str, int] = {}
    for x in chunks:
        for judge, vote in x.votes.items():
            votes[judge] = max(votes.get(judge, 0), vote.label)
    shown = [{"chunk_id": x.pair.item.chunk_id, "votes": {j: v.label for j, v in x.votes.items()},
              "text": x.pair.item.index_text} for x in chunks]
    return Candidate(first.question.id, first.question.question, first.item.doc_id, votes, shown)


def false_negatives(labels: Sequence[PairLabel]) -> list[Candidate]:
    """Non-needle documents with a chunk every judge labels >= 2 (only those chunks shown)."""
    out = []
    for (_, doc), chunks in _by_document(labels).items():
        if doc in chunks[0].pair.question.needle_doc_ids:
            continue
        agreed = [x for x in chunks if x.complete and x.votes and min(v.label for v in x.votes.values()) >= RELEVANT]
        if agreed:
            out.append(_candidate(agreed))
    return out


def gold_errors(labels: Sequence[PairLabel]) -> list[Candidate]:
    """Needles whose every pooled chunk every judge labels 0."""
    out = []
    for (_, doc), chunks in _by_document(labels).items():
        if doc not in chunks[0].pair.question.needle_doc_ids:
            continue
        if all(x.complete and x.votes and max(v.label for v in x.votes.values()) == 0 for x in chunks):
            out.append(_candidate(chunks))
    return out


def lenient_judges(labels: Sequence[PairLabel]) -> dict[str, tuple[int, int]]:
    """Judge → (labels >= 2, labels) for each judge that labels (nearly) everything relevant."""
    seen: dict[str, list[int]] = {}
    for x in labels:
        for judge, vote in x.votes.items():
            seen.setdefault(judge, []).append(vote.label)
    out = {}
    for judge, given in seen.items():
        relevant = sum(1 for g in given if g >= RELEVANT)
        if len(given) >= LENIENT_MIN and relevant >= LENIENT_SHARE * len(given):
            out[judge] = (relevant, len(given))
    return out


def needles_not_pooled(labels: Sequence[PairLabel], questions: Sequence) -> int:
    """How many (question, needle) no run retrieved within the depth: not reviewed."""
    pooled = {(x.pair.question.id, x.pair.item.doc_id) for x in labels}
    return sum(1 for q in questions for d in q.needle_doc_ids if (q.id, d) not in pooled)


def review_table(summary: dict) -> str:
    """The review as the console shows it: each list, each candidate with its votes."""
    lines = []
    for kind, title in (("false_negative_candidates", "False-negative candidates (not a needle, every judge >= 2)"),
                        ("gold_error_candidates", "Gold-error candidates (a needle every judge labels 0, read blind)")):
        items = summary.get(kind) or []
        lines.append(f"{title}: {len(items)}")
        lines += [escape_control(f"  {c['question_id']}  {c['doc_id']}  votes "
                                 + ", ".join(f"{j} {v}" for j, v in c["votes"].items())) for c in items]
    return "\n".join(lines) + "\n"
