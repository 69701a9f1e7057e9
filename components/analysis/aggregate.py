"""The run's aggregation: a run's rows → its :class:`~utils.results.RunResult`.

:func:`build_report` is the only place a run's results are made: the aggregates, intervals and
groups of every metric of the registry (:mod:`utils.metrics`), the diagnosis counts, the counts,
the judge's consistency across repeats, the order check and the quality bands
(:mod:`utils.quality_bands`). The intervals are the percentile bootstrap of
:mod:`components.stats.statistics`.
"""

from __future__ import annotations

import json
import statistics as _stats
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from components.stats import statistics as S
from components.analysis.diagnosis import count_tags
from components.analysis.judge_signal import with_judge_signal
from utils import metrics as M
from utils.quality_bands import quality_bands
from utils.records.sections import Bootstrap, JudgeConsistency, OrderCheck
from utils.results import QuestionResult, RunInfo, RunResult

GROUP_FIELDS = ("category", "difficulty", "type", "section")  # grouped by default when the rows carry them
MISSING_GROUP = "(none)"  # the group of rows that lack the field
_ROW_METRIC_FIELDS = ("doc_rank", "hit_at_k", "rr", "rr_doc", "ndcg_at_k", "recall_at_k", "ap_at_k",
                      "context_precision")


def with_row_metrics(result: QuestionResult | Mapping, k: int) -> QuestionResult:
    """``result`` with every per-row metric field set: kept when present, else derived from
    ``retrieved`` + ``needle_doc_ids`` and their grades (rows built before those fields existed). A row given as a
    mapping (a journal line taken over by ``--resume``) is read with :meth:`QuestionResult.from_json`."""
    if isinstance(result, Mapping):
        result = QuestionResult.from_json(result)
    if all(getattr(result, name) is not None for name in _ROW_METRIC_FIELDS):
        return result
    derived = M.row_metrics(result.retrieved, result.relevance, k)
    return replace(result, **{name: derived[name] for name in _ROW_METRIC_FIELDS if getattr(result, name) is None})


def run_metrics(rows: Sequence[QuestionResult], relevance: bool) -> list[M.Metric]:
    """The registry's metrics a run has: all, less those needing a field the run did not fill
    (the proxy metrics without chunk relevance)."""
    return [m for m in M.metrics() if m.requires is None or (m.requires == "chunk_relevance" and relevance)]


def confidence_intervals(rows: Sequence[QuestionResult], k: int, chosen: Sequence[M.Metric]
                         ) -> tuple[dict[str, list[float] | None], Bootstrap]:
    """95% percentile-bootstrap CI of each metric's mean over questions, in its unit, and the
    bootstrap's record ``{resamples, seed, method}``. A metric resamples the questions that have a
    value (the graded ones for the average grade); with judge repeats (``llm_grades``) the
    grade-based metrics are two-level (components.stats.statistics). Pooled metrics (not a mean
    over questions) and fewer than 2 questions → null."""
    columns: dict[str, list] = {}
    for m in chosen:
        if m.pooled is not None:
            continue
        values = []
        for r in rows:
            v = m.value(r, k)
            if v is None:
                values.append(None)
                continue
            repeats = m.repeats(r, k) if m.repeats is not None else None
            values.append(repeats if repeats else v)
        columns[m.key] = values
    by_mask: dict[tuple[bool, ...], list[str]] = {}
    for name, values in columns.items():
        by_mask.setdefault(tuple(v is not None for v in values), []).append(name)
    ci95: dict[str, list[float] | None] = {}
    for names in by_mask.values():
        cols = [[v for v in columns[name] if v is not None] for name in names]
        intervals = S.bootstrap_cis(cols, resamples=S.RESAMPLES, seed=S.BOOTSTRAP_SEED)
        for name, interval in zip(names, intervals, strict=True):
            ci95[name] = [round(interval[0], 6), round(interval[1], 6)] if interval else None
    two_level = any(M.grade_repeats(r) is not None for r in rows)
    record = Bootstrap(S.RESAMPLES, S.BOOTSTRAP_SEED, S.METHOD + ("-two-level" if two_level else ""))
    return {m.key: ci95.get(m.key) for m in chosen}, record


def _group_value(result: QuestionResult, name: str) -> str:
    value = result.extra[name] if name in result.extra else getattr(result, name, None)
    if value is None:
        return MISSING_GROUP
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def group_metrics(rows: Sequence[QuestionResult], k: int, group_by: Sequence[str] | None = None,
                  chosen: Sequence[M.Metric] | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    """``{field: {value: {count, <each metric's aggregate>}}}``; values sorted, rows lacking the
    field under ``"(none)"``. ``group_by`` None → each of category/difficulty/type/section that at
    least one row carries in ``extra``."""
    chosen = list(chosen) if chosen is not None else run_metrics(rows, False)
    names = [f for f in GROUP_FIELDS if any(f in r.extra for r in rows)] if group_by is None else group_by
    groups: dict[str, dict[str, dict[str, Any]]] = {}
    for name in names:
        members: dict[str, list[QuestionResult]] = {}
        for r in rows:
            members.setdefault(_group_value(r, name), []).append(r)
        groups[name] = {value: {"count": len(rs), **{m.key: m.aggregate(rs, k) for m in chosen}}
                        for value, rs in sorted(members.items())}
    return groups


def judge_consistency(rows: Sequence[QuestionResult]) -> JudgeConsistency | None:
    """With judge repeats: how many questions were graded more than once, the share (percent) whose
    grade moved by 2 or more between repeats, and the mean standard deviation of their grades.
    None when no row has repeated grades. Under ``--repeat-where uncertain`` (rows with
    ``judge_repeats``) it covers only the questions the rule repeated, chosen by their first grade
    (:mod:`components.run.repeat_where`): it says so with ``repeat_where`` and ``graded``, the graded
    questions they were chosen from."""
    spreads = [(r.grade_spread, r.grade_sd) for r in rows if r.grade_spread is not None]
    if not spreads:
        return None
    chosen = any(r.judge_repeats is not None for r in rows)  # --repeat-where uncertain chose the repeated ones
    moved = sum(1 for s, _ in spreads if s >= 2)
    return JudgeConsistency(
        questions=len(spreads), moved_2_or_more_rate=round(100.0 * moved / len(spreads), 4),
        mean_sd=round(_stats.fmean(sd for _, sd in spreads if sd is not None), 4),
        repeat_where="uncertain" if chosen else None,
        graded=sum(1 for r in rows if r.llm_grade is not None) if chosen else None)


def order_check(rows: Sequence[QuestionResult]) -> OrderCheck | None:
    """With ``--order-check``: over the questions graded in both orders, the mean absolute grade
    change when the chunks are reversed, the share (percent) whose pass/fail at the pass mark flips,
    and the mean signed change (reversed − original) with its paired 95% bootstrap interval. None
    when no question was checked."""
    pairs = [(r.llm_grade, r.llm_grade_reversed, r.rank) for r in rows
             if r.llm_grade is not None and r.llm_grade_reversed is not None]
    if not pairs:
        return None
    changes = [float(b - a) for a, b, _ in pairs]
    flips = sum(1 for a, b, rank in pairs
                if (M.total_score(a, rank) >= M.PASS_MARK) != (M.total_score(b, rank) >= M.PASS_MARK))
    ci = S.bootstrap_ci(changes)
    return OrderCheck(questions=len(pairs), mean_abs_change=round(_stats.fmean(abs(c) for c in changes), 4),
                      flip_rate=round(100.0 * flips / len(pairs), 4), mean_change=round(_stats.fmean(changes), 4),
                      mean_change_ci95=[round(ci[0], 4), round(ci[1], 4)] if ci else None,
                      errors=sum(1 for r in rows if r.order_check_error))


def build_report(run: RunInfo, rows: Iterable[QuestionResult | Mapping], *, index_time_s: float | None = None,
                 group_by: Sequence[str] | None = None, relevance: bool = False, diagnosed: bool = True) -> RunResult:
    """The run's :class:`RunResult`: every metric of the registry the run has (see
    :func:`run_metrics`), their intervals and groups, the counts and the diagnosis counts (none
    when the run was not ``diagnosed``), and the judge's signal check (``run.judge.judge_signal``,
    :mod:`components.analysis.judge_signal`). Rows without the per-row metric fields get them derived."""
    k = run.k
    rows = [with_row_metrics(r, k) for r in rows]
    chosen = run_metrics(rows, relevance)
    ci95, record = confidence_intervals(rows, k, chosen)
    graded = [r for r in rows if r.llm_grade is not None]
    errors = Counter(r.grade_error.split(":", 1)[0] for r in rows if r.grade_error)
    metrics = {m.key: m.aggregate(rows, k) for m in chosen}
    run = with_judge_signal(run, rows)  # run.judge.judge_signal: do the grades follow the needle?
    return RunResult(
        run=run, rows=rows, metrics=metrics, ci95=ci95, bootstrap=record,
        groups=group_metrics(rows, k, group_by, [m for m in chosen if m.pooled is None]),
        question_count=len(rows), graded_count=len(graded), ungraded_count=len(rows) - len(graded),
        grade_errors=dict(sorted(errors.items())), avg_latency_ms=M.average(r.latency_ms for r in rows),
        index_time_s=index_time_s, diagnosis_counts=count_tags(rows) if diagnosed else None,
        chunk_relevance_count=sum(1 for r in rows if r.chunk_relevance is not None) if relevance else None,
        judge_consistency=judge_consistency(rows), order_check=order_check(rows),
        quality_bands=quality_bands(metrics, k, ci95))
