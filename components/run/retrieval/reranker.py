"""A reranker: ``package.module:function`` reordering what a retriever returned.

The function takes the query and a list of :class:`~components.core.ScoredChunk` (the retriever's
best :data:`RERANK_DEPTH`, or k when k is larger, best first) and returns them reordered, best
first; it may change their scores and leave some out. The run keeps its first k.
:class:`RerankedRetriever` wraps a retriever with one (a suite configuration's ``reranker``); the
wrapped retriever's index is cached as it would be alone (``save``/``load`` pass through).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from components.core import Chunk, Retriever, ScoredChunk
from components.core.plugins import import_plugin
from utils.errors import InputError

RERANK_DEPTH = 20  # candidates the reranker reorders (k, when k is larger)
Rerank = Callable[[str, list[ScoredChunk]], Sequence[ScoredChunk]]


def load_reranker(name: str) -> Rerank:
    """The function ``package.module:function`` names; :class:`InputError` naming the fix when it
    cannot be imported or is not callable."""
    module_name, colon, attr = name.partition(":") if isinstance(name, str) else ("", "", "")
    if not colon or not module_name or not attr:
        raise InputError(f"reranker {name!r} is not package.module:function: name the function that reorders "
                         "a list of ScoredChunk")
    module = import_plugin(module_name, f"reranker {name!r}")  # the plug-in route's import
    function = getattr(module, attr, None)
    if not callable(function):
        raise InputError(f"reranker {name!r}: {module_name} has no callable {attr!r}: name a function "
                         "(query, scored chunks) → scored chunks")
    return function


class RerankedRetriever:
    """``retriever``'s candidates reordered by ``rerank`` (``reranker``: its name, a public setting
    and so part of the index cache's key)."""

    def __init__(self, retriever: Retriever, rerank: Rerank, reranker: str, depth: int = RERANK_DEPTH) -> None:
        self.retriever, self.reranker, self.depth = retriever, reranker, depth
        self._rerank = rerank

    def index(self, chunks: Sequence[Chunk]) -> None:
        self.retriever.index(chunks)

    def retrieve(self, query: str, k: int) -> list[ScoredChunk]:
        candidates = list(self.retriever.retrieve(query, max(k, self.depth)))
        reordered = list(self._rerank(query, candidates))
        if not all(isinstance(item, ScoredChunk) for item in reordered):
            raise TypeError(f"reranker {self.reranker!r} returned something other than a list of ScoredChunk")
        return reordered[:k]

    # the index cache: present exactly when the wrapped retriever has them
    @property
    def save(self) -> Callable[[Path], None]:
        return self.retriever.save  # type: ignore[attr-defined]  # AttributeError: not cacheable

    @property
    def load(self) -> Callable[[Path, Sequence[Chunk]], None]:
        return self.retriever.load  # type: ignore[attr-defined]
