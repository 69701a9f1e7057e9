"""RetrievalMetrics: every metric of the benchmark, defined once, stateless.

``results`` arguments are sequences of question results: objects with attributes (``rank``,
``total_score``, ``llm_grade``) or mappings with those keys.

Two levels, never mixed:

- **chunk level**: ``rank`` is the 1-based position of the first retrieved *chunk* that comes from a
  needle document; Hit@k, MRR (``rr``) and ``total_score`` are computed on it (the seed's formulas);
  ``context_precision`` is the share of retrieved chunks from a needle document.
- **document level**: the top k chunks are collapsed into their distinct documents in first-occurrence
  order (:meth:`RetrievalMetrics.doc_ranking`, what pytrec_eval sees when a run lists each document
  once); ``doc_rank``, ``rr_doc``/MRR_doc, NDCG@k, Recall@k and AP@k/MAP@k are computed on that ranking,
  with binary relevance (a document is relevant iff it is a needle).

Empty input: rates and MRR over no questions are ``0.0``; averages over nothing are ``None``.
Per-question metrics of an empty retrieval (or no needles) are ``0.0`` / ``None`` as each says.
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


def _needle_set(needles: str | Iterable[str]) -> set[str]:
    return {needles} if isinstance(needles, str) else set(needles)


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
        needles = _needle_set(needle_doc_id)
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

    # ---- document level, per question -------------------------------------------------------

    @staticmethod
    def doc_ranking(retrieved: Sequence[Any]) -> list[str]:
        """DOCUMENT level: the distinct doc ids of ``retrieved``, in first-occurrence order
        (chunks d1, d1, d2, d3, d1 → [d1, d2, d3]). Empty → []."""
        return list(dict.fromkeys(_doc_id(item) for item in retrieved))

    @staticmethod
    def calculate_doc_rank(retrieved: Sequence[Any], needles: str | Iterable[str]) -> int | None:
        """DOCUMENT level: 1-based position of the first needle among the distinct documents of
        ``retrieved`` (pass the top k chunks). None when no needle was retrieved or ``retrieved`` is
        empty. Always ≤ the chunk-level rank."""
        return RetrievalMetrics.calculate_rank(RetrievalMetrics.doc_ranking(retrieved), needles)

    @staticmethod
    def reciprocal_rank(rank: int | None) -> float:
        """Either level (it is given the rank): ``1 / rank``; 0.0 when ``rank`` is None (not found)."""
        return 0.0 if rank is None else 1.0 / rank

    @staticmethod
    def ndcg_at_k(retrieved: Sequence[Any], needles: str | Iterable[str], k: int) -> float:
        """DOCUMENT level NDCG@k with binary gain and log2 discount on the document ranking of the
        first ``k`` retrieved chunks: DCG = Σ_{i=1..} rel_i / log2(i + 1) over the distinct documents
        (1-based position i), IDCG = Σ_{i=1..min(#needles, k)} 1 / log2(i + 1) (pytrec_eval's
        ``ndcg_cut_k`` with every needle at relevance 1). Empty retrieval, no needles or k < 1 → 0.0."""
        relevant = _needle_set(needles)
        ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(relevant), k) + 1))
        if ideal == 0.0:
            return 0.0
        docs = RetrievalMetrics.doc_ranking(retrieved[:max(k, 0)])
        gain = sum(1.0 / math.log2(i + 1) for i, d in enumerate(docs, start=1) if d in relevant)
        return gain / ideal

    @staticmethod
    def recall_at_k(retrieved: Sequence[Any], needles: str | Iterable[str], k: int) -> float:
        """DOCUMENT level: share of the needle documents found among the first ``k`` retrieved
        chunks (pytrec_eval ``recall_k``). Empty retrieval → 0.0; no needles → 0.0."""
        relevant = _needle_set(needles)
        if not relevant:
            return 0.0
        docs = set(RetrievalMetrics.doc_ranking(retrieved[:max(k, 0)]))
        return len(relevant & docs) / len(relevant)

    @staticmethod
    def average_precision_at_k(retrieved: Sequence[Any], needles: str | Iterable[str], k: int) -> float:
        """DOCUMENT level AP@k on the document ranking of the first ``k`` retrieved chunks:
        Σ over relevant positions i of precision@i, divided by the number of needles (all of them,
        not min(#needles, k)) — exactly pytrec_eval's ``map_cut_k`` (trec_eval divides by the
        topic's number of relevant documents). MAP@k is its mean over questions. Empty retrieval or
        no needles → 0.0."""
        relevant = _needle_set(needles)
        if not relevant:
            return 0.0
        found, total = 0, 0.0
        for i, d in enumerate(RetrievalMetrics.doc_ranking(retrieved[:max(k, 0)]), start=1):
            if d in relevant:
                found += 1
                total += found / i
        return total / len(relevant)

    @staticmethod
    def context_precision(retrieved: Sequence[Any], needles: str | Iterable[str]) -> float:
        """CHUNK level: share of the retrieved chunks (pass the top k) whose document is a needle;
        a repeated needle document counts every time (chunks d1, d1, d2 with needle d1 → 2/3).
        The denominator is the number of chunks actually retrieved. Empty → 0.0."""
        if not retrieved:
            return 0.0
        relevant = _needle_set(needles)
        return sum(1 for item in retrieved if _doc_id(item) in relevant) / len(retrieved)

    @staticmethod
    def row_metrics(retrieved: Sequence[Any], needles: str | Iterable[str], k: int) -> dict[str, Any]:
        """Every per-question metric of issue 13 for the first ``k`` retrieved items:
        ``doc_rank`` (document level), ``hit_at_k`` (chunk rank ≤ k, i.e. any needle retrieved),
        ``rr`` (chunk level, 1/rank or 0), ``rr_doc`` (1/doc_rank or 0), ``ndcg_at_k``,
        ``recall_at_k``, ``ap_at_k`` (document level) and ``context_precision`` (chunk level).
        Empty retrieval → doc_rank None, hit_at_k False, every number 0.0."""
        top = list(retrieved[:max(k, 0)])
        needle_set = _needle_set(needles)
        rank = RetrievalMetrics.calculate_rank(top, needle_set)
        doc_rank = RetrievalMetrics.calculate_doc_rank(top, needle_set)
        return {
            "doc_rank": doc_rank,
            "hit_at_k": rank is not None,
            "rr": RetrievalMetrics.reciprocal_rank(rank),
            "rr_doc": RetrievalMetrics.reciprocal_rank(doc_rank),
            "ndcg_at_k": RetrievalMetrics.ndcg_at_k(top, needle_set, k),
            "recall_at_k": RetrievalMetrics.recall_at_k(top, needle_set, k),
            "ap_at_k": RetrievalMetrics.average_precision_at_k(top, needle_set, k),
            "context_precision": RetrievalMetrics.context_precision(top, needle_set),
        }

    # ---- document level, over questions -----------------------------------------------------

    @staticmethod
    def calculate_mrr_doc(results: Sequence[Any]) -> float:
        """DOCUMENT level mean reciprocal rank: mean of 1/``doc_rank`` (not found counts 0) over
        all questions. Empty → 0.0."""
        if not results:
            return 0.0
        return sum(RetrievalMetrics.reciprocal_rank(_field(x, "doc_rank")) for x in results) / len(results)

    @staticmethod
    def calculate_mean(values: Iterable[float]) -> float:
        """Mean over ALL questions of a per-question metric that is never null (``ndcg_at_k``,
        ``recall_at_k``, ``ap_at_k`` → MAP@k, ``context_precision``). Its level is the metric's.
        Empty → 0.0 (like MRR and the rates)."""
        values = list(values)
        return sum(values) / len(values) if values else 0.0

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
