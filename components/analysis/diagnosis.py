"""Why a question missed: tags and one sentence from lexical rules over the corpus.

A :class:`Diagnoser` is built once from the corpus chunks. Its terms are the project's one lexical
rule (``components/run/lexical_judge.py``): stemmed content words without English stopwords,
numbers and identifiers kept whole (:func:`key_terms` of a text, matched against
:func:`chunk_terms` of a chunk's ``index_text``, i.e. title, heading path and text). IDF is
:meth:`TermStats.idf`, ``ln((N + 1) / (df + 1)) + 1`` over the N chunks.

**Needle best chunk** (:meth:`Diagnoser.needle_best_chunk`): among the needle documents' chunks,
the one holding the largest share of the key terms of the expected answer (of the question when
there is no expected answer); ``overlap`` is that share (0-1, terms found / key terms). Ties go to
the earlier chunk. None when the text has no key terms or no needle chunk holds any of them.

**Rules** (:meth:`Diagnoser.diagnose`). A question is diagnosed unless it is a rank-1 hit that
passes (``total_score`` ≥ ``PASS_MARK`` = 7.0). "Question terms" are the question's key terms; "the
needle document" is, with several needles, the one that scores best for the rule.

- ``vocabulary_mismatch`` — needle not at rank 1 and fewer than :data:`VOCABULARY_MIN_SHARE` (half)
  of the question terms occur in the needle document: the question is worded differently.
- ``distractor`` — needle not at rank 1 and a chunk of another document ranked above it shares at
  least as many question terms as the needle's best chunk for the question does (at least one):
  the first such document is named.
- ``specificity_gap`` — needle not at rank 1 and the mean IDF of the question terms is below
  :data:`SPECIFICITY_MAX_MEAN_IDF` = 1 + ln 20 ≈ 4.0, i.e. the terms are on average as common as a
  term found in one chunk out of 20: the question is too vague for the corpus.
- ``wrong_chunk`` — a needle document was retrieved, but its best chunk (above: for the expected
  answer, else for the question) was not, and that chunk's overlap exceeds every retrieved needle
  chunk's by at least :data:`WRONG_CHUNK_MIN_GAIN` (0.2).
- ``answer_not_in_corpus`` — fewer than :data:`ANSWER_MIN_SHARE` (half) of the expected answer's
  key terms occur anywhere in the needle document (for example an answer newer than the docs).
  Not applied without an expected answer.
- ``needle_hit_low_grade`` — a needle chunk is in the top k (the judge saw it) but the grade is at
  most :data:`LOW_GRADE_MAX` (4).
- ``needle_miss_high_grade`` — no needle chunk in the top k, yet the grade is at least
  :data:`HIGH_GRADE_MIN` (7): another document may answer the question (a candidate second
  needle; the top-ranked document is named).

**Fixes** (:data:`FIXES`): each tag names one short remedy, and a diagnosis carries the fixes of its
tags (``fixes``: tag → sentence), so the results, the console tally and the report say what to try.

A diagnosed question where no rule fires gets ``tags == []`` and a sentence saying so. The
stopword list is bm25s's short English one: question words such as "what", "how", "does" stay
terms (they make shares larger and mean IDFs smaller; the thresholds were set with them in).
``details`` holds the figures compared: ``question_terms``, ``needle_share``, ``mean_idf``,
``distractor`` {doc_id, chunk_id, rank, shared_terms, needle_shared_terms}, ``answer_terms``,
``answer_share_in_needle``, ``needle_best_chunk`` (null where a rule did not apply).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from utils.metrics import PASS_MARK

if TYPE_CHECKING:  # the lexical judge's terms are imported where a question is diagnosed: count_tags needs none
    from components.core import Chunk
    from components.judges.lexical_judge import TermStats

VOCABULARY_MIN_SHARE = 0.5
SPECIFICITY_MAX_MEAN_IDF = 1 + math.log(20)
WRONG_CHUNK_MIN_GAIN = 0.2
ANSWER_MIN_SHARE = 0.5
LOW_GRADE_MAX = 4
HIGH_GRADE_MIN = 7
TAGS = ("vocabulary_mismatch", "distractor", "specificity_gap", "wrong_chunk", "answer_not_in_corpus",
        "needle_hit_low_grade", "needle_miss_high_grade")
_LIST_MAX = 5  # terms named in a sentence
# What to try for each tag: one short, specific remedy (the user's failure buckets name theirs).
FIXES = {
    "vocabulary_mismatch": "add dense or hybrid retrieval, or the users' words (synonyms) to the document",
    "distractor": "add a disambiguating heading or metadata filter, or rerank the top results",
    "specificity_gap": "expand or rewrite the query (query expansion) before retrieving",
    "wrong_chunk": "smaller chunks or overlap, so the passage holding the answer is retrieved whole",
    "answer_not_in_corpus": "add the answer to the documentation, or correct the expected answer",
    "needle_hit_low_grade": "check the expected answer against the needle chunk, then calibrate the judge on a sample",
    "needle_miss_high_grade": "add the top-ranked document as a second needle if it answers the question",
}


@dataclass(frozen=True)
class NeedleBestChunk:
    chunk_id: str
    heading_path: tuple[str, ...]
    overlap: float  # share of the key terms found in the chunk, 0-1

    def to_json(self) -> dict:
        return {"chunk_id": self.chunk_id, "heading_path": list(self.heading_path), "overlap": round(self.overlap, 3)}


@dataclass(frozen=True)
class Diagnosis:
    tags: list[str]
    sentence: str
    details: dict = field(default_factory=dict)  # the figures the rules compared (strict-JSON values)

    @property
    def fixes(self) -> dict[str, str]:
        """``{tag: fix}`` of the diagnosis's tags (:data:`FIXES`)."""
        return {tag: FIXES[tag] for tag in self.tags if tag in FIXES}

    def to_json(self) -> dict:
        return {"tags": list(self.tags), "sentence": self.sentence, "fixes": self.fixes, "details": self.details}


def _share(terms: Sequence[str], present: set[str]) -> float:
    """Share of ``terms`` in ``present``; 0.0 for no terms."""
    return sum(1 for t in terms if t in present) / len(terms) if terms else 0.0


def _listing(terms: Sequence[str]) -> str:
    shown = ", ".join(terms[:_LIST_MAX])
    return shown + (f" and {len(terms) - _LIST_MAX} more" if len(terms) > _LIST_MAX else "")


class Diagnoser:
    def __init__(self, chunks: Iterable[Chunk], stats: TermStats | None = None) -> None:
        """``stats``: the offline judge's table (``LexicalJudge.stats``) when there is one, to
        count the corpus once; otherwise it is built from ``chunks``."""
        from components.judges.lexical_judge import TermStats

        chunks = list(chunks)
        self.stats = stats if stats is not None else TermStats(chunks)
        self._by_doc: dict[str, list[Chunk]] = {}
        for chunk in chunks:
            self._by_doc.setdefault(chunk.doc_id, []).append(chunk)
        self._terms: dict[str, set[str]] = {}  # chunk_id -> terms, filled on demand

    def _chunk_terms(self, chunk: Chunk) -> set[str]:
        terms = self._terms.get(chunk.chunk_id)
        if terms is None:
            from components.judges.lexical_judge import chunk_terms

            terms = self._terms[chunk.chunk_id] = chunk_terms(chunk.index_text)
        return terms

    def _shared(self, terms: Sequence[str], chunk: Chunk) -> int:
        present = self._chunk_terms(chunk)
        return sum(1 for t in terms if t in present)

    def _needle_chunks(self, needle_doc_ids: Iterable[str]) -> list[Chunk]:
        return [c for d in dict.fromkeys(needle_doc_ids) for c in self._by_doc.get(d, ())]

    def _best_doc_share(self, terms: Sequence[str], needle_doc_ids: Iterable[str]) -> tuple[float, list[str]]:
        """The best needle document's share of ``terms`` and the terms it lacks."""
        best: tuple[float, list[str]] = (0.0, list(terms))
        for doc_id in dict.fromkeys(needle_doc_ids):
            present: set[str] = set()
            for chunk in self._by_doc.get(doc_id, ()):
                present |= self._chunk_terms(chunk)
            share = _share(terms, present)
            if share > best[0]:
                best = (share, [t for t in terms if t not in present])
        return best

    def _best_chunk(self, terms: Sequence[str], chunks: Iterable[Chunk]) -> tuple[Chunk | None, float]:
        best, best_share = None, 0.0
        for chunk in chunks:
            share = _share(terms, self._chunk_terms(chunk))
            if share > best_share:
                best, best_share = chunk, share
        return best, best_share

    def needle_best_chunk(self, text: str | None, needle_doc_ids: Iterable[str]) -> NeedleBestChunk | None:
        """The needle documents' chunk holding the largest share of ``text``'s key terms (pass the
        expected answer, or the question when there is none); None when ``text`` has no key
        terms or no needle chunk holds any."""
        from components.judges.lexical_judge import key_terms

        terms = key_terms(text or "")
        chunk, share = self._best_chunk(terms, self._needle_chunks(needle_doc_ids))
        return None if chunk is None else NeedleBestChunk(chunk.chunk_id, tuple(chunk.heading_path), share)

    def diagnose(self, question: str, expected_answer: str | None, needle_doc_ids: Sequence[str],
                 retrieved: Sequence[Chunk], rank: int | None, grade: int | None,
                 total_score: float | None) -> Diagnosis | None:
        """The tags and sentence of the rules in the module docstring; None for a rank-1 hit
        whose ``total_score`` is at least :data:`PASS_MARK`."""
        if rank == 1 and total_score is not None and total_score >= PASS_MARK:
            return None
        from components.judges.lexical_judge import key_terms

        needles = list(dict.fromkeys(needle_doc_ids))
        q_terms = key_terms(question)
        a_terms = key_terms(expected_answer or "")
        tags: list[str] = []
        clauses: list[str] = []
        details: dict = {"question_terms": q_terms, "needle_share": None, "mean_idf": None, "distractor": None,
                         "answer_terms": a_terms, "answer_share_in_needle": None, "needle_best_chunk": None}

        if rank != 1 and q_terms:
            share, missing = self._best_doc_share(q_terms, needles)
            details["needle_share"] = round(share, 3)
            if share < VOCABULARY_MIN_SHARE:
                tags.append("vocabulary_mismatch")
                clauses.append(f"only {len(q_terms) - len(missing)} of {len(q_terms)} question terms occur in the "
                               f"needle document (missing: {_listing(missing)})")

            needle_shared = max((self._shared(q_terms, c) for c in self._needle_chunks(needles)), default=0)
            above = retrieved if rank is None else retrieved[: rank - 1]
            for position, chunk in enumerate(above, start=1):
                shared = self._shared(q_terms, chunk)
                if chunk.doc_id not in needles and shared >= max(1, needle_shared):
                    details["distractor"] = {"doc_id": chunk.doc_id, "chunk_id": chunk.chunk_id, "rank": position,
                                             "shared_terms": shared, "needle_shared_terms": needle_shared}
                    tags.append("distractor")
                    clauses.append(f"{chunk.doc_id} (rank {position}) shares {shared} question terms "
                                   f"(the needle's best chunk: {needle_shared})")
                    break

            mean_idf = sum(self.stats.idf(t) for t in q_terms) / len(q_terms)
            details["mean_idf"] = round(mean_idf, 3)
            if mean_idf < SPECIFICITY_MAX_MEAN_IDF:
                tags.append("specificity_gap")
                clauses.append(f"the question's terms are common in the corpus (mean IDF {mean_idf:.2f} < "
                               f"{SPECIFICITY_MAX_MEAN_IDF:.2f})")

        best = self.needle_best_chunk(expected_answer or question, needles)
        details["needle_best_chunk"] = best.to_json() if best else None
        retrieved_ids = {c.chunk_id for c in retrieved}
        if rank is not None and best is not None and best.chunk_id not in retrieved_ids:
            b_terms = a_terms or q_terms
            _, retrieved_share = self._best_chunk(b_terms, [c for c in retrieved if c.doc_id in needles])
            if best.overlap - retrieved_share >= WRONG_CHUNK_MIN_GAIN - 1e-9:
                heading = " > ".join(best.heading_path) or "no heading"
                whose = "answer's" if a_terms else "question's"
                tags.append("wrong_chunk")
                clauses.append(f"the {whose} key terms are in {best.chunk_id} ({heading}; overlap "
                               f"{best.overlap:.0%} against {retrieved_share:.0%} retrieved), which was not retrieved")

        if a_terms:
            share, missing = self._best_doc_share(a_terms, needles)
            details["answer_share_in_needle"] = round(share, 3)
            if share < ANSWER_MIN_SHARE:
                tags.append("answer_not_in_corpus")
                clauses.append(f"{len(missing)} of {len(a_terms)} key terms of the expected answer occur nowhere in "
                               f"the needle document ({_listing(missing)})")

        if grade is not None and rank is not None and grade <= LOW_GRADE_MAX:
            tags.append("needle_hit_low_grade")
            clauses.append(f"the judge graded {grade} although a needle chunk was in the top {len(retrieved)}")
        if grade is not None and rank is None and grade >= HIGH_GRADE_MIN:
            top = retrieved[0].doc_id if retrieved else "-"
            tags.append("needle_miss_high_grade")
            clauses.append(f"the judge graded {grade} without the needle: another document may answer it "
                           f"(candidate second needle: {top})")

        status = f"needle at rank {rank}" if rank is not None else f"needle not in the top {len(retrieved)}"
        status += f", grade {grade}" if grade is not None else ", not graded"
        sentence = status[0].upper() + status[1:] + ": " + ("; ".join(clauses) if clauses else "no rule fired") + "."
        return Diagnosis(tags, sentence, details)


def count_tags(rows: Iterable[object]) -> dict[str, int]:
    """Questions per diagnosis tag over result rows (mappings or objects with a ``diagnosis`` of
    :class:`Diagnosis`, its JSON, or None). Every rule's tag appears (0 when none), in rule order,
    then any other tag found, by name. Empty input: every tag 0."""
    counts = dict.fromkeys(TAGS, 0)
    others: dict[str, int] = {}
    for row in rows:
        diagnosis = row.get("diagnosis") if isinstance(row, Mapping) else getattr(row, "diagnosis", None)
        tags = diagnosis.get("tags") if isinstance(diagnosis, Mapping) else getattr(diagnosis, "tags", None)
        for tag in tags or ():
            if tag in counts:
                counts[tag] += 1
            else:
                others[tag] = others.get(tag, 0) + 1
    return {**counts, **dict(sorted(others.items()))}
