"""RetrievalMetrics: every metric of the benchmark, defined once, stateless.

``results`` arguments are sequences of question results: objects with attributes (``rank``,
``total_score``, ``llm_grade``) or mappings with those keys.

Empty input: rates and MRR over no questions are ``0.0``; averages over nothing are ``None``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

RANK_WEIGHTS = {1: 1.0, 2: 0.95, 3: 0.95, 4: 0.85, 5: 0.85}
NOT_FOUND_WEIGHT = 0.6
PASS_THRESHOLDS = (8.0, 7.0, 6.5)


def _field(result: Any, name: str) -> Any:
    return result[name] if isinstance(result, Mapping) else getattr(result, name)


def _doc_id(item: Any) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, Mapping):
        return item["doc_id"]
    inner = getattr(item, "chunk", None)
    return inner.doc_id if inner is not None else item.doc_id


class RetrievalMetrics:
    @staticmethod
    def rank_weight(rank: int | None) -> float:
        """1.0 for rank 1, 0.95 for 2-3, 0.85 for 4-5, 0.6 when the needle was not retrieved."""
        if rank is None:
            return NOT_FOUND_WEIGHT
        return RANK_WEIGHTS.get(rank, NOT_FOUND_WEIGHT)

    @staticmethod
    def calculate_rank(retrieved_chunks: Sequence[Any], needle_doc_id: str | Iterable[str]) -> int | None:
        """1-based position of the first retrieved item whose doc id is a needle; None if none.

        Items may be doc id strings, mappings with ``doc_id``, chunks, or scored chunks.
        ``needle_doc_id`` is one id or several (any of them counts)."""
        needles = {needle_doc_id} if isinstance(needle_doc_id, str) else set(needle_doc_id)
        for position, item in enumerate(retrieved_chunks, start=1):
            if _doc_id(item) in needles:
                return position
        return None

    @staticmethod
    def calculate_total_score(llm_grade: float | None, rank: int | None) -> float | None:
        """``grade × weight(rank)``; None when the question was not graded."""
        if llm_grade is None:
            return None
        return round(llm_grade * RetrievalMetrics.rank_weight(rank), 4)

    @staticmethod
    def calculate_mrr(results: Sequence[Any]) -> float:
        """Mean reciprocal rank (not found counts 0). Empty → 0.0."""
        if not results:
            return 0.0
        return sum(1.0 / r for r in (_field(x, "rank") for x in results) if r) / len(results)

    @staticmethod
    def calculate_hit_rate(results: Sequence[Any], k: int) -> float:
        """Percent of questions whose needle ranked within the top ``k``. Empty → 0.0."""
        if not results:
            return 0.0
        hits = sum(1 for x in results if (r := _field(x, "rank")) is not None and r <= k)
        return 100.0 * hits / len(results)

    @staticmethod
    def calculate_pass_rates(results: Sequence[Any], thresholds: Sequence[float] = PASS_THRESHOLDS
                             ) -> dict[float, float]:
        """Percent of **all** questions whose total score is ≥ each threshold (a null score does
        not pass). Empty → 0.0 for every threshold."""
        n = len(results)
        scores = [_field(x, "total_score") for x in results]
        return {t: (100.0 * sum(1 for s in scores if s is not None and s >= t) / n if n else 0.0)
                for t in thresholds}

    @staticmethod
    def calculate_average(values: Iterable[float | None]) -> float | None:
        """Mean of the non-null values; None when there are none."""
        present = [v for v in values if v is not None]
        return sum(present) / len(present) if present else None
