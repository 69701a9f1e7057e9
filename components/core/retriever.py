"""The retriever protocol: what a strategy must provide to be benchmarked.

A user's own retriever plugs in with ``--strategy package.module:factory``; ``factory()``
returns any object with these two methods. Its types come from here
(``from components.core import ScoredChunk``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from components.core.chunk import Chunk


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


def top_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest ``scores``, best first; ties: lower index first; NaN last.

    Deterministic at the cut too: every index scoring at least the k-th best score is a
    candidate (``np.argpartition`` alone keeps an arbitrary subset of the items tied there), and
    the candidates are ordered by (score descending, index). O(n) plus a sort of the candidates."""
    scores = np.asarray(scores)
    k = min(k, len(scores))
    if k <= 0:
        return np.zeros(0, dtype=np.intp)
    negated = -scores
    kth = np.partition(negated, k - 1)[k - 1]  # NaN sorts last: a NaN here means fewer than k numbers
    idx = np.arange(len(scores)) if np.isnan(kth) else np.flatnonzero(negated <= kth)
    return idx[np.lexsort((idx, negated[idx]))][:k]


def top_k(chunks: Sequence[Chunk], scores: np.ndarray, k: int) -> list[ScoredChunk]:
    """The ``k`` highest-scoring chunks, best first (ties: earlier chunk first; NaN scores last),
    as :func:`top_indices` selects them."""
    return [ScoredChunk(chunks[i], float(scores[i])) for i in top_indices(scores, k)]
