"""Dense retrieval with WordLlama's 256-d static embeddings (shipped inside the PyPI wheel).

``WordLlama.load()`` with defaults looks in a user cache folder and then tries the network;
this loads the weights from the installed package, offline, and writes nothing.

``save``/``load`` persist the chunk vectors as one float32 ``.npy`` matrix, memory-mapped on load
(see :mod:`components.run.index_cache`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from components.core import Chunk, ScoredChunk, top_k


@lru_cache(maxsize=1)
def load_wordllama():
    import wordllama
    from wordllama import WordLlama

    return WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)


DIM = 256  # WordLlama's embedding width used here
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
    def __init__(self) -> None:
        self._chunks: list[Chunk] = []
        self._matrix = np.zeros((0, DIM), dtype=np.float32)

    def index(self, chunks: Sequence[Chunk]) -> None:
        self._model = load_wordllama()
        self._chunks = list(chunks)
        # Similar lengths batch together with less padding: same vectors, ~1.5x faster. Each batch's
        # texts are made when it is embedded: at 100k pages all of them at once are most of a gigabyte.
        lengths = [len(c.index_text) for c in self._chunks]
        order = sorted(range(len(lengths)), key=lengths.__getitem__)
        matrix = np.zeros((len(lengths), DIM), dtype=np.float32)
        for start, stop in batches([lengths[i] for i in order], BATCH_CHARS):
            rows = order[start:stop]
            matrix[rows] = self._model.embed([self._chunks[i].index_text for i in rows], norm=True,
                                             batch_size=stop - start)
        self._matrix = matrix

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
        if matrix.dtype != np.float32 or matrix.shape != (len(chunks), DIM) or not matrix.flags.c_contiguous:
            raise ValueError(f"{VECTORS} holds a {matrix.dtype} matrix of shape {matrix.shape}, "
                             f"expected float32 ({len(chunks)}, {DIM})")
        self._model = load_wordllama()
        self._chunks, self._matrix = chunks, np.asarray(matrix)

    def scores(self, query: str) -> np.ndarray:
        """Cosine similarity of every indexed chunk to ``query``."""
        q = self._model.embed([query], norm=True)[0].astype(np.float32)
        return self._matrix @ q

    def retrieve(self, query: str, k: int) -> list[ScoredChunk]:
        return top_k(self._chunks, self.scores(query), k)
