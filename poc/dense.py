"""Dense retrieval with WordLlama's 256-d static embeddings (shipped inside the PyPI wheel), or
another embedding model by name (:mod:`poc.embeddings`: ``wordllama-128``, ``wordllama-64``,
``package.module:function``).

``WordLlama.load()`` with defaults looks in a user cache folder and then tries the network;
:func:`load_wordllama` loads the weights from the installed package, offline, and writes nothing.

``save``/``load`` persist the chunk vectors as one float32 ``.npy`` matrix, memory-mapped on load
(see :mod:`components.run.retrieval.index_cache`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from components.core import Chunk, ScoredChunk, top_k
from poc.embeddings import DEFAULT, WORDLLAMA_DIM, load_wordllama
from poc.embeddings import embedding_model as embedding_model_named

__all__ = ["DenseRetriever", "load_wordllama", "batches"]
DIM = WORDLLAMA_DIM  # the default model's embedding width
VECTORS = "vectors.npy"
BATCH_CHARS = 32_000  # a batch's size x its longest text, in characters
BATCH_MAX = 256


def batches(sorted_lengths: Sequence[int], budget: int = BATCH_CHARS,
            most: int = BATCH_MAX) -> list[tuple[int, int]]:
    """Cut texts sorted by length into ``(start, stop)`` batches whose padded size, count x
    longest length, stays within ``budget`` (a longer text goes alone; at most ``most`` a batch).

    WordLlama pads a batch to its longest text and holds ``count x tokens x 256`` floats twice
    while pooling: with fixed batches of 16, the batch of the Kubernetes corpus's longest chunks
    (5,000-7,000 tokens) set the peak (hybrid bench: 415 MB, against 230 MB now). Same vectors
    either way.
    """
    out: list[tuple[int, int]] = []
    start = 0
    while start < len(sorted_lengths):
        stop = start + 1
        while (stop < len(sorted_lengths) and stop - start < most
               and (stop + 1 - start) * sorted_lengths[stop] <= budget):
            stop += 1
        out.append((start, stop))
        start = stop
    return out


class DenseRetriever:
    def __init__(self, embedding_model: str = DEFAULT) -> None:
        """``embedding_model``: a name of :func:`poc.embeddings.embedding_model` (``ValueError`` when
        it is not installed); a public setting, so it is part of the index cache's key."""
        self.embedding_model = embedding_model
        self._model = embedding_model_named(embedding_model)
        self._chunks: list[Chunk] = []
        self._matrix = np.zeros((0, self._model.dim or 0), dtype=np.float32)

    def index(self, chunks: Sequence[Chunk]) -> None:
        self._chunks = list(chunks)
        # Similar lengths batch together with less padding: same vectors, ~1.5x faster. Each batch's
        # texts are made when it is embedded: at 100k pages all of them at once are most of a gigabyte.
        lengths = [len(c.index_text) for c in self._chunks]
        order = sorted(range(len(lengths)), key=lengths.__getitem__)
        matrix: np.ndarray | None = None
        for start, stop in batches([lengths[i] for i in order], BATCH_CHARS):
            rows = order[start:stop]
            vectors = self._model.embed([self._chunks[i].index_text for i in rows], batch_size=stop - start)
            if matrix is None:
                matrix = np.zeros((len(lengths), vectors.shape[1]), dtype=np.float32)
            matrix[rows] = vectors
        self._matrix = matrix if matrix is not None else np.zeros((0, self._model.dim or 0), dtype=np.float32)

    def save(self, folder: Path) -> None:
        """Write the chunk vectors built by :meth:`index` into ``folder`` (created if needed)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        np.save(folder / VECTORS, np.ascontiguousarray(self._matrix, dtype=np.float32), allow_pickle=False)

    def load(self, folder: Path, chunks: Sequence[Chunk]) -> None:
        """Map the vectors :meth:`save` wrote for these ``chunks`` (read-only, paged in on use).
        Raises ``ValueError`` (or ``OSError``) when ``folder`` does not hold such a matrix."""
        chunks = list(chunks)
        matrix = np.load(Path(folder) / VECTORS, mmap_mode="r", allow_pickle=False)
        width = self._model.dim or (matrix.shape[1] if matrix.ndim == 2 else -1)
        if matrix.dtype != np.float32 or matrix.shape != (len(chunks), width) or not matrix.flags.c_contiguous:
            raise ValueError(f"{VECTORS} holds a {matrix.dtype} matrix of shape {matrix.shape}, "
                             f"expected float32 ({len(chunks)}, {width})")
        self._chunks, self._matrix = chunks, np.asarray(matrix)

    def scores(self, query: str) -> np.ndarray:
        """Cosine similarity of every indexed chunk to ``query``."""
        if not self._chunks:
            return np.zeros(0, dtype=np.float32)
        q = self._model.embed([query])[0]
        return self._matrix @ q

    def retrieve(self, query: str, k: int) -> list[ScoredChunk]:
        return top_k(self._chunks, self.scores(query), k)
