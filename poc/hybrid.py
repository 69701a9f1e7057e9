"""Hybrid retrieval: min-max-normalised mix of BM25 and dense scores.

Candidates are the union of each retriever's top ``pool`` chunks. Each retriever's scores are
min-max normalised over that union, then mixed as ``alpha * bm25 + (1 - alpha) * dense``.
``save``/``load`` persist both indexes (``bm25/`` and ``dense/`` subfolders).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from components.core import Chunk, ScoredChunk, top_k
from poc.bm25 import BM25Retriever
from poc.dense import DenseRetriever
from poc.embeddings import DEFAULT


def _minmax(x: np.ndarray) -> np.ndarray:
    span = float(x.max() - x.min()) if len(x) else 0.0
    return (x - x.min()) / span if span > 0 else np.zeros_like(x)


class HybridRetriever:
    def __init__(self, alpha: float = 0.5, pool: int = 50, embedding_model: str = DEFAULT,
                 k1: float = 1.5, b: float = 0.75) -> None:
        self.alpha, self.pool = alpha, pool
        self.bm25, self.dense = BM25Retriever(k1=k1, b=b), DenseRetriever(embedding_model)
        self._chunks: list[Chunk] = []

    def index(self, chunks: Sequence[Chunk]) -> None:
        self._chunks = list(chunks)
        self.bm25.index(self._chunks)
        self.dense.index(self._chunks)

    def save(self, folder: Path) -> None:
        """Write both indexes built by :meth:`index` into ``folder``."""
        self.bm25.save(Path(folder) / "bm25")
        self.dense.save(Path(folder) / "dense")

    def load(self, folder: Path, chunks: Sequence[Chunk]) -> None:
        """Restore both indexes :meth:`save` wrote for these ``chunks``."""
        chunks = list(chunks)
        self.bm25.load(Path(folder) / "bm25", chunks)
        self.dense.load(Path(folder) / "dense", chunks)
        self._chunks = chunks

    def retrieve(self, query: str, k: int) -> list[ScoredChunk]:
        if not self._chunks:
            return []
        sparse, dense = self.bm25.scores(query), self.dense.scores(query)
        pool = min(self.pool, len(self._chunks))
        union = np.union1d(np.argpartition(-sparse, pool - 1)[:pool], np.argpartition(-dense, pool - 1)[:pool])
        mixed = self.alpha * _minmax(sparse[union]) + (1 - self.alpha) * _minmax(dense[union])
        return top_k([self._chunks[i] for i in union], mixed.astype(np.float32), k)
