"""The strategy registry: a name → a factory returning a fresh retriever.

``baseline`` = BM25; ``modular-no-llm`` = hybrid (BM25 + WordLlama, α = 0.5);
``modular`` = hybrid behind an LLM query rewriter. A user's own retriever loads with
``package.module:factory`` (``factory()`` returns an object with ``index`` and ``retrieve``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from pathlib import Path

from poc.chunking import Chunk
from poc.retriever import Retriever, ScoredChunk
from utils.errors import InputError

StrategyFactory = Callable[..., Retriever]


class RewritingRetriever:
    """Rewrites each query with a :class:`components.run.query_rewriter.QueryRewriter` first.
    ``save``/``load`` delegate to the inner retriever (the index does not depend on the rewriter)."""

    def __init__(self, inner: Retriever, rewriter) -> None:
        self.inner, self.rewriter = inner, rewriter

    def index(self, chunks: Sequence[Chunk]) -> None:
        self.inner.index(chunks)

    def save(self, folder: Path) -> None:
        self.inner.save(folder)

    def load(self, folder: Path, chunks: Sequence[Chunk]) -> None:
        self.inner.load(folder, chunks)

    def retrieve(self, query: str, k: int) -> list[ScoredChunk]:
        return self.inner.retrieve(self.rewriter.rewrite(query), k)


def _baseline(**_: object) -> Retriever:
    from poc.bm25 import BM25Retriever

    return BM25Retriever()


def _hybrid(**_: object) -> Retriever:
    from poc.hybrid import HybridRetriever

    return HybridRetriever(alpha=0.5)


def _modular(*, llm_available: bool = True, **_: object) -> Retriever:
    from components.run.query_rewriter import QueryRewriter
    from poc.hybrid import HybridRetriever
    from utils.llm_provider import call_llm

    return RewritingRetriever(HybridRetriever(alpha=0.5), QueryRewriter(call_llm if llm_available else None))


STRATEGIES: dict[str, StrategyFactory] = {
    "baseline": _baseline,
    "modular-no-llm": _hybrid,
    "modular": _modular,
}


def resolve_strategy(name: str) -> StrategyFactory:
    """A registered name, or ``package.module:factory``. Raises :class:`InputError` naming the fix."""
    if name in STRATEGIES:
        return STRATEGIES[name]
    if ":" not in name:
        raise InputError(f"unknown strategy {name!r}: use one of {', '.join(sorted(STRATEGIES))}, "
                         "or package.module:factory for your own retriever")
    module_name, _, attr = name.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # ImportError, or the module raising while importing
        raise InputError(f"strategy {name!r}: cannot import {module_name!r} ({type(err).__name__}: {err}): "
                         "check the module path and that it is importable from the current folder") from err
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise InputError(f"strategy {name!r}: {module_name} has no callable {attr!r}: "
                         "name a function that returns a retriever")

    def user_factory(**_: object) -> Retriever:
        retriever = factory()
        if not isinstance(retriever, Retriever):
            raise InputError(f"strategy {name!r}: {attr}() returned {type(retriever).__name__}, which lacks "
                             "index(chunks) and retrieve(query, k): implement poc.retriever.Retriever")
        return retriever

    return user_factory
