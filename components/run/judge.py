"""One judge as the question loop calls it (:class:`LoopJudge`): its grader and everything the run
keeps of it — its usage, its first fatal error, its circuit breaker, its batch engine. The run's one
judge is one; a panel (``--judges``) has one per judge (:mod:`components.run.judges`).

**The circuit breaker** (:meth:`LoopJudge.observe`): after :data:`BREAKER_THRESHOLD` rate-limit or
overload failures in a row whose ``retry-after`` is missing or longer than the retry pass would wait,
the judge is not called again in this run: the questions left are written without its grade
(``rate_limit: …``) and the run ends ``rate_limited`` (exit 3), for ``--resume`` to finish later.
A judge's own counters (failures in a row of a kind, grades missed) belong here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loguru import logger

from components.judges.retrieval_grader import GradeResult
from components.run.retry_policy import JudgeHealth
from components.run.usage import Usage
from utils.errors import JudgeError

BREAKER_THRESHOLD = 3  # consecutive rate-limit/overload failures that open the circuit breaker
RATE_LIMIT_KINDS = frozenset({"rate_limit", "overloaded"})


@dataclass
class LoopJudge:
    """One judge as the loop calls it: its grader and its own state. ``name`` None: the run's one
    judge (no panel)."""

    name: str | None
    judge: Any
    failure: JudgeError | None = None  # its first fatal error: it is not called again
    rate_limited: str | None = None  # its circuit breaker's reason, once it opened
    limited_in_a_row: int = 0
    usage: Usage = field(default_factory=Usage)  # its own calls' usage
    batch: Any = None  # --judge-batch: its BatchJudge (components/run/calls/judge_batch.py)
    health: JudgeHealth | None = None  # its timeouts / refused connections in a row (components/run/retry_policy.py)

    def __post_init__(self) -> None:
        self.health = self.health or JudgeHealth(self.name, panel_file=self.name is not None)

    def label(self) -> str:
        """How messages name it: "the judge", or "judge <name>" in a panel."""
        return "the judge" if self.name is None else f"judge {self.name}"

    def refusal(self) -> str | None:
        """The grade error of a call it must not get (it became unusable, or its breaker opened), or None."""
        if self.failure is not None:
            return f"judge_unusable: not graded after an earlier {self.failure.kind} error"
        return self.rate_limited

    def unusable(self) -> str | None:
        """Why it stopped grading (its fatal error, or its breaker's reason), or None."""
        if self.failure is not None:
            return f"{self.failure.kind}: {self.failure}"
        return self.rate_limited

    def fail(self, err: JudgeError) -> GradeResult:
        """A fatal error of one of its calls: it is not called again; the grade of that call."""
        if self.name is not None:  # a panel: the judge is named wherever the error is shown
            err = JudgeError(err.kind, f"judge {self.name}: {err}", fatal=True)
        first = self.failure is None
        self.failure = self.failure or err
        if self.name is None:
            logger.error("judge unusable ({}): {}", err.kind, err)
        elif first:
            logger.error("{} unusable ({}): {}; its grades are null from here, the other judges go on",
                         self.label(), err.kind, err)
        return GradeResult(None, None, 0.0, f"{err.kind}: {err}", None)

    def observe(self, result: GradeResult, retry_wait_max_s: float) -> None:
        """The circuit breaker (module docstring), after each of its grading calls."""
        if self.failure is None and (gave_up := self.health.observe(result)) is not None:
            self.failure = gave_up  # unusable, as after a fatal error (components/run/retry_policy.py)
            logger.error("{}", gave_up)
        kind = (result.error or "").split(":", 1)[0]
        if result.grade is not None or kind not in RATE_LIMIT_KINDS:
            self.limited_in_a_row = 0 if result.grade is not None else self.limited_in_a_row
            return
        if result.retry_after is not None and result.retry_after <= retry_wait_max_s:
            return  # a short wait: the retry pass will honour it
        self.limited_in_a_row += 1
        if self.limited_in_a_row >= BREAKER_THRESHOLD and self.rate_limited is None:
            wait = f"retry-after {result.retry_after:g} s" if result.retry_after is not None else "no retry-after"
            self.rate_limited = (f"rate_limit: not graded: {self.label()} answered {kind} {self.limited_in_a_row} "
                                 f"times in a row ({wait}); the run stopped calling it: --resume grades this question "
                                 "later")
            logger.error("{} is rate-limited ({} {} times in a row, {}): {}; the rest of the questions are written "
                         "{} for --resume", self.label().capitalize(), kind, self.limited_in_a_row, wait,
                         "grading stops" if self.name is None else "its grading stops, the other judges go on",
                         "ungraded" if self.name is None else "without its grade")


Member = LoopJudge  # the name the panel's modules knew it by
