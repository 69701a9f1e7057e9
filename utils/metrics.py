"""Every metric of the benchmark, defined once: the formulas, and the registry that names them.

**Formulas** are stateless module functions. ``results`` arguments are sequences of question
results: objects with attributes (``rank``, ``total_score``, ``llm_grade``) or mappings with those
keys. :class:`RetrievalMetrics` keeps the names the user's plan gives them (``calculate_rank``,
``calculate_total_score``, ``calculate_mrr``, ``calculate_pass_rates`` …) as aliases.

Two levels, never mixed:

- **chunk level**: ``rank`` is the 1-based position of the first retrieved *chunk* that comes from a
  needle document; Hit@k, MRR (``rr``) and ``total_score`` are computed on it (the user's plan's formulas);
  ``context_precision`` is the share of retrieved chunks from a needle document.
- **document level**: the top k chunks are collapsed into their distinct documents in first-occurrence
  order (:func:`doc_ranking`, what pytrec_eval sees when a run lists each document once);
  ``doc_rank``, ``rr_doc``/MRR_doc, NDCG@k, Recall@k and AP@k/MAP@k are computed on that ranking.

**Relevance** (``needles`` of every formula): one doc id, several (each of grade 1), or a mapping
``{doc id: grade}`` (graded relevance, as qrels give it: 0 judged non-relevant, 1-3 more and more
relevant). A document is relevant when its grade is at least :data:`RELEVANT_MIN` (1), as
trec_eval's default relevance level: only relevant documents are needles, for the ranks, recall,
AP and context precision. NDCG uses the grades as gains (trec_eval's ``ndcg_cut``: gain = grade,
ideal DCG over every relevant document, not only the retrieved ones); with grades all 1 it is the
binary NDCG.

Empty input: rates and MRR over no questions are ``0.0``; averages over nothing are ``None``.
Per-question metrics of an empty retrieval (or no needles) are ``0.0`` / ``None`` as each says.

**The registry** (:data:`METRICS`, :func:`register_metric`): one :class:`Metric` per aggregate —
its key (the results' field name), label, level, unit, per-question value, and what compare needs.
The results' aggregates, their confidence intervals and groups, ``compare``, the report, the
console summary and the ``METRIC`` log lines all iterate it, so a metric added here (one spec and
its formula) appears in all of them. Per-question values are in the metric's unit (percent for
rates); a question whose value is None is not part of that metric's mean.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# The weight of the needle's rank in the total score (the user's plan's table, its one definition):
# full credit at rank 1, a small penalty at 2-3, a larger one at 4-5; None (not retrieved) and any
# rank beyond 5 weigh NOT_FOUND_WEIGHT.
POSITION_WEIGHTS: dict[int | None, float] = {1: 1.0, 2: 0.95, 3: 0.95, 4: 0.85, 5: 0.85, None: 0.6}
RANK_WEIGHTS = {rank: weight for rank, weight in POSITION_WEIGHTS.items() if rank is not None}
NOT_FOUND_WEIGHT = POSITION_WEIGHTS[None]
PASS_THRESHOLDS = (8.0, 7.0, 6.5)
PASS_MARK = 7.0  # a total score at or above this passes (the question line's ✓, the headline pass rate)
PROXY_RELEVANT_MIN = 2  # a chunk relevance score at least this counts as relevant for proxy precision
RELEVANT_MIN = 1  # a needle grade at least this makes a document relevant (trec_eval's relevance level)
# The grade_error of a question left unjudged on purpose (judging stopped once the verdict was known:
# ``--until-decided``, ``--target-ci``): not a failure, so not part of any grade-based mean, pass rates included
NOT_JUDGED = "not judged"

Needles = str | Iterable[str] | Mapping[str, int]  # one doc id, several, or {doc id: grade}


def _field(result: Any, name: str) -> Any:
    """``name`` of a result: a mapping's key (absent: None, as the plan's dicts may lack it) or an attribute."""
    return result.get(name) if isinstance(result, Mapping) else getattr(result, name)


def _doc_id(item: Any) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, Mapping):
        return item["doc_id"]
    inner = getattr(item, "chunk", None)
    return inner.doc_id if inner is not None else item.doc_id


def relevance_grades(needles: Needles) -> dict[str, int]:
    """``{doc id: grade}`` of the relevant documents of ``needles``: a doc id or several are grade 1
    each; a mapping keeps its entries graded at least :data:`RELEVANT_MIN` (grade 0: judged
    non-relevant, not a needle)."""
    if isinstance(needles, str):
        return {needles: 1}
    if isinstance(needles, Mapping):
        return {d: g for d, g in needles.items() if g >= RELEVANT_MIN}
    return dict.fromkeys(needles, 1)


def _needle_set(needles: Needles) -> set[str]:
    return set(relevance_grades(needles))


# =============================================================================================
# Formulas, per question
# =============================================================================================

def rank_weight(rank: int | None) -> float:
    """:data:`POSITION_WEIGHTS` of ``rank``: 1.0 for rank 1, 0.95 for 2-3, 0.85 for 4-5, 0.6 when the
    needle was not retrieved (or ranked beyond 5)."""
    return POSITION_WEIGHTS.get(rank, NOT_FOUND_WEIGHT)


def chunk_rank(retrieved_chunks: Sequence[Any], needle_doc_id: Needles) -> int | None:
    """CHUNK level: 1-based position of the first retrieved item whose doc id is a needle; None if none.

    Items may be doc id strings, mappings with ``doc_id``, chunks, or scored chunks.
    ``needle_doc_id`` is one id, several, or ``{doc id: grade}`` (any relevant one counts)."""
    needles = _needle_set(needle_doc_id)
    for position, item in enumerate(retrieved_chunks, start=1):
        if _doc_id(item) in needles:
            return position
    return None


def total_score(llm_grade: float | None, rank: int | None) -> float | None:
    """``grade × weight(rank)``; None when the question was not graded."""
    if llm_grade is None:
        return None
    return round(llm_grade * rank_weight(rank), 4)


def doc_ranking(retrieved: Sequence[Any]) -> list[str]:
    """DOCUMENT level: the distinct doc ids of ``retrieved``, in first-occurrence order
    (chunks d1, d1, d2, d3, d1 → [d1, d2, d3]). Empty → []."""
    return list(dict.fromkeys(_doc_id(item) for item in retrieved))


def doc_rank(retrieved: Sequence[Any], needles: Needles) -> int | None:
    """DOCUMENT level: 1-based position of the first needle among the distinct documents of
    ``retrieved`` (pass the top k chunks). None when no needle was retrieved or ``retrieved`` is
    empty. Always ≤ the chunk-level rank."""
    return chunk_rank(doc_ranking(retrieved), needles)


def reciprocal_rank(rank: int | None) -> float:
    """Either level (it is given the rank): ``1 / rank``; 0.0 when ``rank`` is None (not found)."""
    return 0.0 if rank is None else 1.0 / rank


def ndcg_at_k(retrieved: Sequence[Any], needles: Needles, k: int) -> float:
    """DOCUMENT level NDCG@k with linear gain (the grade) and log2 discount on the document ranking
    of the first ``k`` retrieved chunks: DCG = Σ_i grade_i / log2(i + 1) over the distinct documents
    (1-based position i; a document that is not a needle has gain 0), IDCG = the same sum over ALL
    relevant documents sorted by grade, best first, cut at k — exactly pytrec_eval's
    ``ndcg_cut_k`` (with binary needles: IDCG = Σ_{i=1..min(#needles, k)} 1 / log2(i + 1)).
    Empty retrieval, no needles or k < 1 → 0.0."""
    grades = relevance_grades(needles)
    best = sorted(grades.values(), reverse=True)[:max(k, 0)]
    ideal = sum(g / math.log2(i + 1) for i, g in enumerate(best, start=1))
    if ideal == 0.0:
        return 0.0
    docs = doc_ranking(retrieved[:max(k, 0)])
    gain = sum(grades[d] / math.log2(i + 1) for i, d in enumerate(docs, start=1) if d in grades)
    return gain / ideal


def recall_at_k(retrieved: Sequence[Any], needles: Needles, k: int) -> float:
    """DOCUMENT level: share of the needle documents found among the first ``k`` retrieved
    chunks (pytrec_eval ``recall_k``). Empty retrieval → 0.0; no needles → 0.0."""
    relevant = _needle_set(needles)
    if not relevant:
        return 0.0
    docs = set(doc_ranking(retrieved[:max(k, 0)]))
    return len(relevant & docs) / len(relevant)


def average_precision_at_k(retrieved: Sequence[Any], needles: Needles, k: int) -> float:
    """DOCUMENT level AP@k on the document ranking of the first ``k`` retrieved chunks:
    Σ over relevant positions i of precision@i, divided by the number of needles (all of them,
    not min(#needles, k)) — exactly pytrec_eval's ``map_cut_k`` (trec_eval divides by the
    topic's number of relevant documents). MAP@k is its mean over questions. Empty retrieval or
    no needles → 0.0."""
    relevant = _needle_set(needles)
    if not relevant:
        return 0.0
    found, total = 0, 0.0
    for i, d in enumerate(doc_ranking(retrieved[:max(k, 0)]), start=1):
        if d in relevant:
            found += 1
            total += found / i
    return total / len(relevant)


def context_precision(retrieved: Sequence[Any], needles: Needles) -> float:
    """CHUNK level: share of the retrieved chunks (pass the top k) whose document is a needle;
    a repeated needle document counts every time (chunks d1, d1, d2 with needle d1 → 2/3).
    The denominator is the number of chunks actually retrieved. Empty → 0.0."""
    if not retrieved:
        return 0.0
    relevant = _needle_set(needles)
    return sum(1 for item in retrieved if _doc_id(item) in relevant) / len(retrieved)


def row_metrics(retrieved: Sequence[Any], needles: Needles, k: int) -> dict[str, Any]:
    """Every per-question field of a row for the first ``k`` retrieved items (``needles`` graded or not):
    ``doc_rank`` (document level), ``hit_at_k`` (chunk rank ≤ k, i.e. any needle retrieved),
    ``rr`` (chunk level, 1/rank or 0), ``rr_doc`` (1/doc_rank or 0), ``ndcg_at_k``,
    ``recall_at_k``, ``ap_at_k`` (document level) and ``context_precision`` (chunk level).
    Empty retrieval → doc_rank None, hit_at_k False, every number 0.0."""
    top = list(retrieved[:max(k, 0)])
    grades = relevance_grades(needles)
    needle_set = set(grades)
    rank = chunk_rank(top, needle_set)
    drank = doc_rank(top, needle_set)
    return {
        "doc_rank": drank,
        "hit_at_k": rank is not None,
        "rr": reciprocal_rank(rank),
        "rr_doc": reciprocal_rank(drank),
        "ndcg_at_k": ndcg_at_k(top, grades, k),
        "recall_at_k": recall_at_k(top, needle_set, k),
        "ap_at_k": average_precision_at_k(top, needle_set, k),
        "context_precision": context_precision(top, needle_set),
    }


# =============================================================================================
# Formulas, over questions
# =============================================================================================

def mrr(results: Sequence[Any]) -> float:
    """Mean reciprocal rank (chunk level; not found counts 0). Empty → 0.0."""
    if not results:
        return 0.0
    return sum(1.0 / r for r in (_field(x, "rank") for x in results) if r) / len(results)


def mrr_doc(results: Sequence[Any]) -> float:
    """DOCUMENT level mean reciprocal rank: mean of 1/``doc_rank`` (not found counts 0) over
    all questions. Empty → 0.0."""
    if not results:
        return 0.0
    return sum(reciprocal_rank(_field(x, "doc_rank")) for x in results) / len(results)


def hit_rate(results: Sequence[Any], k: int) -> float:
    """Percent of questions whose needle ranked within the top ``k``. Empty → 0.0."""
    if not results:
        return 0.0
    hits = sum(1 for x in results if (r := _field(x, "rank")) is not None and r <= k)
    return 100.0 * hits / len(results)


def pass_rates(results: Sequence[Any], thresholds: Sequence[float] = PASS_THRESHOLDS) -> dict[float, float]:
    """Percent of **all** questions whose total score is ≥ each threshold (a null score does
    not pass). Empty → 0.0 for every threshold."""
    n = len(results)
    scores = [_field(x, "total_score") for x in results]
    return {t: (100.0 * sum(1 for s in scores if s is not None and s >= t) / n if n else 0.0)
            for t in thresholds}


def average(values: Iterable[float | None]) -> float | None:
    """Mean of the non-null values; None when there are none."""
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def mean(values: Iterable[float]) -> float:
    """Mean over ALL questions of a per-question metric that is never null. Empty → 0.0."""
    values = list(values)
    return sum(values) / len(values) if values else 0.0


# ---- proxy chunk-relevance metrics -----------------------------------------------------------
# Inputs are one question's judge scores on the 0-3 scale (3 highly, 2 fairly, 1 marginally
# relevant, 0 irrelevant), in retrieved order. They are PROXY metrics: the "relevant" items are what
# the judge rated, not a ground truth, so the ideal ranking is the judge's own scores sorted and no
# true recall (nor F1) follows from them — the relevant chunks the retriever did not return are
# never seen.

def proxy_ndcg_at_k(scores: Sequence[int]) -> float:
    """``DCG / IDCG`` with ``DCG = Σ rel_i / log2(i + 2)`` over 0-based positions and IDCG the
    DCG of the same scores sorted descending (the judge's own ideal ranking). All zeros or no
    scores → 0.0 (nothing relevant was retrieved: there is no ranking to be good at)."""
    def dcg(values: Sequence[int]) -> float:
        return sum(rel / math.log2(i + 2) for i, rel in enumerate(values))

    ideal = dcg(sorted(scores, reverse=True))
    return dcg(scores) / ideal if ideal > 0 else 0.0


def proxy_precision_at_k(scores: Sequence[int]) -> float:
    """Share (0-1) of the scored chunks rated ≥ 2 (fairly or highly relevant); k is the number of
    chunks scored. No scores → 0.0."""
    return sum(1 for s in scores if s >= PROXY_RELEVANT_MIN) / len(scores) if scores else 0.0


def _pooled(rows: Sequence[Any], of: Callable[[list[int]], float | None]) -> float | None:
    """``of`` the scores of every scored chunk of ``rows`` pooled; None when no chunk was scored."""
    pooled = [s for r in rows for s in (_field(r, "chunk_relevance") or [])]
    return of(pooled) if pooled else None


class RetrievalMetrics:
    """The formulas under the names the user's plan gives them (and the older static names).

    Every ``calculate_*`` works on the plan's plain dicts as well as on typed rows: retrieved chunks
    as ``{"doc_id": ...}`` (or ids, chunks, scored chunks), results as ``{"rank": ..., "total_score":
    ...}`` (a missing key counts as null)::

        m = RetrievalMetrics()
        m.calculate_rank([{"doc_id": "a"}, {"doc_id": "b"}], "b")        # 2
        m.calculate_total_score(10, 3)                                    # 9.5 (POSITION_WEIGHTS[3] = 0.95)
        m.calculate_mrr([{"rank": 1}, {"rank": None}])                    # 0.5
        m.calculate_pass_rates([{"total_score": 8.0}, {}], [7.0])         # {7.0: 50.0}
    """

    POSITION_WEIGHTS = POSITION_WEIGHTS
    rank_weight = staticmethod(rank_weight)
    calculate_rank = staticmethod(chunk_rank)
    calculate_total_score = staticmethod(total_score)
    calculate_mrr = staticmethod(mrr)
    calculate_mrr_doc = staticmethod(mrr_doc)
    calculate_hit_rate = staticmethod(hit_rate)
    calculate_pass_rates = staticmethod(pass_rates)
    calculate_average = staticmethod(average)
    calculate_mean = staticmethod(mean)
    calculate_doc_rank = staticmethod(doc_rank)
    doc_ranking = staticmethod(doc_ranking)
    reciprocal_rank = staticmethod(reciprocal_rank)
    ndcg_at_k = staticmethod(ndcg_at_k)
    relevance_grades = staticmethod(relevance_grades)
    recall_at_k = staticmethod(recall_at_k)
    average_precision_at_k = staticmethod(average_precision_at_k)
    context_precision = staticmethod(context_precision)
    row_metrics = staticmethod(row_metrics)
    proxy_ndcg_at_k = staticmethod(proxy_ndcg_at_k)
    proxy_precision_at_k = staticmethod(proxy_precision_at_k)
    PROXY_RELEVANT_MIN = PROXY_RELEVANT_MIN


# =============================================================================================
# The registry
# =============================================================================================

LEVELS = ("chunk", "document", "judge", "proxy")
UNITS = {  # unit → (what it means, how its values are written)
    "percent": "percent of questions, 0-100",
    "ratio": "0-1",
    "grade": "judge grade, 1-10",
    "score": "total score, 0-10",
    "relevance": "chunk relevance, 0-3",
}
UNIT_RANGES = {"percent": (0.0, 100.0), "ratio": (0.0, 1.0), "grade": (1.0, 10.0), "score": (0.0, 10.0),
               "relevance": (0.0, 3.0)}  # each unit's lowest and highest value (a mean of its values too)

Value = float | None
RowFunction = Callable[[Any, int], Value]  # (row, k) → the question's value


@dataclass(frozen=True)
class Metric:
    """One metric: everything the results, compare, the report and the console need to know.

    ``value(row, k)`` is the question's value in ``unit`` (None: the question is not part of the
    mean — e.g. an ungraded question for the average grade). The aggregate is the mean of the
    values, or ``empty`` when there are none; ``pooled`` replaces the mean when the aggregate is
    not a mean over questions (pooled chunk scores). ``repeats(row, k)`` gives one value per judge
    repeat (``--judge-repeats``) for the two-level intervals. ``graded_only``: meaningless when a
    run graded nothing (shown as n/a, not compared). ``requires``: a row field that must have been
    filled for the metric to be part of a run (``chunk_relevance``). ``effect``: the change
    compare's "you would need about N questions" is about, in ``unit``. ``compared`` / ``summary``:
    shown by default in compare's table / the console summary. ``lower_is_better``: the best of
    several runs is the lowest (compare's table and the report highlight the best value)."""

    key: str
    label: str
    level: str
    unit: str
    value: RowFunction
    digits: int
    effect: float
    description: str = ""
    graded_only: bool = False
    repeats: Callable[[Any, int], list[float] | None] | None = None
    empty: float | None = 0.0
    pooled: Callable[[Sequence[Any]], Value] | None = None
    requires: str | None = None
    compared: bool = True
    summary: bool = True
    lower_is_better: bool = False  # the best value of a run is the lowest (highlighted as such)

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"metric {self.key}: level {self.level!r} is not one of {', '.join(LEVELS)}")
        if self.unit not in UNITS:
            raise ValueError(f"metric {self.key}: unit {self.unit!r} is not one of {', '.join(UNITS)}")

    def label_at(self, k: int | None) -> str:
        """The label with ``@k`` written out (``nDCG@5``)."""
        return self.label.replace("@k", f"@{k}") if k is not None else self.label

    def aggregate(self, rows: Sequence[Any], k: int) -> Value:
        """The metric over ``rows`` (see the class docstring)."""
        if self.pooled is not None:
            return self.pooled(rows)
        values = [v for v in (self.value(r, k) for r in rows) if v is not None]
        return sum(values) / len(values) if values else self.empty

    def format(self, value: Any) -> str:
        """``value`` as the console and the report show it: percents with ``%``; ``-`` when absent."""
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            return "-"
        return f"{value:.{self.digits}f}" + ("%" if self.unit == "percent" else "")


METRICS: dict[str, Metric] = {}


def register_metric(metric: Metric) -> Metric:
    """Add (or replace) ``metric`` under its key; returns it."""
    METRICS[metric.key] = metric
    return metric


def unregister_metric(key: str) -> None:
    METRICS.pop(key, None)


def metrics(*, level: str | None = None, compared: bool | None = None) -> list[Metric]:
    """The registered metrics in registration order, optionally only one level or the compared ones."""
    return [m for m in METRICS.values() if (level is None or m.level == level)
            and (compared is None or m.compared == compared)]


def metric(key: str) -> Metric:
    return METRICS[key]


def in_run(rows: Sequence[Any]) -> list[Metric]:
    """The metrics a run with these rows has: every one, less those whose ``requires`` field no row filled."""
    return [m for m in METRICS.values() if m.requires is None or any(
        _get(r, m.requires) is not None or _get(r, m.requires + "_error") is not None for r in rows)]


def _get(row: Any, name: str) -> Any:
    if isinstance(row, Mapping):
        return row.get(name)
    value = getattr(row, name, None)
    if value is None and hasattr(row, "extra"):
        value = row.extra.get(name)
    return value


# ---- per-question values of the built-in metrics ----------------------------------------------

def _hit(at: int | None) -> RowFunction:
    """100 when the needle's chunk rank is within ``at`` (None: the run's k), else 0."""
    def value(row: Any, k: int) -> float:
        rank = _get(row, "rank")
        return 100.0 if rank is not None and rank <= (k if at is None else at) else 0.0
    return value


def _field_value(name: str) -> RowFunction:
    return lambda row, k: _get(row, name)


def _graded(row: Any) -> bool:
    return _get(row, "llm_grade") is not None


def not_judged(row: Any) -> bool:
    """Whether the row was left unjudged on purpose (``grade_error`` ``not judged: …``, :data:`NOT_JUDGED`)."""
    error = _get(row, "grade_error")
    return isinstance(error, str) and error.startswith(NOT_JUDGED + ":")


def grade_repeats(row: Any) -> list[float] | None:
    """The repeated grades of ``--judge-repeats`` (``llm_grades``; failed repeats left out), or None
    when the row has none. Used to widen confidence intervals by the judge's noise."""
    grades = [float(g) for g in _get(row, "llm_grades") or () if g is not None]
    return grades or None


def _total_repeats(row: Any, k: int) -> list[float] | None:
    grades = grade_repeats(row) if _graded(row) else None
    if grades is None or _get(row, "total_score") is None:
        return None
    return [total_score(g, _get(row, "rank")) for g in grades]


def _pass(threshold: float) -> tuple[RowFunction, Callable[[Any, int], list[float] | None]]:
    def value(row: Any, k: int) -> Value:
        if not_judged(row):  # left unjudged on purpose: not a question that failed
            return None
        total = _get(row, "total_score")
        return 100.0 if total is not None and total >= threshold else 0.0

    def repeats(row: Any, k: int) -> list[float] | None:
        totals = _total_repeats(row, k)
        return [100.0 if t >= threshold else 0.0 for t in totals] if totals is not None else None
    return value, repeats


def _relevance(of: Callable[[Sequence[int]], float]) -> RowFunction:
    def value(row: Any, k: int) -> Value:
        scores = _get(row, "chunk_relevance")
        return None if scores is None else of(scores)
    return value


def _pooled_share(score: int) -> Callable[[Sequence[Any]], Value]:
    return lambda rows: _pooled(rows, lambda s: 100.0 * sum(1 for x in s if x == score) / len(s))


def _recall(at: int) -> RowFunction:
    """Document-level recall of the first ``at`` retrieved chunks (the row's needles, graded or not)."""
    def value(row: Any, k: int) -> float:
        needles = getattr(row, "relevance", None) or _get(row, "needle_doc_ids") or []
        return recall_at_k(_get(row, "retrieved") or [], needles, at)
    return value


_HIT = "the question's needle document has a chunk in the top "


def hit_at(n: int) -> Metric:
    """hit@n for any cut-off n (not registered: ``--targets hit@3``); percent of questions."""
    return Metric(f"hit_at_{n}_rate", f"hit@{n}", "chunk", "percent", _hit(n), 1, 5.0, _HIT + str(n))


def recall_at(n: int) -> Metric:
    """recall@n for any cut-off n (not registered: ``--targets recall@3``); 0-1, document level."""
    return Metric(f"recall_at_{n}", f"recall@{n}", "document", "ratio", _recall(n), 3, 0.05,
                  f"share of the needle documents found in the top {n}")


def _register_builtin() -> None:
    hit = _HIT
    register_metric(Metric("accuracy", "accuracy (hit@k)", "chunk", "percent", _hit(None), 1, 5.0,
                           hit + "k (the legacy name of hit@k)", compared=False, summary=False))
    register_metric(Metric("hit_at_1_rate", "hit@1", "chunk", "percent", _hit(1), 1, 5.0,
                           "share of questions whose first retrieved chunk is from a needle document"))
    register_metric(Metric("hit_at_5_rate", "hit@5", "chunk", "percent", _hit(5), 1, 5.0, hit + "5"))
    register_metric(Metric("hit_at_k_rate", "hit@k", "chunk", "percent", _hit(None), 1, 5.0, hit + "k",
                           compared=False))
    register_metric(Metric("mrr", "MRR", "chunk", "ratio", lambda r, k: reciprocal_rank(_get(r, "rank")), 3, 0.05,
                           "mean reciprocal rank of the first needle chunk: 1 at rank 1, 1/2 at rank 2, 0 when not "
                           "retrieved"))
    register_metric(Metric("mrr_doc", "MRR (document)", "document", "ratio",
                           lambda r, k: reciprocal_rank(_get(r, "doc_rank")), 3, 0.05,
                           "mean reciprocal rank of the needle among the distinct documents retrieved"))
    register_metric(Metric("ndcg_at_k", "nDCG@k", "document", "ratio", _field_value("ndcg_at_k"), 3, 0.05,
                           "normalised discounted cumulative gain of the document ranking, the needles' grades as "
                           "gains (1 = every needle first, the best graded first)"))
    register_metric(Metric("recall_at_k", "recall@k", "document", "ratio", _field_value("recall_at_k"), 3, 0.05,
                           "share of the needle documents found in the top k", compared=False))
    register_metric(Metric("map_at_k", "MAP@k", "document", "ratio", _field_value("ap_at_k"), 3, 0.05,
                           "mean average precision of the document ranking", compared=False))
    register_metric(Metric("context_precision", "context precision", "chunk", "ratio",
                           _field_value("context_precision"), 3, 0.05,
                           "share of the retrieved chunks that come from a needle document", compared=False))
    register_metric(Metric("avg_llm_grade", "avg grade", "judge", "grade",
                           lambda r, k: _get(r, "llm_grade"), 2, 0.5,
                           "the judge's mean grade (1-10) of how well the chunks answer the question, over graded "
                           "questions", graded_only=True, repeats=lambda r, k: grade_repeats(r) if _graded(r) else None,
                           empty=None))
    register_metric(Metric("avg_total_score", "avg total", "judge", "score",
                           lambda r, k: _get(r, "total_score"), 2, 0.5,
                           "mean of grade × rank weight (1.0 at rank 1, 0.95 at 2-3, 0.85 at 4-5, 0.6 when the needle "
                           "is not retrieved), over graded questions", graded_only=True, repeats=_total_repeats,
                           empty=None))
    for threshold, key in ((8.0, "pass_rate_8"), (7.0, "pass_rate_7"), (6.5, "pass_rate_6_5")):
        value, repeats = _pass(threshold)
        register_metric(Metric(key, f"pass ≥ {threshold:g}", "judge", "percent", value, 1, 5.0,
                               f"share of all questions whose total score is at least {threshold:g} (an ungraded "
                               "question does not pass; one left unjudged on purpose is left out)", graded_only=True,
                               repeats=repeats,
                               compared=threshold == PASS_MARK))
    register_metric(Metric("proxy_ndcg_at_k", "proxy nDCG (judge-rated chunks)", "proxy", "ratio",
                           _relevance(proxy_ndcg_at_k), 3, 0.05,
                           "nDCG of the retrieved order against the judge's own 0-3 chunk ratings (a proxy: the "
                           "relevant chunks never retrieved are not seen)", requires="chunk_relevance", empty=None,
                           compared=False))
    register_metric(Metric("proxy_precision_at_k", "proxy precision (chunks rated ≥ 2)", "proxy", "ratio",
                           _relevance(proxy_precision_at_k), 3, 0.05,
                           "share of the retrieved chunks the judge rated fairly or highly relevant (2-3 of 3)",
                           requires="chunk_relevance", empty=None, compared=False))
    register_metric(Metric("proxy_avg_chunk_relevance", "proxy mean chunk relevance (0-3)", "proxy", "relevance",
                           _relevance(lambda s: sum(s) / len(s) if s else None), 2, 0.1,
                           "the judge's mean 0-3 rating of the retrieved chunks, pooled over every rated chunk",
                           pooled=lambda rows: _pooled(rows, lambda s: sum(s) / len(s)), requires="chunk_relevance",
                           empty=None, compared=False))
    register_metric(Metric("proxy_highly_relevant_rate", "proxy share of chunks rated 3", "proxy", "percent",
                           _relevance(lambda s: 100.0 * sum(1 for x in s if x == 3) / len(s) if s else None), 1, 5.0,
                           "percent of the rated chunks the judge rated highly relevant (3)", pooled=_pooled_share(3),
                           requires="chunk_relevance", empty=None, compared=False))
    register_metric(Metric("proxy_irrelevant_rate", "proxy share of chunks rated 0", "proxy", "percent",
                           _relevance(lambda s: 100.0 * sum(1 for x in s if x == 0) / len(s) if s else None), 1, 5.0,
                           "percent of the rated chunks the judge rated irrelevant (0)", pooled=_pooled_share(0),
                           requires="chunk_relevance", empty=None, compared=False, lower_is_better=True))


_register_builtin()
