"""The judge side of the question loop: the one protocol every run's judges answer, whether the
run has one judge (:class:`OneJudge`, the panel of one) or a panel (:class:`components.run.panel.judges.Panel`).

A :class:`Judges` grades a question's chunks (:meth:`Judges.grade`: each judge in turn, with its
repeats, through the loop's one admission point — the ``--max-cost`` budget, the ``--concurrency``
gate), says which of its judges the retry pass grades again, writes its part of the row
(:meth:`~Judges.row_fields`) and of the run (``run.judge``: :meth:`~Judges.run_judge`, the results'
``panel`` section: :meth:`~Judges.section`, what ``run.cost_note`` says of its prices), and says which
of its judges became unusable. Each judge's own state — usage, fatal failure, circuit breaker, batch
engine — is its :class:`~components.run.judge.LoopJudge`.

The loop (:mod:`components.run.benchmark_loop`) is the ``loop`` argument: it provides the calls'
admission (``call``), the budget, the stop flag, the lock, and the run's options (``repeats``,
``repeat_rule``, ``order_check``, ``retry_wait_max_s``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from components.core import Chunk, Question
from components.judges.llm import RETRIED_KINDS
from components.judges.retrieval_grader import GradeResult
from components.run.calls.budget import BudgetRefused, through
from components.run.judge import LoopJudge
from components.run.order_check import reversed_order
from components.run.panel.grading import MEDIAN, transient
from components.run.partial import NotCalled, Partial, combine_grades
from components.run.usage import Usage
from utils.errors import JudgeError
from utils.metrics import RetrievalMetrics as M
from utils.results import JudgeGrade, JudgeInfo, QuestionResult


class Judges:
    """The judges of a run as the loop grades with them (module docstring). ``resumed``: the grades
    ``--resume`` keeps (question id → judge name → grade: those judges are not called again)."""

    def __init__(self, members: Sequence[LoopJudge], method: str = MEDIAN,
                 resumed: Mapping[str, Mapping[str, JudgeGrade]] | None = None) -> None:
        self.members = list(members)
        self.method = method
        self.resumed = {q: dict(g) for q, g in (resumed or {}).items()}
        self.usage = Usage()  # every judge call of the run (chunk relevance and the order check included)

    @property
    def first(self) -> LoopJudge:
        """The judge that rates chunks (and whose grade the order check repeats)."""
        return self.members[0]

    @property
    def names(self) -> list[str]:
        return [m.name for m in self.members if m.name is not None]

    @property
    def failure(self) -> JudgeError | None:
        """The first fatal judge error (of any judge)."""
        return next((m.failure for m in self.members if m.failure is not None), None)

    @property
    def rate_limited(self) -> str | None:
        """The first circuit breaker's reason, once one opened."""
        return next((m.rate_limited for m in self.members if m.rate_limited is not None), None)

    def through(self, budget) -> None:
        """Every judge's calls through the ``--max-cost`` budget, each at its own cap and price."""
        for member in self.members:
            member.judge = through(budget, member.judge)

    def batch_mode(self) -> None:
        """Their calls go through a batch API (priced as such)."""
        for usage in (self.usage, *(m.usage for m in self.members)):
            usage.batch = True

    # ------------------------------------------------------------------ one call

    def refusal(self, loop, member: LoopJudge) -> GradeResult | None:
        """The grade of a call ``member`` must not get (it became unusable, its circuit breaker opened,
        or ``--max-cost`` is spent), or None. The one admission point of every grading call; the
        budget then reserves the call's own worst case (:mod:`components.run.calls.budget`)."""
        with loop._lock:
            error = member.refusal()
        if error is None and loop.budget_exhausted:
            error = loop.budget.refused
        return None if error is None else GradeResult(None, None, 0.0, error, None)

    def grade_once(self, loop, q: Question, chunks: list[Chunk], member: LoopJudge | None = None) -> GradeResult:
        """One grading call of ``q`` by ``member`` (default: the first judge)."""
        member = member or self.first
        refused = self.refusal(loop, member)
        if refused is not None:
            return refused
        try:  # asked again once the gate admits it: other calls may have changed that while it waited
            result = loop.call(lambda: member.judge.grade(q.question, q.expected_answer, chunks),
                               lambda: self.refusal(loop, member))
            if isinstance(result, NotCalled):
                return result.instead
        except BudgetRefused as refused_call:  # --max-cost: the call's worst case does not fit
            return GradeResult(None, None, 0.0, str(refused_call), None)
        except JudgeError as err:  # fatal: stop calling the judge
            loop.stop_if_signalled(err)
            with loop._lock:
                return member.fail(err)
        with loop._lock:
            loop.saw_retry_after(result.retry_after)
            member.observe(result, loop.retry_wait_max_s)
        return result

    def count(self, loop, reply, member: LoopJudge | None = None) -> float | None:
        """Count one reply in the run's judge usage (and its judge's); its cost."""
        with loop._lock:
            if member is not None:
                member.usage.add(reply)
            return self.usage.add(reply)

    # ------------------------------------------------------------------ one question

    def grade(self, loop, p: Partial, chunks: list[Chunk]) -> None:
        """Every judge grades ``p``, in order; a judge whose grade ``--resume`` kept is not called
        (:meth:`grade_by`)."""
        kept = self.resumed.get(p.q.id, {})
        p.by_judge.update({m.name: kept[m.name] for m in self.members if m.name in kept})
        self.grade_by(loop, p, chunks, [m for m in self.members if m.name not in kept])

    def grade_by(self, loop, p: Partial, chunks: list[Chunk], todo: Sequence[LoopJudge]) -> None:
        """The judges of ``todo`` grade ``p``, in order. Under ``--repeat-where uncertain`` each judge
        grades once, then again only when the rule asks. Then their grades become the question's
        (:meth:`settle`) and, with ``--order-check``, the first judge grades the chunks in reverse order."""
        grades = self.grade_lists(p, todo)
        costs = {m.name: self.calls(loop, p, chunks, loop.repeat_rule.first_calls(loop.repeats), grades[m.name], m)
                 for m in todo}
        first = [g[0].grade for g in grades.values()] + [(j.grades or [j.grade])[0] for n, j in p.by_judge.items()
                                                         if n not in grades]
        if self.more(loop, p, first):
            for m in todo:
                more = self.calls(loop, p, chunks, loop.repeats - 1, grades[m.name], m)
                costs[m.name] = costs[m.name] if more is None else (costs[m.name] or 0.0) + more
        self.settle(p, todo, grades, costs)
        self.order_check(loop, p, chunks)

    def grade_lists(self, p: Partial, todo: Sequence[LoopJudge]) -> dict[str | None, list[GradeResult]]:
        """Where each judge of ``todo`` puts its grades of ``p`` as they come."""
        return {m.name: [] for m in todo}

    def calls(self, loop, p: Partial, chunks: list[Chunk], n: int, into: list[GradeResult],
              member: LoopJudge) -> float | None:
        """``n`` grading calls of ``p`` by ``member``, appended to ``into``; their cost (None: none known)."""
        cost = None
        for _ in range(n):
            if loop.should_stop():
                raise KeyboardInterrupt("stop requested")
            g = self.grade_once(loop, p.q, chunks, member)
            into.append(g)
            spent = self.count(loop, g.reply, member)
            cost = cost if spent is None else (cost or 0.0) + spent
        return cost

    @staticmethod
    def more(loop, p: Partial, first: Sequence[int | None]) -> bool:
        """Whether ``p``, whose judges' first grades are ``first``, gets its other repeats
        (:mod:`components.run.repeat_where`); under ``uncertain`` the row records how many it got."""
        if not loop.repeat_rule.selective or loop.repeats == 1:
            return False
        wanted = loop.repeat_rule.wants_more(first, M.calculate_rank(p.retrieved, p.q.needle_doc_ids))
        p.repeats_asked = loop.repeats if wanted else 1
        return wanted

    def settle(self, p: Partial, todo: Sequence[LoopJudge], grades: Mapping[str | None, list[GradeResult]],
               costs: Mapping[str | None, float | None]) -> None:
        """The question's grade from its judges' grades."""
        raise NotImplementedError

    def order_check(self, loop, p: Partial, chunks: list[Chunk]) -> None:
        """``--order-check`` (one judge only): the first judge grades the chunks again in reverse order."""
        flipped = reversed_order(chunks) if p.q.id in loop.order_check else None
        if flipped is None or p.grade is None or p.grade.grade is None:
            return
        if loop.should_stop():
            raise KeyboardInterrupt("stop requested")
        p.reversed_grade = self.grade_once(loop, p.q, flipped)
        p.add_cost(self.count(loop, p.reversed_grade.reply))

    def rates_chunks(self, loop) -> bool:
        """Whether chunk relevance (the first judge's) may be asked now."""
        with loop._lock:
            return not loop.budget_exhausted and self.first.failure is None and self.first.rate_limited is None

    def row_fields(self, p: Partial) -> dict:
        """What the judges add to a question's row."""
        return {}

    # ------------------------------------------------------------------ the retry pass

    @staticmethod
    def failed_transiently(p: Partial, chunks: Sequence[Chunk]) -> bool:
        """Whether a grade of ``p`` failed transiently (the retry pass grades it again)."""
        return bool(chunks) and p.grade is not None and (
            (p.grade.error or "").split(":", 1)[0] in RETRIED_KINDS and bool(p.grade.error)
            or any(map(transient, p.by_judge.values())))

    def retried(self, loop, p: Partial) -> list[LoopJudge]:
        """The judges the retry pass grades ``p`` again with."""
        raise NotImplementedError

    def wants_retry(self, loop, p: Partial, row: QuestionResult) -> bool:
        raise NotImplementedError

    def can_retry(self) -> bool:
        """Whether the retry pass may call the judges at all."""
        return True

    def regrade(self, loop, p: Partial, chunks: list[Chunk]) -> bool:
        """The retry pass's grading of ``p`` (by :meth:`retried`); whether it brought a grade."""
        todo = self.retried(loop, p)
        if not todo:
            return False
        self.grade_by(loop, p, chunks, todo)
        return self.regraded(p, todo)

    def regraded(self, p: Partial, todo: Sequence[LoopJudge]) -> bool:
        raise NotImplementedError

    # ------------------------------------------------------------------ the run's record

    def run_judge(self, judging, repeats: int) -> JudgeInfo:
        """``run.judge``."""
        raise NotImplementedError

    def price_notes(self, judging) -> list[str]:
        """What ``run.cost_note`` says of the judges whose model has no price."""
        return [n for m in judging.seats if m.setup.judge is not None
                for n in [m.setup.judge_provider.prices.note(m.setup.judge.model)] if n]

    def section(self, rows: Sequence[QuestionResult], k: int) -> dict | None:
        """The results' ``panel`` section (None: none)."""
        return None

    def unusable_lines(self, rows: Sequence[QuestionResult]) -> list[str]:
        """The lines that say which judges became unusable (the run's end logs the one judge's itself)."""
        return []

    def failure_to_log(self, loop) -> Any:
        """The failure the run's end logs (a judge's, or the query rewriter's), or None."""
        return self.failure or loop.rewriter_failure


class OneJudge(Judges):
    """The run's one judge: the panel of one, whose grade is the question's."""

    @classmethod
    def start(cls, judging, method: str = MEDIAN, kept: Mapping | None = None) -> OneJudge:
        return cls([LoopJudge(None, judging.judge)])

    def grade_lists(self, p: Partial, todo: Sequence[LoopJudge]) -> dict[str | None, list[GradeResult]]:
        p.grades = []  # the row's own list (a retry's replace the failed attempt's; its cost stays counted)
        return {None: p.grades}

    def settle(self, p: Partial, todo: Sequence[LoopJudge], grades: Mapping[str | None, list[GradeResult]],
               costs: Mapping[str | None, float | None]) -> None:
        p.add_cost(costs[None])
        p.grade = combine_grades(p.grades)

    def retried(self, loop, p: Partial) -> list[LoopJudge]:
        return [self.first]

    def wants_retry(self, loop, p: Partial, row: QuestionResult) -> bool:
        return row.llm_grade is None

    def can_retry(self) -> bool:
        return self.failure is None and self.rate_limited is None

    def regraded(self, p: Partial, todo: Sequence[LoopJudge]) -> bool:
        return p.grade is not None and p.grade.grade is not None

    def run_judge(self, judging, repeats: int) -> JudgeInfo:
        return judging.judge_info("judge", repeats, self.usage.models)

    def price_notes(self, judging) -> list[str]:
        setup = judging.setup
        note = setup.judge_provider.prices.note(self.run_judge(judging, 1).model) if setup.calls_models else None
        return [note] if note else []

    # ------------------------------------------------------------------ before the run (the settings' judge)

    @staticmethod
    def check(settings, *, rewrites_queries: bool = False) -> list:
        """The start-up check of the judge's models (:func:`components.judges.setup.check_models`)."""
        from components.judges.setup import check_models

        return [check_models(settings, rewrites_queries=rewrites_queries)]

    @staticmethod
    def seats(judging) -> list:
        """Each judge's own ``Judging`` (:class:`~components.run.evaluation.Judging`): the one judge's."""
        return [judging]

    @staticmethod
    def budget_names(settings) -> list[str]:
        """How ``--max-cost``'s refusal names each judge (none: "the judge")."""
        return []

    @staticmethod
    def check_options(*, order_check: object = None) -> None:
        """Refuse the run options this judge side does not take (:class:`InputError`): none."""
        return None

    @staticmethod
    def judges_now(settings, setups: Sequence) -> list[tuple[str | None, str, str | None]]:
        """(name, provider, model) of each judge (model None: it calls no model)."""
        setup = setups[0]
        return [(None, setup.judge_provider.name, setup.judge.model if setup.judge is not None else None)]

    @staticmethod
    def console_lines(settings, setups: Sequence, method: str) -> list[str]:
        """The start-up line that says which judge grades."""
        return [setups[0].console_line(settings)]

    @staticmethod
    def identity(settings, method: str) -> dict:
        """What the journal's header adds to the resume identity (nothing: the judge is named already)."""
        return {}

    @staticmethod
    def kept(rows: Mapping[str, QuestionResult], settings) -> tuple[dict, dict]:
        """``--resume``: ``(the graded rows, taken over as they are; no grade kept per judge)``."""
        return {qid: row for qid, row in rows.items() if row.llm_grade is not None}, {}

    @staticmethod
    def estimate(retriever, questions: Sequence, k: int, judging, *, strategy: str = "?", repeats: int = 1,
                 relevance: bool = False, rewrites: bool = False, order_check=(), known_answers: int | None = None):
        """The :class:`~components.run.estimate.CostEstimate` of grading ``questions``."""
        from components.run.estimate import estimate

        return estimate(retriever, questions, k, judging.setup, strategy=strategy, repeats=repeats,
                        order_check=order_check, relevance=relevance, rewrites=rewrites, known_answers=known_answers)

    @staticmethod
    def batch(judging, settings, engine):
        """``--judge-batch``'s engine: ``engine(setup)`` (a :class:`~components.run.calls.judge_batch.BatchJudge`)."""
        return engine(judging.setup)
