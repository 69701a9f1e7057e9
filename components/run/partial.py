"""What is known of one question while the loop works on it (:class:`Partial`), and how repeated
grades become one (:func:`combine_grades`)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from components.core import Question, ScoredChunk
from components.judges.retrieval_grader import GradeResult
from components.run.calls.query_rewriter import RewriteResult
from utils.results import QuestionResult


@dataclass(frozen=True)
class NotCalled:
    """What the loop's admission point gives for a call it did not make: ``instead``, the refusal."""

    instead: Any


@dataclass
class Partial:
    """What is known of a question so far: enough to write its row whatever fails later."""

    q: Question
    retrieved: list[ScoredChunk] = field(default_factory=list)
    latency_ms: float = 0.0
    rewrite: RewriteResult | None = None
    grade: GradeResult | None = None
    grades: list[GradeResult] = field(default_factory=list)
    relevance: Any = None
    cost: float | None = None
    reversed_grade: GradeResult | None = None  # --order-check: the grade of the same chunks in reverse order
    by_judge: dict = field(default_factory=dict)  # a panel: judge name → its JudgeGrade
    panel_value: float | None = None  # a panel: the unrounded aggregate
    panel_graded: int | None = None  # a panel: how many judges graded
    repeats_asked: int | None = None  # --repeat-where uncertain: the grades asked of each judge (1 or N)

    def add_cost(self, cost: float | None) -> None:
        """Add one call's cost (None: unknown, not added) to the row's."""
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost


def typed_rows(done: Mapping[str, QuestionResult | Mapping] | None) -> dict[str, QuestionResult]:
    """Rows taken over from an earlier run, as typed rows (a mapping is read and checked)."""
    return {qid: row if isinstance(row, QuestionResult) else QuestionResult.from_json(row, f"row {qid!r}")
            for qid, row in (done or {}).items()}


def combine_grades(grades: list[GradeResult]) -> GradeResult:
    """One :class:`GradeResult` from repeated grades: the median grade (rounded half up) of those
    that graded, with the reasoning and reply of the call closest to it (and its ``clamped_from``
    when that call's grade is the median); the first error when none graded."""
    graded = [g for g in grades if g.grade is not None]
    if not graded:
        return grades[0]
    if len(graded) == 1 and len(grades) == 1:
        return graded[0]
    median = statistics.median(g.grade for g in graded)
    value = int(math.floor(median + 0.5))
    closest = min(graded, key=lambda g: abs(g.grade - value))
    return replace(closest, grade=value, latency_ms=sum(g.latency_ms for g in grades),
                   clamped_from=closest.clamped_from if closest.grade == value else None)
