"""The judge's signal check: do its grades follow whether the needle was retrieved?

A run knows, for every question, whether a chunk of the needle was retrieved in the top k. A judge
whose grades carry information grades those questions higher than the ones whose needle was not
retrieved; a judge that answers 8 to everything does not. The check costs no call: it reads the
run's own rows.

:func:`judge_signal` (grades and needle ranks → :class:`JudgeSignal`) gives:

* ``gap``: the mean grade of the questions whose needle was in the top k (``n_found``) minus that of
  the others (``n_missed``), with ``ci95``, Welch's 95% interval
  (:func:`components.stats.statistics.welch_ci`; no spread on either side: the gap itself);
* ``top_grade`` and ``top_grade_share``: the most common grade and its share (0-1) of the graded
  questions (reported, not voted);
* ``spearman_rr``: Spearman's rank correlation of the grade with the reciprocal rank of the needle
  (0 when it was not retrieved) (reported, not voted);
* ``verdict``, the rule: **inconclusive** when either group has fewer than :data:`MIN_GROUP` (5)
  questions; **uninformative** when the interval's upper end is under :data:`GAP` (1 grade point);
  **informative** when its lower end is at least 1; **inconclusive** otherwise. A run where every
  needle was found is therefore inconclusive, never uninformative.

Only the graded questions count. The run's judge gets its check in ``run.judge.judge_signal``
(:func:`with_judge_signal`, from ``llm_grade``: a panel's aggregate); each judge of a panel in
``panel.per_judge.<name>.judge_signal`` (:func:`components.analysis.panel.panel_section`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from components.stats.agreement import spearman_rho
from components.stats.statistics import OVER, UNDER, against, welch_ci
from utils.records.judge_signal import (FIELD, GAP, INCONCLUSIVE, INFORMATIVE, MIN_GROUP, UNINFORMATIVE, VERDICTS,
                                        JudgeSignal, member_signals, signal_of)
from utils.results import QuestionResult, RunInfo

__all__ = ["FIELD", "GAP", "INCONCLUSIVE", "INFORMATIVE", "MIN_GROUP", "UNINFORMATIVE", "VERDICTS", "JudgeSignal",
           "judge_signal", "member_signals", "rows_signal", "signal_of", "verdict", "with_judge_signal"]

def verdict(ci: Sequence[float] | None, n_found: int, n_missed: int) -> str:
    """The module docstring's rule."""
    if n_found < MIN_GROUP or n_missed < MIN_GROUP:
        return INCONCLUSIVE
    return {UNDER: UNINFORMATIVE, OVER: INFORMATIVE}.get(against(ci, GAP), INCONCLUSIVE)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def judge_signal(grades: Sequence[int | float | None], ranks: Sequence[int | None], k: int) -> JudgeSignal:
    """The signal check of one judge from each question's grade (None: not graded, left out) and its needle's
    chunk rank (None: not retrieved); the needle counts as found when its rank is at most ``k``."""
    if len(grades) != len(ranks):
        raise ValueError("judge_signal: one rank per grade")
    pairs = [(float(g), r) for g, r in zip(grades, ranks, strict=True) if g is not None]
    found = [g for g, r in pairs if r is not None and r <= k]
    missed = [g for g, r in pairs if r is None or r > k]
    ci = welch_ci(found, missed)
    interval = [round(ci[0], 6), round(ci[1], 6)] if ci is not None else None
    counts = Counter(pairs_grade for pairs_grade, _ in pairs)
    top = min(counts, key=lambda g: (-counts[g], g)) if counts else None
    rho = spearman_rho([g for g, _ in pairs], [1.0 / r if r is not None and r >= 1 else 0.0 for _, r in pairs])
    mean_found, mean_missed = _mean(found), _mean(missed)
    gap = mean_found - mean_missed if mean_found is not None and mean_missed is not None else None
    return JudgeSignal(
        verdict=verdict(ci, len(found), len(missed)), gap=None if gap is None else round(gap, 6), ci95=interval,
        n_found=len(found), n_missed=len(missed),
        mean_found=None if mean_found is None else round(mean_found, 6),
        mean_missed=None if mean_missed is None else round(mean_missed, 6),
        top_grade=None if top is None else int(top),
        top_grade_share=round(counts[top] / len(pairs), 6) if pairs else None,
        spearman_rr=None if rho is None else round(rho, 6), k=k)


def rows_signal(rows: Sequence[QuestionResult], k: int) -> JudgeSignal:
    """The signal check of the judge whose grades are the rows' ``llm_grade``."""
    return judge_signal([r.llm_grade for r in rows], [r.rank for r in rows], k)


def with_judge_signal(run: RunInfo, rows: Sequence[QuestionResult]) -> RunInfo:
    """``run`` with ``run.judge.judge_signal``: the check of the grades the rows hold (a panel's: its aggregate)."""
    signal = rows_signal(rows, run.k)
    return replace(run, judge=replace(run.judge, details={**run.judge.details, FIELD: signal.to_json()}))
