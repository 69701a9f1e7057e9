"""The pipeline's strategies, registered with the benchmark's strategy registry
(:mod:`components.core.strategies`), which imports this module by its name.

``baseline`` = BM25; ``modular-no-llm`` = hybrid (BM25 + WordLlama, α = 0.5);
``modular`` = the same hybrid, with each question rewritten by an LLM first (the benchmark loop
does the rewriting, so every row records the query it used).

Their factories take keyword parameters, which a suite configuration sets (any key it gives beyond
its own): BM25's ``k1`` and ``b``; the hybrid's also ``alpha``, ``pool`` and ``embedding_model``
(:mod:`poc.embeddings`).
"""

from __future__ import annotations

from components.core import Retriever, Strategy, register_strategy


def _baseline(*, k1: float = 1.5, b: float = 0.75) -> Retriever:
    from poc.bm25 import BM25Retriever

    return BM25Retriever(k1=k1, b=b)


def _hybrid(*, alpha: float = 0.5, pool: int = 50, embedding_model: str = "wordllama-256", k1: float = 1.5,
            b: float = 0.75) -> Retriever:
    from poc.hybrid import HybridRetriever

    return HybridRetriever(alpha=alpha, pool=pool, embedding_model=embedding_model, k1=k1, b=b)


STRATEGIES: dict[str, Strategy] = {
    "baseline": Strategy("baseline", _baseline),
    "modular-no-llm": Strategy("modular-no-llm", _hybrid),
    "modular": Strategy("modular", _hybrid, rewrites_queries=True),
}

for _strategy in STRATEGIES.values():
    register_strategy(_strategy)
