"""What the question loop needs to grade with a panel of judges (``--judges``): each judge's own
state, its grade of a question as the row keeps it, and the panel's aggregate.

Every judge of the panel grades every question (:class:`components.run.panel.judges.Panel`, each
judge a :class:`components.run.judge.LoopJudge` with its own circuit breaker and fatal failure).

**The aggregate** (:func:`panel_outcome`) of the judges that graded a question: their median
(``--panel-aggregate median``, the default; two middle grades average) or mean, kept unrounded in
``panel_grade``; ``llm_grade`` is that value rounded half up (7.5 → 8), as ``--judge-repeats``
rounds, so every metric, report and recipe reads a panel run as it reads any run.
``panel_graded`` counts the judges that graded. When none did, ``llm_grade`` is null and
``grade_error`` is the first judge's error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from components.analysis.panel_grade import MEAN, MEDIAN, aggregate, round_half_up  # noqa: F401 - the run's names
from components.judges.llm import RETRIED_KINDS
from components.judges.retrieval_grader import GradeResult
from utils.results import JudgeGrade


def judge_grade(result: GradeResult, repeats: Sequence[GradeResult] | None, cost: float | None) -> JudgeGrade:
    """One judge's grade of one question as the row keeps it (``grades_by_judge``)."""
    reply = result.reply
    return JudgeGrade(grade=result.grade, reasoning=result.reasoning,
                      error=result.error if result.grade is None else None,
                      raw_reply=result.raw, model=reply.model if reply else None,
                      grades=[g.grade for g in repeats] if repeats is not None and len(repeats) > 1 else None,
                      input_tokens=reply.input_tokens if reply else None,
                      output_tokens=reply.output_tokens if reply else None, cost_usd=cost,
                      latency_ms=round(sum(g.latency_ms for g in repeats or [result]), 3))


@dataclass(frozen=True)
class PanelOutcome:
    """A question's panel result: ``grade`` (what the row's ``llm_grade`` and ``grade_error`` come
    from), the unrounded ``value`` and how many judges graded."""

    grade: GradeResult
    value: float | None
    graded: int


def panel_outcome(by_judge: Mapping[str, JudgeGrade], names: Sequence[str], method: str,
                  variant: str = "reference") -> PanelOutcome:
    """The aggregate of the judges of ``names`` that graded (module docstring)."""
    grades = [by_judge[n].grade for n in names if n in by_judge and by_judge[n].grade is not None]
    latency = sum(by_judge[n].latency_ms for n in names if n in by_judge)
    if not grades:
        error = next((by_judge[n].error for n in names if n in by_judge and by_judge[n].error), None)
        return PanelOutcome(GradeResult(None, None, latency, error, None, variant), None, 0)
    value = aggregate(grades, method)
    return PanelOutcome(GradeResult(round_half_up(value), None, latency, None, None, variant), round(value, 4),
                        len(grades))


def transient(grade: JudgeGrade | None) -> bool:
    """Whether a judge's grade failed by a transient error (the retry pass grades it again)."""
    return grade is not None and grade.grade is None and (grade.error or "").split(":", 1)[0] in RETRIED_KINDS
