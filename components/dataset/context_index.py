"""The contexts of a question that validation and dataset export need, from one BM25 index.

One BM25 retriever, the registered ``baseline`` strategy's (:mod:`components.core.strategies`),
indexes every chunk of the corpus (its tokenizer: English stopwords, Snowball stems; IDF over the
whole corpus); its ``scores(query)`` gives every chunk's score. From it:

* **gold** (:meth:`ContextIndex.gold`) — the chunks of the question's needle document(s), ranked
  by their BM25 score for the question (ties, e.g. no query term in the document: document
  order). Several needle documents are pooled into one ranking.
* **answer-first positives** (:meth:`ContextIndex.answer_first`) — the needle chunks ordered by how
  much of the expected answer they hold, by the lexical judge's per-chunk rule
  (:meth:`components.judges.lexical_judge.LexicalJudge.relevance`: the IDF-weighted share of the
  answer's key terms in the chunk, banded 0-3; band 3, a share of 60% or more, *holds the answer*),
  then by BM25 for the question within a band. Without an expected answer: BM25 only, as gold.
* **hard negatives** (:meth:`ContextIndex.hard_negatives`) — the best-scoring chunks of all other
  documents; a chunk scoring 0 (no query term) is not a hard negative.
* **random others** (:meth:`ContextIndex.random_others`) — chunks of other documents drawn
  uniformly without replacement with ``random.Random(f"{seed}:{question_id}")``: the same seed
  draws the same chunks for a question whatever else is in the questions file.

A chunk whose text is empty (an empty document yields one title-only chunk) is never a context.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from components.core import Chunk, ScoredChunk, resolve_strategy

BM25_STRATEGY = "baseline"  # the registered strategy whose retriever is BM25 (with scores(query))

HOLDS_ANSWER = 3  # the lexical relevance band of a chunk that holds the expected answer


def has_text(chunk: Chunk) -> bool:
    return bool(chunk.text.strip())


@dataclass(frozen=True)
class Positive:
    """A needle chunk as a positive: its BM25 score for the question and its lexical relevance to
    the expected answer (0-3; None without an expected answer, or one without key terms)."""

    scored: ScoredChunk
    answer_relevance: int | None

    @property
    def holds_answer(self) -> bool | None:
        return None if self.answer_relevance is None else self.answer_relevance >= HOLDS_ANSWER


class ContextIndex:
    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.chunks = list(chunks)
        self._bm25 = resolve_strategy(BM25_STRATEGY).factory()
        self._bm25.index(self.chunks)
        self._doc_ids = {c.doc_id for c in self.chunks}
        self._by_doc: dict[str, list[int]] = {}
        self._lexical = None  # the lexical judge, built on first use (lexical)
        for i, c in enumerate(self.chunks):
            if has_text(c):
                self._by_doc.setdefault(c.doc_id, []).append(i)

    @property
    def lexical(self):
        """The lexical judge over the corpus chunks (its IDF table: ``.stats``), built on first use."""
        if self._lexical is None:
            from components.judges.lexical_judge import LexicalJudge

            self._lexical = LexicalJudge(self.chunks)
        return self._lexical

    def _positions(self, doc_ids: Iterable[str]) -> list[int]:
        return [i for doc in dict.fromkeys(doc_ids) for i in self._by_doc.get(doc, [])]

    def chunks_of(self, doc_ids: Iterable[str]) -> list[Chunk]:
        """The chunks with text of the documents ``doc_ids``, in document order."""
        return [self.chunks[i] for i in self._positions(doc_ids)]

    def has_document(self, doc_id: str) -> bool:
        return doc_id in self._doc_ids

    def is_empty(self, doc_id: str) -> bool:
        """True when the document has no chunk with text (also when it is not in the corpus)."""
        return doc_id not in self._by_doc

    def gold(self, question: str, needle_doc_ids: Iterable[str], k: int) -> list[ScoredChunk]:
        """The ``k`` best chunks of the needle documents for ``question`` (fewer if they have fewer)."""
        positions = self._positions(needle_doc_ids)
        scores = self._bm25.scores(question)
        ranked = sorted(positions, key=lambda i: (-float(scores[i]), i))
        return [ScoredChunk(self.chunks[i], float(scores[i])) for i in ranked[:k]]

    def answer_first(self, question: str, expected_answer: str | None, needle_doc_ids: Iterable[str],
                     k: int) -> list[Positive]:
        """The ``k`` needle chunks that hold most of ``expected_answer`` (the relevance band of the
        module docstring), BM25 for ``question`` ordering each band; best first."""
        positions = self._positions(needle_doc_ids)
        scores = self._bm25.scores(question)
        bands: list[int] | None = None
        if expected_answer and positions:
            bands = self.lexical.relevance(question, expected_answer, [self.chunks[i] for i in positions]).scores
        band = dict(zip(positions, bands, strict=True)) if bands is not None else {}
        ranked = sorted(positions, key=lambda i: (-band.get(i, 0), -float(scores[i]), i))
        return [Positive(ScoredChunk(self.chunks[i], float(scores[i])), band.get(i)) for i in ranked[:k]]

    def hard_negatives(self, question: str, needle_doc_ids: Iterable[str], n: int) -> list[ScoredChunk]:
        """The ``n`` best chunks of the other documents with a positive BM25 score, best first."""
        needles = set(needle_doc_ids)
        scores = self._bm25.scores(question)
        out: list[ScoredChunk] = []
        for i in np.argsort(-scores, kind="stable"):
            if len(out) >= n or scores[i] <= 0:
                break
            c = self.chunks[i]
            if c.doc_id not in needles and has_text(c):
                out.append(ScoredChunk(c, float(scores[i])))
        return out

    def random_others(self, question_id: str, needle_doc_ids: Iterable[str], k: int, seed: int) -> list[Chunk]:
        """``k`` chunks with text drawn at random from documents that are not needles."""
        needles = set(needle_doc_ids)
        pool = [i for doc, positions in self._by_doc.items() if doc not in needles for i in positions]
        pool.sort()
        rng = random.Random(f"{seed}:{question_id}")
        return [self.chunks[i] for i in rng.sample(pool, min(k, len(pool)))]
