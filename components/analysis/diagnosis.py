"""Why a question missed: one primary failure type (and at most one secondary), from lexical rules
over the corpus.

A :class:`Diagnoser` is built once from the corpus chunks. Its terms are the project's lexical
rule (:mod:`components.judges.lexical_judge`: stemmed words, numbers and identifiers kept whole,
matched against :func:`chunk_terms` of a chunk's ``index_text``, i.e. title, heading path and
text) without the stopwords of :mod:`components.analysis.stopwords` ("my", "has", "can", "what",
"want"...): a question's or an answer's **terms** are its content words. IDF is
:meth:`TermStats.idf`, ``ln((N + 1) / (df + 1)) + 1`` over the N chunks; a **weighted share** of
terms is the IDF-weighted share (a rare term counts more than a common one), as the offline judge
weighs them.

**Which questions** (:meth:`Diagnoser.diagnose`): every question that is not a rank-1 hit that
passes (``total_score`` ≥ ``PASS_MARK`` = 7.0). "The needle document" is, with several needles,
the one that scores best for the rule; "above the needle" means ranked before the first needle
chunk (every retrieved chunk when no needle chunk was retrieved).

**The types** (:data:`TAGS`). The rules below are tried in this order; the **primary** type is the
first that holds, the **secondary** the next *other* type that holds (if any): one cause, and at
most one more. Three types have a specific form tried early and a broader one tried later.

1. ``needle_absent`` — the answer is absent from the needle document: it holds less than
   :data:`ANSWER_MIN_SHARE` (0.5, weighted) of the expected answer's terms, so the needle cannot be
   among the top documents for it (the answer was removed, moved, or is newer than the docs). Not
   applied without an expected answer.
2. ``chunking_split`` (a cut sentence) — a chunk boundary of the needle document cuts a sentence
   (the chunk does not end on ``.`` ``!`` ``?`` ``:`` ``;`` and the next one starts in lower case:
   the chunker's own boundaries fall between paragraphs and at headings) inside the answer's
   passage: the last :data:`SPLIT_WINDOW_WORDS` (40) words before the boundary and the first 40
   after it hold at least :data:`SPLIT_MIN_PAIR` (0.4, weighted) of the answer's terms (of the
   question's without one).
3. ``grade_without_needle`` — a chunk of another document, ranked above the needle, holds the
   answer as well as the needle does: its weighted share of the answer's terms is at least
   :data:`SECOND_NEEDLE_MIN_SHARE` (0.6) and at least the needle's best chunk's. That document is a
   candidate second needle (the judge can grade well without the needle). Without an expected
   answer: no needle chunk retrieved, yet a grade of at least :data:`HIGH_GRADE_MIN` (7).
4. ``specificity_gap`` — the question is generic: at most :data:`SPECIFICITY_MAX_TERMS` (3) terms,
   or their mean IDF below :data:`SPECIFICITY_MAX_MEAN_IDF` = 1 + ln 5 ≈ 2.6 (on average as common as
   a term found in one chunk out of 5). Applies at rank 1 too (a rank-1 question is diagnosed only
   when its grade fails).
5. ``chunking_split`` (the answer in another chunk) — a needle chunk was retrieved, but not the
   needle's chunk holding most of the answer, which holds at least :data:`WRONG_CHUNK_MIN_GAIN` (0.5,
   weighted) more of the answer's terms than every needle chunk retrieved: the chunks cut the
   document where the question and its answer part.
6. ``vocabulary_mismatch`` (words the corpus never uses) — needle not at rank 1, a question word
   occurs nowhere in the corpus (an identifier counts as used when one of its parts is), and the
   needle document holds less than :data:`VOCABULARY_ABSENT_MAX_SHARE` (0.75) of the question terms.
7. ``distractor`` (strong) — needle not at rank 1, and a chunk of another document ranked above it
   shares at least :data:`DISTRACTOR_STRONG_MARGIN` (2) more question terms than the needle's best
   chunk: the first such document is named.
8. ``vocabulary_mismatch`` — needle not at rank 1, and less than :data:`VOCABULARY_MIN_SHARE` (0.5)
   of the question terms occur in the needle document.
9. ``distractor`` — needle not at rank 1, and a chunk of another document ranked above it shares at
   least as many question terms as the needle's best chunk (at least one).
10. ``needle_hit_low_grade`` — a needle chunk is in the top k (the judge saw it) and the grade is at
    most :data:`LOW_GRADE_MAX` (4), or the needle is at rank 1 (a rank-1 question is diagnosed only
    when its grade is below the pass mark): check the expected answer and the judge.

When no rule holds and the needle is not at rank 1, the top-ranked other document is the
``distractor`` (``details.distractor.weak`` true: it outranked the needle without sharing as many
question terms). So every question whose needle is not at rank 1 has one or two types, and so has
every rank-1 question with a grade; ``tags`` lists them (primary first), ``primary`` and
``secondary`` (or None) repeat them. The summary and ``diagnosis_counts`` count the primary types.

How the thresholds were set: on the planted failures of ``tests/fixtures/planted_failures.json``
(each type planted five times or more by edits of the built-in corpus and questions; the primary
type is the planted one on 29 of 30) and the misses of the built-in questions (each gets one or
two types): docs/measured.md.

**Needle best chunk** (:meth:`Diagnoser.needle_best_chunk`): among the needle documents' chunks,
the one holding the largest share of the terms of the expected answer (of the question when there
is no expected answer); ``overlap`` is that share (0-1, terms found / terms). Ties go to the
earlier chunk. None when the text has no terms or no needle chunk holds any of them.

**Fixes** (:data:`FIXES`): each type names one short remedy; a diagnosis carries the fixes of its
types (``fixes``: type → sentence).

``details`` holds the figures compared (null where a rule was not reached or did not apply):
``question_terms``, ``absent_terms``, ``needle_share``, ``mean_idf``, ``answer_terms``,
``answer_share_in_needle``, ``second_needle`` {doc_id, chunk_id, rank, answer_share,
needle_answer_share} (the best other chunk above the needle, whether or not it holds the answer),
``split`` {chunk_id, next_chunk_id, single_share, pair_share} (the boundary cutting a sentence
whose window holds most of the answer: the share on one side and on both; or, for the answer in
another chunk, that chunk with ``next_chunk_id`` null, the retrieved needle chunks' share and its),
``distractor`` {doc_id, chunk_id, rank, shared_terms, needle_shared_terms, weak}, ``needle_best_chunk``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from components.analysis.stopwords import STOPWORDS
from components.core import Chunk
from components.judges.lexical_judge import TermStats, chunk_terms, key_term_words, token_terms
from utils.metrics import PASS_MARK

ANSWER_MIN_SHARE = 0.5
SECOND_NEEDLE_MIN_SHARE = 0.6
SECOND_NEEDLE_SLACK = 0.0
SPLIT_WINDOW_WORDS = 40
SPLIT_MIN_PAIR = 0.4
WRONG_CHUNK_MIN_GAIN = 0.5
VOCABULARY_MIN_SHARE = 0.5
VOCABULARY_ABSENT_MAX_SHARE = 0.75
SPECIFICITY_MAX_TERMS = 3
DISTRACTOR_STRONG_MARGIN = 2
SPECIFICITY_MAX_MEAN_IDF = 1 + math.log(5)
LOW_GRADE_MAX = 4
HIGH_GRADE_MIN = 7
TAGS = ("needle_absent", "chunking_split", "grade_without_needle", "specificity_gap", "vocabulary_mismatch",
        "distractor", "needle_hit_low_grade")
_LIST_MAX = 5  # terms named in a sentence
# What to try for each type: one short, specific remedy (the user's failure buckets name theirs).
FIXES = {
    "needle_absent": "add the answer to the documentation, or correct the needle or the expected answer",
    "chunking_split": "larger chunks or overlap, so the passage holding the answer stays in one chunk",
    "grade_without_needle": "add the top-ranked document as a second needle if it answers the question",
    "specificity_gap": "expand or rewrite the query (query expansion) before retrieving",
    "vocabulary_mismatch": "add dense or hybrid retrieval, or the users' words (synonyms) to the document",
    "distractor": "add a disambiguating heading or metadata filter, or rerank the top results",
    "needle_hit_low_grade": "check the expected answer against the needle chunk, then calibrate the judge on a sample",
    # the types of results written before the classifier had one primary type (their reports still name a fix)
    "wrong_chunk": "smaller chunks or overlap, so the passage holding the answer is retrieved whole",
    "answer_not_in_corpus": "add the answer to the documentation, or correct the expected answer",
    "needle_miss_high_grade": "add the top-ranked document as a second needle if it answers the question",
}


def content_terms(text: str | None) -> list[str]:
    """The distinct terms of ``text`` (:func:`key_term_words`) without :data:`STOPWORDS`, in order."""
    return [term for term, word in key_term_words(text or "").items() if word not in STOPWORDS]


@dataclass(frozen=True)
class NeedleBestChunk:
    chunk_id: str
    heading_path: tuple[str, ...]
    overlap: float  # share of the terms found in the chunk, 0-1

    def to_json(self) -> dict:
        return {"chunk_id": self.chunk_id, "heading_path": list(self.heading_path), "overlap": round(self.overlap, 3)}


@dataclass(frozen=True)
class Diagnosis:
    tags: list[str]  # one or two types, the primary first
    sentence: str
    details: dict = field(default_factory=dict)  # the figures the rules compared (strict-JSON values)

    @property
    def primary(self) -> str | None:
        return self.tags[0] if self.tags else None

    @property
    def secondary(self) -> str | None:
        return self.tags[1] if len(self.tags) > 1 else None

    @property
    def fixes(self) -> dict[str, str]:
        """``{type: fix}`` of the diagnosis's types (:data:`FIXES`)."""
        return {tag: FIXES[tag] for tag in self.tags if tag in FIXES}

    def to_json(self) -> dict:
        return {"tags": list(self.tags), "primary": self.primary, "secondary": self.secondary,
                "sentence": self.sentence, "fixes": self.fixes, "details": self.details}


@dataclass
class Case:
    """One diagnosed question and what the rules read of it."""

    q_terms: list[str]
    a_terms: list[str]
    q_parts: dict[str, tuple[str, ...]]  # a question term -> the terms of its token (an identifier's parts too)
    needles: list[str]
    retrieved: Sequence[Chunk]
    rank: int | None
    grade: int | None
    details: dict

    @property
    def above(self) -> Sequence[Chunk]:
        """The retrieved chunks ranked above the needle (all of them when it was not retrieved)."""
        return self.retrieved if self.rank is None else self.retrieved[: self.rank - 1]


def _cut_mid_sentence(before: str, after: str) -> bool:
    """Whether a chunk boundary falls inside a sentence: the first chunk does not end on a sentence's
    punctuation (``.``, ``!``, ``?``, ``:``, ``;``) and the next one starts in lower case (a boundary
    the chunker makes between paragraphs or at a heading starts a sentence)."""
    end, start = before.rstrip()[-1:], after.lstrip()[:1]
    return bool(end) and end not in ".!?:;" and start.islower()


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

    # ------------------------------------------------------------------ terms and shares

    def _chunk_terms(self, chunk: Chunk) -> set[str]:
        terms = self._terms.get(chunk.chunk_id)
        if terms is None:
            from components.judges.lexical_judge import chunk_terms

            terms = self._terms[chunk.chunk_id] = chunk_terms(chunk.index_text)
        return terms

    def _weighted(self, terms: Sequence[str], present: set[str]) -> float:
        """The IDF-weighted share of ``terms`` in ``present`` (0.0 for no terms)."""
        total = sum(self.stats.idf(t) for t in terms)
        return sum(self.stats.idf(t) for t in terms if t in present) / total if total else 0.0

    def _shared(self, terms: Sequence[str], chunk: Chunk) -> int:
        present = self._chunk_terms(chunk)
        return sum(1 for t in terms if t in present)

    def _needle_chunks(self, needle_doc_ids: Iterable[str]) -> list[Chunk]:
        return [c for d in dict.fromkeys(needle_doc_ids) for c in self._by_doc.get(d, ())]

    def _doc_terms(self, doc_id: str) -> set[str]:
        present: set[str] = set()
        for chunk in self._by_doc.get(doc_id, ()):
            present |= self._chunk_terms(chunk)
        return present

    def _best_doc(self, terms: Sequence[str], needles: Iterable[str],
                  share: Callable[[Sequence[str], set[str]], float]) -> tuple[float, list[str]]:
        """The best needle document's ``share`` of ``terms`` and the terms it lacks."""
        best: tuple[float, list[str]] = (0.0, list(terms))
        for doc_id in dict.fromkeys(needles):
            present = self._doc_terms(doc_id)
            found = share(terms, present)
            if found > best[0]:
                best = (found, [t for t in terms if t not in present])
        return best

    def _best_chunk(self, terms: Sequence[str], chunks: Iterable[Chunk]) -> tuple[Chunk | None, float]:
        best, best_share = None, 0.0
        for chunk in chunks:
            share = _share(terms, self._chunk_terms(chunk))
            if share > best_share:
                best, best_share = chunk, share
        return best, best_share

    def needle_best_chunk(self, text: str | None, needle_doc_ids: Iterable[str]) -> NeedleBestChunk | None:
        """The needle documents' chunk holding the largest share of ``text``'s terms (pass the
        expected answer, or the question when there is none); None when ``text`` has no terms or
        no needle chunk holds any."""
        terms = content_terms(text)
        chunk, share = self._best_chunk(terms, self._needle_chunks(needle_doc_ids))
        return None if chunk is None else NeedleBestChunk(chunk.chunk_id, tuple(chunk.heading_path), share)

    # ------------------------------------------------------------------ the rules (module docstring)

    def _needle_absent(self, case: Case) -> str | None:
        if not case.a_terms:
            return None
        share, missing = self._best_doc(case.a_terms, case.needles, self._weighted)
        case.details["answer_share_in_needle"] = round(share, 3)
        if share < ANSWER_MIN_SHARE:
            return (f"the needle document holds {share:.0%} of the expected answer's terms (missing: "
                    f"{_listing(missing)})")
        return None

    def _grade_without_needle(self, case: Case) -> str | None:
        if not case.a_terms:
            if case.rank is None and case.grade is not None and case.grade >= HIGH_GRADE_MIN:
                top = case.retrieved[0].doc_id if case.retrieved else "-"
                return f"the judge graded {case.grade} without the needle (candidate second needle: {top})"
            return None
        needle_share = max((self._weighted(case.a_terms, self._chunk_terms(c))
                            for c in self._needle_chunks(case.needles)), default=0.0)
        others = [(self._weighted(case.a_terms, self._chunk_terms(c)), -position, c)
                  for position, c in enumerate(case.above, start=1) if c.doc_id not in case.needles]
        if not others:
            return None
        share, position, chunk = max(others, key=lambda o: o[:2])
        case.details["second_needle"] = {"doc_id": chunk.doc_id, "chunk_id": chunk.chunk_id, "rank": -position,
                                         "answer_share": round(share, 3), "needle_answer_share": round(needle_share, 3)}
        if share < max(SECOND_NEEDLE_MIN_SHARE, needle_share - SECOND_NEEDLE_SLACK - 1e-9):
            return None
        return (f"{chunk.doc_id} (rank {-position}) holds {share:.0%} of the answer's terms, as much as the needle's "
                f"best chunk ({needle_share:.0%}): a candidate second needle")

    def _boundary_split(self, case: Case) -> str | None:
        """A chunk boundary cutting a sentence of the answer's passage (rule 2 of the module docstring)."""
        terms = case.a_terms or case.q_terms
        best: tuple[float, float, Chunk, Chunk] | None = None
        for doc_id in dict.fromkeys(case.needles):
            for before, after in itertools.pairwise(self._by_doc.get(doc_id, [])):
                if not _cut_mid_sentence(before.text, after.text):
                    continue
                tail, head = before.text.split()[-SPLIT_WINDOW_WORDS:], after.text.split()[:SPLIT_WINDOW_WORDS]
                single = max(self._weighted(terms, chunk_terms(" ".join(tail))),
                             self._weighted(terms, chunk_terms(" ".join(head))))
                pair = self._weighted(terms, chunk_terms(" ".join(tail + head)))
                if best is None or pair > best[1]:
                    best = (single, pair, before, after)
        if best is None:
            return None
        single, pair, before, after = best
        case.details["split"] = {"chunk_id": before.chunk_id, "next_chunk_id": after.chunk_id,
                                 "single_share": round(single, 3), "pair_share": round(pair, 3)}
        if pair < SPLIT_MIN_PAIR:
            return None
        return (f"a chunk boundary cuts a sentence of the answer's passage: {before.chunk_id} | {after.chunk_id} hold "
                f"{pair:.0%} of its terms together, {single:.0%} apart")

    def _answer_in_another_chunk(self, case: Case) -> str | None:
        """The needle was retrieved, but not its chunk holding the answer (rule 2 of the module docstring)."""
        terms = case.a_terms or case.q_terms
        retrieved = [c for c in case.retrieved if c.doc_id in case.needles]
        if case.rank is None or not terms or not retrieved:
            return None
        best, best_share = max(((c, self._weighted(terms, self._chunk_terms(c)))
                                for c in self._needle_chunks(case.needles)), key=lambda p: p[1])
        got = max(self._weighted(terms, self._chunk_terms(c)) for c in retrieved)
        if best.chunk_id in {c.chunk_id for c in retrieved} or best_share - got < WRONG_CHUNK_MIN_GAIN - 1e-9:
            return None
        case.details["split"] = {"chunk_id": best.chunk_id, "next_chunk_id": None, "single_share": round(got, 3),
                                 "pair_share": round(best_share, 3)}
        return (f"the answer is in {best.chunk_id} ({best_share:.0%} of its terms), which was not retrieved; the "
                f"needle's chunks retrieved hold {got:.0%}")

    def _vocabulary_mismatch(self, case: Case, absent_only: bool = False) -> str | None:
        """The question's words are not the needle's: with ``absent_only``, a question word occurs
        nowhere in the corpus (and the needle document holds less than
        :data:`VOCABULARY_ABSENT_MAX_SHARE` of its terms); else less than
        :data:`VOCABULARY_MIN_SHARE` of the question terms occur in the needle document."""
        if case.rank == 1 or not case.q_terms:
            return None
        absent = [t for t in case.q_terms if not any(self.stats.df.get(p, 0) for p in case.q_parts.get(t, (t,)))]
        share, missing = self._best_doc(case.q_terms, case.needles, _share)
        case.details.update(absent_terms=absent, needle_share=round(share, 3))
        if absent_only:
            if not absent or share >= VOCABULARY_ABSENT_MAX_SHARE:
                return None
            return (f"the question's words {_listing(absent)} occur nowhere in the corpus, and {share:.0%} of its "
                    "terms in the needle document")
        if share >= VOCABULARY_MIN_SHARE:
            return None
        return (f"only {len(case.q_terms) - len(missing)} of {len(case.q_terms)} question terms occur in the needle "
                f"document (missing: {_listing(missing)})")

    def _absent_words(self, case: Case) -> str | None:
        return self._vocabulary_mismatch(case, absent_only=True)

    def _specificity_gap(self, case: Case) -> str | None:
        if not case.q_terms:
            return "the question has no content words"
        mean_idf = sum(self.stats.idf(t) for t in case.q_terms) / len(case.q_terms)
        case.details["mean_idf"] = round(mean_idf, 3)
        if len(case.q_terms) <= SPECIFICITY_MAX_TERMS:
            return f"the question is generic: {len(case.q_terms)} content words ({_listing(case.q_terms)})"
        if mean_idf < SPECIFICITY_MAX_MEAN_IDF:
            return (f"the question's terms are common in the corpus (mean IDF {mean_idf:.2f} < "
                    f"{SPECIFICITY_MAX_MEAN_IDF:.2f})")
        return None

    def _distractor(self, case: Case, margin: int = 0) -> str | None:
        """A chunk of another document above the needle sharing at least ``margin`` more question
        terms than the needle's best chunk (and at least one)."""
        if case.rank == 1 or not case.q_terms:
            return None
        needle_shared = max((self._shared(case.q_terms, c) for c in self._needle_chunks(case.needles)), default=0)
        for position, chunk in enumerate(case.above, start=1):
            shared = self._shared(case.q_terms, chunk)
            if chunk.doc_id not in case.needles and shared >= max(1, needle_shared + margin):
                case.details["distractor"] = {"doc_id": chunk.doc_id, "chunk_id": chunk.chunk_id, "rank": position,
                                              "shared_terms": shared, "needle_shared_terms": needle_shared,
                                              "weak": False}
                return (f"{chunk.doc_id} (rank {position}) shares {shared} question terms (the needle's best chunk: "
                        f"{needle_shared})")
        return None

    def _strong_distractor(self, case: Case) -> str | None:
        return self._distractor(case, DISTRACTOR_STRONG_MARGIN)

    def _low_grade(self, case: Case) -> str | None:
        if case.rank is None or case.grade is None:
            return None
        if case.grade <= LOW_GRADE_MAX or case.rank == 1:
            return f"the judge graded {case.grade} although a needle chunk was at rank {case.rank}"
        return None

    def _cascade(self) -> list[tuple[str, Callable[[Case], str | None]]]:
        """The rules in the order they are tried (module docstring)."""
        return [("needle_absent", self._needle_absent), ("chunking_split", self._boundary_split),
                ("grade_without_needle", self._grade_without_needle), ("specificity_gap", self._specificity_gap),
                ("chunking_split", self._answer_in_another_chunk),
                ("vocabulary_mismatch", self._absent_words), ("distractor", self._strong_distractor),
                ("vocabulary_mismatch", self._vocabulary_mismatch), ("distractor", self._distractor),
                ("needle_hit_low_grade", self._low_grade)]

    def _fallback(self, case: Case) -> tuple[str, str] | None:
        """The type of a diagnosed question no rule explains: the document that outranked the needle
        (a weak distractor), or the judge's low grade of a rank-1 needle."""
        if case.rank != 1:
            other = next((c for c in case.above if c.doc_id not in case.needles), None)
            if other is not None:
                position = list(case.above).index(other) + 1
                case.details["distractor"] = {"doc_id": other.doc_id, "chunk_id": other.chunk_id, "rank": position,
                                              "shared_terms": self._shared(case.q_terms, other),
                                              "needle_shared_terms": None, "weak": True}
                return "distractor", f"{other.doc_id} (rank {position}) outranked the needle"
        return None

    def diagnose(self, question: str, expected_answer: str | None, needle_doc_ids: Sequence[str],
                 retrieved: Sequence[Chunk], rank: int | None, grade: int | None,
                 total_score: float | None) -> Diagnosis | None:
        """The primary and secondary types and the sentence of the rules in the module docstring;
        None for a rank-1 hit whose ``total_score`` is at least :data:`PASS_MARK`."""
        if rank == 1 and total_score is not None and total_score >= PASS_MARK:
            return None
        case = Case(content_terms(question), content_terms(expected_answer),
                    {term: token_terms(word) for term, word in key_term_words(question).items()},
                    list(dict.fromkeys(needle_doc_ids)), retrieved, rank, grade,
                    {"question_terms": content_terms(question), "absent_terms": None, "needle_share": None,
                     "mean_idf": None, "answer_terms": content_terms(expected_answer), "answer_share_in_needle": None,
                     "second_needle": None, "split": None, "distractor": None, "needle_best_chunk": None})
        best = self.needle_best_chunk(expected_answer or question, case.needles)
        case.details["needle_best_chunk"] = best.to_json() if best else None
        found: list[tuple[str, str]] = []
        for tag, rule in self._cascade():
            if len(found) == 2 or any(tag == t for t, _ in found):
                continue
            clause = rule(case)
            if clause is not None:
                found.append((tag, clause))
        if not found and (fallback := self._fallback(case)) is not None:
            found.append(fallback)
        status = f"needle at rank {rank}" if rank is not None else f"needle not in the top {len(retrieved)}"
        status += f", grade {grade}" if grade is not None else ", not graded"
        clauses = "; ".join(clause for _, clause in found) if found else "no rule fired"
        sentence = status[0].upper() + status[1:] + ": " + clauses + "."
        return Diagnosis([tag for tag, _ in found], sentence, case.details)


def _diagnosis_of(row: object) -> object:
    return row.get("diagnosis") if isinstance(row, Mapping) else getattr(row, "diagnosis", None)


def _tags_of(diagnosis: object) -> list:
    tags = diagnosis.get("tags") if isinstance(diagnosis, Mapping) else getattr(diagnosis, "tags", None)
    return list(tags or ())


def primary_of(diagnosis: object) -> str | None:
    """The primary type of a diagnosis (:class:`Diagnosis` or its JSON): ``primary``, or — in a file
    written before diagnoses had one — the first tag; None without one."""
    primary = diagnosis.get("primary") if isinstance(diagnosis, Mapping) else getattr(diagnosis, "primary", None)
    if isinstance(primary, str) and primary:
        return primary
    tags = _tags_of(diagnosis)
    return str(tags[0]) if tags else None


def count_tags(rows: Iterable[object]) -> dict[str, int]:
    """Questions per **primary** type over result rows (mappings or objects with a ``diagnosis`` of
    :class:`Diagnosis`, its JSON, or None): each diagnosed question counts once. Every type appears
    (0 when none), in rule order, then any other type found, by name. Empty input: every type 0."""
    counts = dict.fromkeys(TAGS, 0)
    others: dict[str, int] = {}
    for row in rows:
        primary = primary_of(_diagnosis_of(row))
        if primary is None:
            continue
        if primary in counts:
            counts[primary] += 1
        else:
            others[primary] = others.get(primary, 0) + 1
    return {**counts, **dict(sorted(others.items()))}


def count_carrying(rows: Iterable[object]) -> dict[str, int]:
    """Questions per type over result rows, primary or secondary (a question with two types counts
    for both): for filtering by type. Only the types found, in rule order, then others by name."""
    counts: dict[str, int] = {}
    for row in rows:
        for tag in dict.fromkeys(str(t) for t in _tags_of(_diagnosis_of(row))):
            counts[tag] = counts.get(tag, 0) + 1
    order = {tag: i for i, tag in enumerate(TAGS)}
    return dict(sorted(counts.items(), key=lambda item: (order.get(item[0], len(order)), item[0])))
