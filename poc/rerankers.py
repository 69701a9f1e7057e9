"""Rerankers that run offline, for a suite configuration's ``reranker`` key
(``reranker: poc.rerankers:term_overlap``; the contract is :mod:`components.run.retrieval.reranker`).

:func:`term_overlap` reorders the retriever's candidates by how many of the query's distinct terms
(stemmed words, English stopwords left out, as BM25 tokenises) each chunk holds — title, heading
path and text — best first; ties keep the retriever's order. It needs no model: the comparison of
"no reranker" against "a reranker" in ``examples/suites.yaml`` runs on any clone. A cross-encoder
reranker (a model scoring each query-chunk pair) plugs in the same way, as a function of your own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from components.core import ScoredChunk

_WORD = re.compile(r"[A-Za-z0-9_]+")


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def _terms(text: str) -> set[str]:
    stem, stop = _stemmer(), _stopwords()
    return {stem.stemWord(w) for w in (m.group(0).lower() for m in _WORD.finditer(text)) if w not in stop}


def term_overlap(query: str, candidates: Sequence[ScoredChunk]) -> list[ScoredChunk]:
    """``candidates`` reordered by the number of the query's terms each chunk holds, best first (a
    stable sort: ties keep the retriever's order); each keeps its own score."""
    wanted = _terms(query)
    held = [len(wanted & _terms(c.chunk.index_text)) for c in candidates]
    order = sorted(range(len(candidates)), key=lambda i: -held[i])
    return [candidates[i] for i in order]
