"""Typed records of a benchmark run and the results file they are dumped to.

The file is ``{"schema_version", "run": RunInfo, <Aggregates at top level>, "results": [QuestionResult]}``
and is always written atomically (temp file in the same folder, then ``os.replace``), as strict JSON
with every secret redacted (:func:`to_strict_json`), to a path :func:`resolve_output` accepted.
"""

from __future__ import annotations

import json
import math
import numbers
import os
import stat
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from utils.errors import InputError, ResultsWriteError
from utils.metrics import PASS_THRESHOLDS
from utils.metrics import RetrievalMetrics as M
from utils.redaction import Redactor

SCHEMA_VERSION = 2


@dataclass(frozen=True)
class RetrievedItem:
    rank: int
    doc_id: str
    chunk_id: str
    score: float | None
    title: str | None = None
    heading_path: list[str] | None = None
    text: str | None = None  # the chunk's indexed text, as shown to the judge (None with --no-text)


@dataclass(frozen=True)
class QuestionResult:
    question_id: str
    question: str
    expected_answer: str | None
    needle_doc_id: str  # the first needle; all of them in needle_doc_ids
    needle_doc_ids: list[str]
    needle_found: bool
    rank: int | None
    hit_at_1: bool
    hit_at_5: bool
    llm_grade: int | None
    llm_reasoning: str | None
    grade_error: str | None  # "<kind>: <message>", see README
    llm_raw_reply: str | None
    prompt_variant: str  # "reference" | "reference_free"
    total_score: float | None
    latency_ms: float  # retrieval
    grading_latency_ms: float
    retrieved: list[RetrievedItem]
    extra: dict = field(default_factory=dict)  # the question's unknown fields (category, reference_ranks...)
    # issue 13, from RetrievalMetrics.row_metrics(retrieved, needle_doc_ids, k); None = not computed
    # (aggregate() then derives them from retrieved + needle_doc_ids)
    doc_rank: int | None = None  # document level: position among the distinct documents of the top k
    hit_at_k: bool | None = None  # chunk rank <= k
    rr: float | None = None  # chunk level: 1/rank, 0 when not found
    rr_doc: float | None = None  # document level: 1/doc_rank, 0 when not found
    ndcg_at_k: float | None = None  # document level
    recall_at_k: float | None = None  # document level
    ap_at_k: float | None = None  # document level (pytrec_eval map_cut_k)
    context_precision: float | None = None  # chunk level: share of the top k chunks from a needle doc
    # the judge call (issue 11): what the API said about it
    stop_reason: str | None = None
    request_id: str | None = None
    judge_model: str | None = None  # the model id the reply names
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cost_usd: float | None = None  # the judge calls of this row (null: no price known, or offline)
    # the query (issue 11): the rewritten query, or the question when it was not rewritten
    query_used: str | None = None
    query_rewrite_error: str | None = None
    recovered: bool = False  # graded by the retry pass after a transient failure
    # judge repeats (issue 15): every grade when the question was graded more than once
    llm_grades: list[int | None] | None = None
    grade_spread: int | None = None  # max - min of the repeated grades
    grade_sd: float | None = None  # their population standard deviation
    # annotations (issues 14, 15): added by the run's annotators, null when not computed
    needle_best_chunk: dict | None = None
    diagnosis: dict | None = None
    chunk_relevance: list[int] | None = None
    chunk_relevance_error: str | None = None
    chunk_relevance_raw: str | None = None

    def to_json(self) -> dict:
        row = asdict(self)
        extra = row.pop("extra")
        row.update({k: v for k, v in extra.items() if k not in row})
        return row

    @classmethod
    def from_json(cls, row: dict) -> QuestionResult:
        """The inverse of :meth:`to_json` (a row of a results file or a journal, e.g. for
        ``--resume``): known fields by name, the question's own fields back into ``extra``."""
        names = {f.name for f in fields(cls)} - {"extra"}
        known = {k: v for k, v in row.items() if k in names}
        known["retrieved"] = [RetrievedItem(**{k: v for k, v in item.items() if k in _RETRIEVED_FIELDS})
                              for item in row.get("retrieved") or [] if isinstance(item, dict)]
        return cls(**known, extra={k: v for k, v in row.items() if k not in names})


@dataclass(frozen=True)
class Aggregates:
    accuracy: float  # legacy name: percent of questions with the needle in the top k
    hit_at_1_rate: float  # percent
    hit_at_5_rate: float  # percent
    mrr: float  # 0-1
    avg_llm_grade: float | None
    avg_total_score: float | None
    pass_rate_8: float  # percent of all questions
    pass_rate_7: float
    pass_rate_6_5: float
    question_count: int
    graded_count: int
    ungraded_count: int
    grade_errors: dict[str, int]  # error kind → count
    avg_latency_ms: float | None  # retrieval
    index_time_s: float
    # issue 13 (defaults only so that older constructors keep working: aggregate() sets every one)
    hit_at_k_rate: float = 0.0  # percent, chunk rank <= k (the same number as ``accuracy``)
    mrr_doc: float = 0.0  # 0-1, document level
    ndcg_at_k: float = 0.0  # 0-1, document level
    recall_at_k: float = 0.0  # 0-1, document level
    map_at_k: float = 0.0  # 0-1, document level
    context_precision: float = 0.0  # 0-1, chunk level
    ci95: dict[str, list[float] | None] = field(default_factory=dict)  # name → [lo, hi] in its unit, or null
    bootstrap: dict[str, Any] = field(default_factory=dict)  # {resamples, seed, method}
    groups: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # field → value → {count, ...}


# Every aggregate quality metric: these get a ci95 entry and appear in each group.
QUALITY_METRICS = ("accuracy", "hit_at_1_rate", "hit_at_5_rate", "hit_at_k_rate", "mrr", "mrr_doc", "ndcg_at_k",
                   "recall_at_k", "map_at_k", "context_precision", "avg_llm_grade", "avg_total_score",
                   "pass_rate_8", "pass_rate_7", "pass_rate_6_5")
GROUP_FIELDS = ("category", "difficulty", "type", "section")  # grouped by default when the rows carry them
MISSING_GROUP = "(none)"  # the group of rows that lack the field
_ROW_METRIC_FIELDS = ("doc_rank", "hit_at_k", "rr", "rr_doc", "ndcg_at_k", "recall_at_k", "ap_at_k",
                      "context_precision")


_RETRIEVED_FIELDS = {f.name for f in fields(RetrievedItem)}


def with_row_metrics(result: QuestionResult | dict, k: int) -> QuestionResult:
    """``result`` with every issue-13 per-row field set: kept when present, else derived from
    ``retrieved`` + ``needle_doc_ids`` (rows built before those fields existed). A row given as a
    dict (taken over by ``--resume``) is read with :meth:`QuestionResult.from_json`."""
    if isinstance(result, dict):
        result = QuestionResult.from_json(result)
    if all(getattr(result, name) is not None for name in _ROW_METRIC_FIELDS):
        return result
    derived = M.row_metrics(result.retrieved, result.needle_doc_ids, k)
    return replace(result, **{name: derived[name] for name in _ROW_METRIC_FIELDS if getattr(result, name) is None})


def grade_repeats(result: Any) -> list[float] | None:
    """The repeated grades of ``--judge-repeats`` (``llm_grades``; failed repeats left out), or None
    when the row has none. Used only to widen confidence intervals by the judge's noise."""
    raw = result.get("llm_grades") if isinstance(result, dict) else (
        getattr(result, "llm_grades", None) or result.extra.get("llm_grades"))
    grades = [float(g) for g in raw or () if g is not None]
    return grades or None


def _hit(k: int) -> Callable[[QuestionResult], float]:
    return lambda r: 100.0 if r.rank is not None and r.rank <= k else 0.0


def _totals(r: QuestionResult) -> list[float] | float | None:
    repeats = grade_repeats(r)
    if repeats is None:
        return r.total_score
    return [M.calculate_total_score(g, r.rank) for g in repeats] if r.total_score is not None else None


def _passes(threshold: float) -> Callable[[QuestionResult], Any]:
    def value(r: QuestionResult) -> Any:
        totals = _totals(r)
        if isinstance(totals, list):
            return [100.0 if t >= threshold else 0.0 for t in totals]
        return 100.0 if totals is not None and totals >= threshold else 0.0
    return value


def _per_question(k: int) -> dict[str, Callable[[QuestionResult], Any]]:
    """Per question, the value whose mean over questions is each quality aggregate (None = the question
    is not part of that mean; a list = the question's judge repeats)."""
    return {
        "accuracy": _hit(k), "hit_at_1_rate": _hit(1), "hit_at_5_rate": _hit(5), "hit_at_k_rate": _hit(k),
        "mrr": lambda r: M.reciprocal_rank(r.rank), "mrr_doc": lambda r: M.reciprocal_rank(r.doc_rank),
        "ndcg_at_k": lambda r: r.ndcg_at_k, "recall_at_k": lambda r: r.recall_at_k, "map_at_k": lambda r: r.ap_at_k,
        "context_precision": lambda r: r.context_precision,
        "avg_llm_grade": lambda r: (grade_repeats(r) or r.llm_grade) if r.llm_grade is not None else None,
        "avg_total_score": _totals,
        "pass_rate_8": _passes(8.0), "pass_rate_7": _passes(7.0), "pass_rate_6_5": _passes(6.5),
    }


def quality_metrics(results: Sequence[QuestionResult], k: int) -> dict[str, float | None]:
    """Every quality aggregate of ``results`` (rows with their per-row fields set, see
    :func:`with_row_metrics`), by the RetrievalMetrics formulas. Empty → rates 0.0, averages None."""
    passes = M.calculate_pass_rates(results, PASS_THRESHOLDS)
    return {
        "accuracy": M.calculate_hit_rate(results, k),
        "hit_at_1_rate": M.calculate_hit_rate(results, 1),
        "hit_at_5_rate": M.calculate_hit_rate(results, 5),
        "hit_at_k_rate": M.calculate_hit_rate(results, k),
        "mrr": M.calculate_mrr(results),
        "mrr_doc": M.calculate_mrr_doc(results),
        "ndcg_at_k": M.calculate_mean(r.ndcg_at_k for r in results),
        "recall_at_k": M.calculate_mean(r.recall_at_k for r in results),
        "map_at_k": M.calculate_mean(r.ap_at_k for r in results),
        "context_precision": M.calculate_mean(r.context_precision for r in results),
        "avg_llm_grade": M.calculate_average(r.llm_grade for r in results),
        "avg_total_score": M.calculate_average(r.total_score for r in results),
        "pass_rate_8": passes[8.0],
        "pass_rate_7": passes[7.0],
        "pass_rate_6_5": passes[6.5],
    }


def confidence_intervals(results: Sequence[QuestionResult], k: int) -> tuple[dict[str, list[float] | None],
                                                                              dict[str, Any]]:
    """95% percentile-bootstrap CI of every quality aggregate over questions, in the aggregate's unit
    (percent for rates), and the bootstrap's record ``{resamples, seed, method}``.

    Averages over graded questions (``avg_llm_grade``, ``avg_total_score``) resample the graded
    questions; the rest resample all questions. Rows with ``llm_grades`` make the grade-based
    aggregates (average grade, total score, pass rates) two-level: one of the question's repeated
    grades per drawn question (see components.analysis.statistics). Fewer than 2 questions → null."""
    from components.analysis import statistics as S

    columns = {name: [value(r) for r in results] for name, value in _per_question(k).items()}
    by_mask: dict[tuple[bool, ...], list[str]] = {}
    for name, values in columns.items():
        by_mask.setdefault(tuple(v is not None for v in values), []).append(name)
    ci95: dict[str, list[float] | None] = {}
    for mask, names in by_mask.items():
        cols = [[v for v in columns[name] if v is not None] for name in names]
        for name, interval in zip(names, S.bootstrap_cis(cols, resamples=S.RESAMPLES, seed=S.BOOTSTRAP_SEED)):
            ci95[name] = [round(interval[0], 6), round(interval[1], 6)] if interval else None
    two_level = any(grade_repeats(r) is not None for r in results)
    record = {"resamples": S.RESAMPLES, "seed": S.BOOTSTRAP_SEED,
              "method": S.METHOD + ("-two-level" if two_level else "")}
    return {name: ci95[name] for name in QUALITY_METRICS}, record


def _group_value(result: QuestionResult, name: str) -> str:
    value = result.extra[name] if name in result.extra else getattr(result, name, None)
    if value is None:
        return MISSING_GROUP
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def group_metrics(results: Sequence[QuestionResult], k: int, group_by: Sequence[str] | None = None
                  ) -> dict[str, dict[str, dict[str, Any]]]:
    """``{field: {value: {count, <every quality aggregate>}}}``; values sorted, rows lacking the field
    under ``"(none)"``. ``group_by`` None → each of category/difficulty/type/section that at least one
    row carries in ``extra``."""
    fields = [f for f in GROUP_FIELDS if any(f in r.extra for r in results)] if group_by is None else group_by
    groups: dict[str, dict[str, dict[str, Any]]] = {}
    for name in fields:
        members: dict[str, list[QuestionResult]] = {}
        for r in results:
            members.setdefault(_group_value(r, name), []).append(r)
        groups[name] = {value: {"count": len(rows), **quality_metrics(rows, k)}
                        for value, rows in sorted(members.items())}
    return groups


def aggregate(results: Sequence[QuestionResult], index_time_s: float, k: int = 5, *,
              group_by: Sequence[str] | None = None) -> Aggregates:
    """The run's aggregates; see :func:`quality_metrics`, :func:`confidence_intervals` and
    :func:`group_metrics`. Rows without the issue-13 per-row fields get them derived."""
    results = [with_row_metrics(r, k) for r in results]
    quality = quality_metrics(results, k)
    ci95, record = confidence_intervals(results, k)
    graded = [r for r in results if r.llm_grade is not None]
    errors = Counter(r.grade_error.split(":", 1)[0] for r in results if r.grade_error)
    return Aggregates(
        **{name: quality[name] for name in ("accuracy", "hit_at_1_rate", "hit_at_5_rate", "mrr", "avg_llm_grade",
                                            "avg_total_score", "pass_rate_8", "pass_rate_7", "pass_rate_6_5")},
        question_count=len(results),
        graded_count=len(graded),
        ungraded_count=len(results) - len(graded),
        grade_errors=dict(sorted(errors.items())),
        avg_latency_ms=M.calculate_average(r.latency_ms for r in results),
        index_time_s=index_time_s,
        **{name: quality[name] for name in ("hit_at_k_rate", "mrr_doc", "ndcg_at_k", "recall_at_k",
                                            "context_precision")},
        map_at_k=quality["map_at_k"],
        ci95=ci95,
        bootstrap=record,
        groups=group_metrics(results, k, group_by),
    )


@dataclass(frozen=True)
class JudgeInfo:
    """Which judge graded, what was asked of it, and what answered (the query rewriter has the
    same record in ``run.rewriter``). ``details`` are the provider's own settings (e.g. thinking,
    effort, max_tokens, lifecycle), written beside the common fields."""

    provider: str  # a provider's name ("offline", "anthropic", ...)
    model: str  # the requested model id, or the offline judge's name
    prompt_sha256: str
    reference_free_prompt_sha256: str
    timeout_s: float | None
    note: str
    mode: str = "sequential"  # "sequential" | "batch"
    requested_model: str | None = None
    reply_models: list[str] = field(default_factory=list)  # the model ids the replies named
    repeats: int = 1
    relevance_prompt_sha256: str | None = None  # the chunk-relevance prompt, when chunks were rated
    details: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        data = asdict(self)
        details = data.pop("details")
        data.update({k: v for k, v in details.items() if k not in data})
        return data


@dataclass(frozen=True)
class CorpusInfo:
    source: str
    documents: int
    chunks: int
    sha256: str


@dataclass
class RunInfo:
    started_at: str
    finished_at: str | None
    status: str  # "completed" | "interrupted" | "judge_failed"
    strategy: str
    k: int
    quick: bool
    questions_file: str
    questions_sha256: str
    corpus: CorpusInfo
    judge: JudgeInfo
    python: str
    packages: dict[str, str]
    judge_failure: str | None = None  # the fatal judge error, when status is "judge_failed"
    log_file: str | None = None
    id: str | None = None  # "<UTC time>_<strategy>", the name of its file under runs/
    rewriter: JudgeInfo | None = None  # the query rewriter's model, when the strategy rewrites
    usage: dict = field(default_factory=dict)  # {"judge": {...}, "rewriter": {...}}: calls, tokens, cost
    cost_usd: float | None = None  # all LLM calls of the run; null when a price is unknown
    cost_note: str | None = None
    max_cost_usd: float | None = None
    recovered: int = 0  # rows the retry pass graded after a transient failure
    resumed_from: str | None = None
    resumed_rows: int = 0  # rows taken over from --resume without a new judge call
    journal: str | None = None  # the run's journal (deleted once the results are written)
    selection: dict = field(default_factory=dict)  # {"limit": N, "ids": [...]} when questions were selected
    index: dict | None = None  # {"cache": "hit" | "miss" | "off", "key": str | None}, see components/run/index_cache.py
    # --judge-batch: each Message Batch (id, status, processing_status, request_counts, retry, resumed,
    # custom_ids {custom id: question id}); null in a sequential run
    judge_batch: list[dict] | None = None


def build_report(run: RunInfo, aggregates: Aggregates, results: Iterable[QuestionResult | dict]) -> dict:
    run_json = asdict(run)
    run_json["judge"] = run.judge.to_json()
    if run.rewriter is not None:
        run_json["rewriter"] = run.rewriter.to_json()
    return {"schema_version": SCHEMA_VERSION, "run": run_json, **asdict(aggregates),
            "results": [r if isinstance(r, dict) else r.to_json() for r in results]}


