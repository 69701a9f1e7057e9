"""RetrievalMetrics: every metric of the benchmark, defined once, stateless.

``results`` arguments are sequences of question results: objects with attributes (``rank``,
``total_score``, ``llm_grade``) or mappings with those keys.

Empty input: rates and MRR over no questions are ``0.0``; averages over nothing are ``None``.
"""

from __future__ import annotations

import math
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

    # ======================================================================================
    # Proxy chunk-relevance metrics (issue 15, seed 002). Inputs are one question's judge scores
    # on the 0-3 scale (3 highly, 2 fairly, 1 marginally relevant, 0 irrelevant), in retrieved
    # order. They are PROXY metrics: the "relevant" items are what the judge rated, not a ground
    # truth, so the ideal ranking is the judge's own scores sorted and no true recall (nor F1)
    # follows from them — the relevant chunks the retriever did not return are never seen.
    # ======================================================================================

    PROXY_RELEVANT_MIN = 2  # a score at least this counts as relevant for proxy precision
    PROXY_AGGREGATES = ("proxy_avg_chunk_relevance", "proxy_highly_relevant_rate", "proxy_irrelevant_rate",
                        "proxy_ndcg_at_k", "proxy_precision_at_k")

    @staticmethod
    def proxy_ndcg_at_k(scores: Sequence[int]) -> float:
        """``DCG / IDCG`` with ``DCG = Σ rel_i / log2(i + 2)`` over 0-based positions and IDCG the
        DCG of the same scores sorted descending (the judge's own ideal ranking). All zeros or no
        scores → 0.0 (nothing relevant was retrieved: there is no ranking to be good at)."""
        def dcg(values: Sequence[int]) -> float:
            return sum(rel / math.log2(i + 2) for i, rel in enumerate(values))

        ideal = dcg(sorted(scores, reverse=True))
        return dcg(scores) / ideal if ideal > 0 else 0.0

    @staticmethod
    def proxy_precision_at_k(scores: Sequence[int]) -> float:
        """Share (0-1) of the scored chunks rated ≥ 2 (fairly or highly relevant); k is the number of
        chunks scored. No scores → 0.0."""
        return sum(1 for s in scores if s >= RetrievalMetrics.PROXY_RELEVANT_MIN) / len(scores) if scores else 0.0

    @staticmethod
    def relevance_aggregates(rows: Sequence[Any]) -> dict[str, float | int | None]:
        """The run's proxy chunk-relevance aggregates from rows with ``chunk_relevance`` (a list of
        0-3 scores, or None when not scored; rows without scores are left out).

        * ``proxy_avg_chunk_relevance`` — mean score (0-3) over all scored chunks pooled;
        * ``proxy_highly_relevant_rate`` / ``proxy_irrelevant_rate`` — percent of scored chunks rated
          3 / rated 0;
        * ``proxy_ndcg_at_k`` / ``proxy_precision_at_k`` — the per-question values averaged over the
          scored questions (0-1);
        * ``chunk_relevance_count`` — how many questions had scores.

        No scored question → every ``proxy_*`` value is None (and a scored question that retrieved
        no chunks counts 0.0 for NDCG/precision and adds no chunk to the pooled values).
        Proxy metrics: see the caveat above — no true recall follows from them."""
        lists = [list(s) for s in (_field(r, "chunk_relevance") for r in rows) if s is not None]
        pooled = [s for scores in lists for s in scores]
        out: dict[str, float | int | None] = dict.fromkeys(RetrievalMetrics.PROXY_AGGREGATES)
        out["chunk_relevance_count"] = len(lists)
        if lists:
            out["proxy_ndcg_at_k"] = sum(map(RetrievalMetrics.proxy_ndcg_at_k, lists)) / len(lists)
            out["proxy_precision_at_k"] = sum(map(RetrievalMetrics.proxy_precision_at_k, lists)) / len(lists)
        if pooled:
            out["proxy_avg_chunk_relevance"] = sum(pooled) / len(pooled)
            out["proxy_highly_relevant_rate"] = 100.0 * sum(1 for s in pooled if s == 3) / len(pooled)
            out["proxy_irrelevant_rate"] = 100.0 * sum(1 for s in pooled if s == 0) / len(pooled)
        return out

    # ============================================================ end of proxy chunk-relevance metrics
