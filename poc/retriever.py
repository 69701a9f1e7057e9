"""The retriever protocol: what a strategy must provide to be benchmarked.

A user's own retriever plugs in with ``--strategy package.module:factory``; ``factory()``
returns any object with these two methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from poc.chunking import Chunk


@dataclass(frozen=True)
class ScoredChunk:
    chunk: Chunk
    score: float


@runtime_checkable
class Retriever(Protocol):
    def index(self, chunks: Sequence[Chunk]) -> None:
        """Build the index over ``chunks`` (called once, before any ``retrieve``)."""

    def retrieve(self, query: str, k: int) -> list[ScoredChunk]:
        """The best ``k`` chunks for ``query``, best first."""


def top_k(chunks: Sequence[Chunk], scores: np.ndarray, k: int) -> list[ScoredChunk]:
    """The ``k`` highest-scoring chunks, best first (ties: earlier chunk first)."""
    k = min(k, len(chunks))
    if k <= 0:
        return []
    idx = np.argpartition(-scores, k - 1)[:k] if k < len(chunks) else np.arange(len(chunks))
    idx = idx[np.lexsort((idx, -scores[idx]))]
    return [ScoredChunk(chunks[i], float(scores[i])) for i in idx]
