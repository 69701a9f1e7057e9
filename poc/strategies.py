"""The pipeline's strategies, registered with the benchmark's strategy registry
(:mod:`components.core.strategies`), which imports this module by its name.

``baseline`` = BM25; ``modular-no-llm`` = hybrid (BM25 + WordLlama, α = 0.5);
``modular`` = the same hybrid, with each question rewritten by an LLM first (the benchmark loop
does the rewriting, so every row records the query it used).
"""

from __future__ import annotations

from components.core import Retriever, Strategy, register_strategy


def _baseline(**_: object) -> Retriever:
    from poc.bm25 import BM25Retriever

    return BM25Retriever()


def _hybrid(**_: object) -> Retriever:
    from poc.hybrid import HybridRetriever

    return HybridRetriever(alpha=0.5)


STRATEGIES: dict[str, Strategy] = {
    "baseline": Strategy("baseline", _baseline),
    "modular-no-llm": Strategy("modular-no-llm", _hybrid),
    "modular": Strategy("modular", _hybrid, rewrites_queries=True),
}

for _strategy in STRATEGIES.values():
    register_strategy(_strategy)
