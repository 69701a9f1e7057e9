"""The offline judge: a deterministic lexical proxy for the LLM judge (no API key needed).

Key terms of the expected answer are its stemmed content words (English stopwords removed),
numbers and identifiers (``v1.27``, ``kube-node-lease``, ``__init__``; kept whole, lower-cased).
Each term weighs its IDF over the corpus chunks, ``ln((N + 1) / (df + 1)) + 1``. The share of
that weight found anywhere in the retrieved chunks maps onto the 1-10 scoring guide as
``grade = min(10, 1 + floor(10 × share))`` (share 0.9 or more → 10, under 0.1 → 1).

It grades word overlap, not meaning: a proxy to compare pipelines offline, not a Sonnet grade.
A question without an expected answer is not graded (``grade=None`` with the reason).

Per-chunk relevance (:meth:`LexicalJudge.relevance`, on the 0-3 relevance scale) uses the same key
terms and IDF, chunk by chunk: a chunk's ``share`` is the IDF-weighted share of the expected
answer's key terms found in that chunk alone, and the score is the band of the 1-10 guide that
share alone would be graded in: share < 0.1 (grade 1, irrelevant) → **0**; 0.1 ≤ share < 0.3
(grades 2-3, poor/tangential) → **1**; 0.3 ≤ share < 0.6 (grades 4-6, partial) → **2**;
share ≥ 0.6 (grades 7-10) → **3**. Without an expected answer the question's key terms stand in
(a topical signal only: retrieved chunks share the question's words by construction).

The tokenisation (:func:`key_terms`, :func:`token_terms`, :func:`chunk_terms`) and the IDF table
(:class:`TermStats`) are the project's one lexical rule: the diagnosis rules
(``components/analysis/diagnosis.py``) use them too.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

import Stemmer
from loguru import logger

from components.core import Chunk
from components.judges.chunk_relevance import RelevanceResult
from components.judges.retrieval_grader import GradeResult

_TOKEN = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.\-/]*[A-Za-z0-9_])?")
_STEMMER = Stemmer.Stemmer("english")


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    """bm25s's English stopwords, imported on first use (the commands that only read results, report
    and compare, never need bm25s), and without scipy (utils/bm25s_loader.py)."""
    from utils.bm25s_loader import load_bm25s

    return frozenset(load_bm25s().stopwords.STOPWORDS_EN)


@lru_cache(maxsize=200_000)
def token_terms(token: str) -> tuple[str, ...]:
    """A token's terms: itself (stemmed when it is a word) plus, for identifiers, its parts
    ("object.__enter__" also offers "__enter__"; "spec.renewTime" also offers "renewtim")."""
    low = token.lower()
    if low.isalpha():
        return (_STEMMER.stemWord(low),) if low not in _stopwords() and len(low) > 1 else ()
    terms = [low]
    for part in re.split(r"[.\-/]", low):
        if part.isalpha():
            if part not in _stopwords():
                terms.append(_STEMMER.stemWord(part))
        elif part:
            terms.append(part)
    return tuple(terms)


def key_term_words(text: str) -> dict[str, str]:
    """Each distinct key term of ``text`` (:func:`key_terms`, in order of first appearance) → the
    word it was first written as, lower-cased ("concurrently" for the term "concurr")."""
    found: dict[str, str] = {}
    for token in _TOKEN.findall(text):
        terms = token_terms(token)
        if terms and terms[0] not in found:
            found[terms[0]] = token.lower()
    return found


def key_terms(text: str) -> list[str]:
    """The distinct key terms of ``text``, in order of first appearance: each token's own term
    (stemmed word, or whole identifier/number), without the identifier parts chunks also offer."""
    return list(key_term_words(text))


# Lower bounds of relevance 1, 2, 3 on a chunk's key-term share (see the module docstring).
RELEVANCE_CUTS = (0.1, 0.3, 0.6)


def term_counts(text: str) -> Counter[str]:
    """How many times each term occurs in ``text`` (every token's terms, identifier parts included)."""
    return Counter(term for token in _TOKEN.findall(text) for term in token_terms(token))


def chunk_terms(text: str) -> set[str]:
    """Every term a text offers to a match: each token's terms, identifier parts included."""
    return {term for token in set(_TOKEN.findall(text)) for term in token_terms(token)}


class TermStats:
    """Document frequencies of terms over the corpus chunks (each chunk's ``index_text``)."""

    def __init__(self, chunks: Iterable[Chunk]) -> None:
        df: Counter[str] = Counter()
        n = 0
        for chunk in chunks:
            df.update(chunk_terms(chunk.index_text))
            n += 1
        self.df, self.n = df, n

    def idf(self, term: str) -> float:
        """``ln((N + 1) / (df + 1)) + 1``: N chunks, df of them hold the term."""
        return math.log((self.n + 1) / (self.df.get(term, 0) + 1)) + 1


class LexicalJudge:
    model = "lexical-idf-v1"

    def __init__(self, chunks: Iterable[Chunk]) -> None:
        self.stats = TermStats(chunks)

    def idf(self, term: str) -> float:
        return self.stats.idf(term)

    def grade(self, question: str, expected_answer: str | None, chunks: Sequence[Chunk]) -> GradeResult:
        start = time.perf_counter()
        logger.debug("[lexical-judge] Grading question: {}", question)
        if not expected_answer:
            return GradeResult(None, None, 0.0, "no_expected_answer: the offline judge needs an expected answer",
                               None, "reference_free")
        terms = key_terms(expected_answer)
        if not terms:
            return GradeResult(None, None, 0.0, "no_key_terms: the expected answer has no content words", None)
        present: set[str] = set()
        for chunk in chunks:
            present |= chunk_terms(chunk.index_text)
        found = [t for t in terms if t in present]
        missing = [t for t in terms if t not in present]
        total = sum(self.idf(t) for t in terms)
        share = sum(self.idf(t) for t in found) / total
        grade = min(10, 1 + math.floor(10 * share + 1e-9))
        reasoning = (f"lexical proxy: {len(found)} of {len(terms)} key terms found (IDF-weighted {share:.0%}); "
                     f"found: {', '.join(found) or '-'}; missing: {', '.join(missing) or '-'}")
        elapsed = (time.perf_counter() - start) * 1000
        logger.debug("[lexical-judge] SUCCESS in {:.3f}s: grade={}", elapsed / 1000, grade)
        return GradeResult(grade, reasoning, elapsed, None, None)

    def relevance(self, question: str, expected_answer: str | None, chunks: Sequence[Chunk]) -> RelevanceResult:
        """Each chunk's 0-3 relevance by the lexical rule of the module docstring."""
        terms = key_terms(expected_answer or question)
        if not terms:
            source = "expected answer" if expected_answer else "question"
            return RelevanceResult(None, f"no_key_terms: the {source} has no content words", None, None)
        weights = {t: self.idf(t) for t in terms}
        total = sum(weights.values())
        scores = []
        for chunk in chunks:
            present = chunk_terms(chunk.index_text)
            share = sum(w for t, w in weights.items() if t in present) / total
            scores.append(sum(1 for cut in RELEVANCE_CUTS if share + 1e-9 >= cut))
        return RelevanceResult(scores, None, None, None)
