"""BM25 over chunk texts with bm25s (Lucene variant, English stopwords, Snowball stemming)."""

from __future__ import annotations

from collections.abc import Sequence

import bm25s
import numpy as np
import Stemmer

from poc.chunking import Chunk
from poc.retriever import ScoredChunk, top_k


class BM25Retriever:
    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._chunks: list[Chunk] = []

    def index(self, chunks: Sequence[Chunk]) -> None:
        self._chunks = list(chunks)
        self._tokenizer = bm25s.tokenization.Tokenizer(stopwords="en", stemmer=Stemmer.Stemmer("english"))
        tokens = self._tokenizer.tokenize([c.index_text for c in self._chunks], return_as="tuple",
                                          show_progress=False)
        self._bm25 = bm25s.BM25(k1=self.k1, b=self.b)
        self._bm25.index(tokens, show_progress=False)
        self._vocab_inverse = {i: w for w, i in tokens.vocab.items()}

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every indexed chunk (zeros when no query term is in the corpus)."""
        ids = self._tokenizer.tokenize([query], update_vocab=False, return_as="ids", show_progress=False)[0]
        words = [self._vocab_inverse[i] for i in ids if i in self._vocab_inverse]
        if not words:
            return np.zeros(len(self._chunks), dtype=np.float32)
        return self._bm25.get_scores(words)

    def retrieve(self, query: str, k: int) -> list[ScoredChunk]:
        return top_k(self._chunks, self.scores(query), k)
