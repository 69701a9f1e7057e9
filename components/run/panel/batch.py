"""``--judge-batch`` with a panel of judges: each judge's grading requests through its own
provider's batch API (every judge of the panel must have one: the run refuses otherwise, as for one
judge).

Retrieval runs once, in order, as in :func:`components.run.calls.judge_batch.run_batch`; then each judge in
panel order submits, polls and collects its own batch(es) of the questions it has not graded yet
(with the same prompt, request settings, transient re-submission and fatal failures as one judge's
batch: a judge whose batch API fails becomes unusable, and the others go on). Each batch's record
names its judge (``judge`` in ``run.judge_batch`` and the journal), so ``--resume`` collects each
judge's batches without submitting them again and submits only what a judge has not graded. Rows
are finished in question order once every judge is collected, each with every judge's grade and
the panel's aggregate; an interruption writes the questions not finished as ``batch_pending``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from components.core import Question
from components.judges.retrieval_grader import GradeResult, prompt_variant
from components.run.partial import combine_grades, typed_rows
from components.run.calls.batch_blocks import in_blocks, set_unjudged
from components.run.calls.judge_batch import (BatchJudge, BatchRecord, _adopt, _annotated, _grade, _Item,
                                              _pending_error, _round, first_grades, retrieve_all)
from components.run.panel.grading import judge_grade
from components.run.repeat_where import more_repeats
from utils.results import JudgeGrade, QuestionResult


@dataclass
class PanelBatch:
    """The batch engines of a panel's judges, by judge name, in panel order."""

    judges: dict[str, BatchJudge]

    @property
    def all_records(self) -> list[BatchRecord]:
        return [r for judge in self.judges.values() for r in judge.all_records]

    def run(self, loop: Any, questions: Sequence[Question], done: Mapping | None, previous: Sequence[object] = (),
            grouped: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
            blocks: Sequence[int] = ()) -> list[QuestionResult]:
        """The run's questions graded through each judge's batches (:func:`run_panel_batch`)."""
        return run_panel_batch(loop, questions, done, self, previous, grouped=grouped, blocks=blocks)


def run_panel_batch(loop: Any, questions: Sequence[Question], done: Mapping | None, batch: PanelBatch,
                    previous: Sequence[object] = (),
                    grouped: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
                    blocks: Sequence[int] = ()) -> list[QuestionResult]:
    """Every question with ``loop`` and each judge's grades from its batches (module docstring);
    as :func:`components.run.calls.judge_batch.run_batch` for one judge (``blocks`` too)."""
    loop.begin()
    loop.judges.batch_mode()
    for member in loop.judges.members:  # each judge's own engine
        member.batch = batch.judges[member.name]
    done = typed_rows(done)
    kept = loop.judges.resumed
    wanted = {q.id for q in questions if q.id not in done}
    items: list[_Item] = []
    per_judge: dict[str, dict[str, _Item]] = {}
    n = len(questions)
    try:
        owned = {name: _adopt(judge, [p for p in previous if _judge_of(p) == name],
                              {q for q in wanted if name not in kept.get(q, {})}, loop.repeats)
                 for name, judge in batch.judges.items()}
        retrieve_all(loop, questions, done, items)
        for block in in_blocks(items, blocks):  # one block unless judged adaptively
            set_unjudged(loop, block)
            waiting = [it for it in block if it.waiting]
            for member in loop.judges.members:
                mine = [replace(it, entries={}, sources=list(owned[member.name].get(it.q.id, ())), error=None,
                                recovered=False) for it in waiting if member.name not in kept.get(it.q.id, {})]
                per_judge.setdefault(member.name, {}).update({it.q.id: it for it in mine})
                if mine:
                    _grade(loop, member.batch, mine, adopted=bool(owned[member.name]),
                           settled=set(done), member=member)
            # --repeat-where uncertain: the repeats the first grades ask for
            more = more_repeats(loop, waiting, lambda it: _first_grades(loop, it, per_judge))
            in_block = {it.q.id for it in waiting}
            for member in loop.judges.members if more else ():
                mine = {q: it for q, it in per_judge.get(member.name, {}).items() if q in in_block}
                if any(q in mine for q in more):
                    _round(loop, member.batch, list(mine.values()), [mine[q] for q in more if q in mine],
                           more, set(done), member)
            with grouped():
                for it in block:
                    loop.finish(it.index + 1, n, it.done if it.done is not None else it.row if it.row is not None
                                else _row(loop, it, per_judge))
        for judge in batch.judges.values():
            for record in judge.records:
                if record.status in ("collected", "partial"):
                    judge.mark(record, record.status)
    except KeyboardInterrupt:
        for it in items[len(loop.results):]:
            if it.done is not None or it.row is not None:
                loop.finish(it.index + 1, n, it.done if it.done is not None else it.row)
            else:
                loop.keep(_pending_row(loop, it, per_judge))
        raise
    return loop.results


def _judge_of(record: object) -> str | None:
    parsed = BatchRecord.from_json(record)
    return parsed.judge if parsed is not None else None


def _first_grades(loop: Any, it: _Item, per_judge: Mapping[str, Mapping[str, _Item]]) -> list | None:
    """Each judge's first grade of ``it`` (a grade ``--resume`` kept, or its first request's); None
    when no judge's first request has an answer."""
    kept = loop.judges.resumed.get(it.q.id, {})
    answered = [first_grades(per_judge[m.name][it.q.id]) for m in loop.judges.members
                if m.name not in kept and it.q.id in per_judge.get(m.name, {})]
    if all(a is None for a in answered):
        return None
    return [g for a in answered if a is not None for g in a] + [(j.grades or [j.grade])[0] for j in kept.values()]


def _row(loop: Any, it: _Item, per_judge: Mapping[str, Mapping[str, _Item]]) -> QuestionResult:
    """The finished row of a question every judge's batches graded (or that ``--resume`` kept)."""
    p = it.partial
    variant = prompt_variant(it.q.expected_answer)
    kept = loop.judges.resumed.get(it.q.id, {})
    recovered = False
    try:
        for member in loop.judges.members:
            if member.name in kept:
                p.by_judge[member.name] = kept[member.name]
                continue
            mine = per_judge[member.name][it.q.id]
            if mine.entries:
                grades = [mine.entries[r].grade(variant, mine.latency_ms) for r in sorted(mine.entries)]
            else:
                error = mine.error or (f"judge_unusable: not graded after an earlier {member.failure.kind} error"
                                       if member.failure is not None and mine.batch is None else _pending_error(mine))
                grades = [GradeResult(None, None, 0.0, error, None, variant)]
            cost = None
            for g in grades:
                spent = loop.judges.count(loop, g.reply, member)
                cost = cost if spent is None else (cost or 0.0) + spent
            p.by_judge[member.name] = judge_grade(combine_grades(grades), grades, cost)
            if cost is not None:
                p.cost = (p.cost or 0.0) + cost
            recovered = recovered or (mine.recovered and p.by_judge[member.name].grade is not None)
        loop.judges.aggregate(p, variant)
        row = loop.row(p, it.rank, None)
        return _annotated(loop, it, replace(row, recovered=True) if recovered else row)
    except (Exception, SystemExit) as err:  # its grades are in hand: kept in the row, even after a signal
        return loop.failed_row(p, err)


def _pending_row(loop: Any, it: _Item, per_judge: Mapping[str, Mapping[str, _Item]]) -> QuestionResult:
    """After an interruption: a question not finished, each judge's grade pending (results only)."""
    p = it.partial
    variant = prompt_variant(it.q.expected_answer)
    kept = loop.judges.resumed.get(it.q.id, {})
    for member in loop.judges.members:
        mine = per_judge.get(member.name, {}).get(it.q.id)
        p.by_judge[member.name] = kept.get(member.name) or JudgeGrade(error=_pending_error(mine or it))
    loop.judges.aggregate(p, variant)
    return loop.row(p, it.rank, None)
