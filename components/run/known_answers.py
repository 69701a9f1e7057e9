"""Known answers before paying for a run (``--known-answers N``): can the judge tell the needle from other text?

Before any question is judged, the judge grades N questions twice, where the right answer is known:

* **which questions**: the first N, in the questions file's order, whose retrieval holds a chunk of a needle's
  document (in a recorded run: the recorded item) (:func:`choose`). Fewer than N such questions, or none at all:
  bad input, one line saying how many (:class:`~utils.errors.InputError`);
* **what it is shown**: once the retrieved chunks of the needle's documents (best first), once as many of the
  top-ranked retrieved chunks of *other* documents — the question's own retrieval first, then what the questions
  before and after it retrieved, in file and rank order (a question whose retrieval is only its needle borrows
  them); each pair is graded by the same judge object (``grade(question, expected_answer, chunks)``: the run's
  grader), two calls per question;
* **what is recorded** (:class:`KnownAnswers`): per question both grades; over the questions both graded, the
  paired separation (needle − other) with its 95% interval (one-sample t,
  :func:`components.stats.statistics.paired_t_ci`: with zero spread, both bounds are the mean itself) and the AUC
  of the needle grades against the other grades (ties count half);
* **the rule**: **blind** when the interval's upper end is under :data:`SEPARATION` (1 grade point);
  **discriminates** when its lower end is at least 1; **inconclusive** otherwise (and below 2 pairs: no interval).

A blind judge stops the run before any question is judged (status ``judge_blind``, exit 3): grading with it would
measure the judge, not the retrieval. In a panel each judge is checked, and a blind one is named.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any, Protocol

from loguru import logger

from components.core.chunk import Chunk
from components.core.questions import Question
from components.stats.statistics import OVER, UNDER, against, auc, paired_t_ci
from utils.console import escape_control
from utils.errors import InputError
from utils.metrics import NOT_JUDGED
from utils.records.known_answers import (BLIND, DISCRIMINATES, FIELD, INCONCLUSIVE, METHOD, VERDICTS, KnownAnswer,
                                         KnownAnswers)

__all__ = ["BLIND", "DISCRIMINATES", "FIELD", "INCONCLUSIVE", "METHOD", "SEPARATION", "STATUS", "VERDICTS",
           "Judge", "KnownAnswer", "KnownAnswers", "Outcome", "Pair", "blind", "check_count", "check_judges",
           "check_number", "choose", "estimate_calls", "grade_pairs", "parse_count", "record", "run_check", "start",
           "stop_line", "summarize", "verdict"]

SEPARATION = 1.0  # grade points: the least a judge that tells the needle from other text puts between them
STATUS = "judge_blind"  # the run's status when a blind judge stopped it


class Judge(Protocol):
    """What is graded with: the run's grader (:class:`components.judges.retrieval_grader.RetrievalGrader`, the
    offline judge, or a scripted one in tests)."""

    def grade(self, question: str, expected_answer: str | None, chunks: Sequence[Chunk]) -> Any: ...


@dataclass(frozen=True)
class Pair:
    """One chosen question and what the judge is shown: its needle's chunks and as many chunks of other documents."""

    question: Question
    needle: list[Chunk]
    other: list[Chunk]


def verdict(ci: Sequence[float] | None) -> str:
    """The module docstring's rule."""
    return {UNDER: BLIND, OVER: DISCRIMINATES}.get(against(ci, SEPARATION), INCONCLUSIVE)


def check_count(value: object, total: int) -> int:
    """``--known-answers``'s N: a whole number from 1 to the ``total`` questions of the run. Raises
    :class:`InputError` (one line) for 0, a negative number, a non-integer or more than the questions."""
    number = value
    if isinstance(value, str):
        try:
            number = int(value.strip())
        except ValueError:
            number = None
    if isinstance(number, bool) or not isinstance(number, int):
        raise InputError(f"--known-answers {value!r}: give a whole number of questions, from 1 to the run's {total}")
    if number < 1 or number > total:
        raise InputError(f"--known-answers {number}: give a number of questions from 1 to the run's {total} "
                         f"({'at least 1' if number < 1 else f'the run has {total}'})")
    return number


def _needle_chunks(question: Question, retrieved: Sequence[Chunk]) -> list[Chunk]:
    needles = set(question.needle_doc_ids)
    return [c for c in retrieved if c.doc_id in needles]


def _others(question: Question, own: Sequence[Chunk], pool: Sequence[Chunk], wanted: int) -> list[Chunk]:
    """Up to ``wanted`` chunks of documents that are not the question's needles: its own retrieval's first."""
    needles, seen, out = set(question.needle_doc_ids), set(), []
    for chunk in [*own, *pool]:
        if chunk.doc_id in needles or chunk.chunk_id in seen:
            continue
        seen.add(chunk.chunk_id)
        out.append(chunk)
        if len(out) == wanted:
            break
    return out


def choose(questions: Sequence[Question], retrieve: Callable[[Question], Sequence[Chunk]], n: int,
           strategy: str = "the strategy") -> list[Pair]:
    """The first ``n`` questions (file order) whose retrieval holds a needle's chunk, each with what it is shown
    (module docstring). ``retrieve(question)`` gives its retrieved chunks, best first (called once per question,
    in order, until ``n`` are found; then on for the others' chunks only when one lacks them). Raises
    :class:`InputError` when no question retrieved its needle, or fewer than ``n`` did."""
    n = check_count(n, len(questions))
    retrieved: dict[str, list[Chunk]] = {}
    chosen: list[Question] = []
    for q in questions:
        retrieved[q.id] = list(retrieve(q))
        if _needle_chunks(q, retrieved[q.id]):
            chosen.append(q)
            if len(chosen) == n:
                break
    if not chosen:
        raise InputError(f"--known-answers: {strategy} retrieved no chunk of a needle's document for any of the "
                         f"{len(retrieved)} questions, so no answer is known to show the judge: run without "
                         "--known-answers, or with a strategy that retrieves the needles")
    if len(chosen) < n:
        raise InputError(f"--known-answers {n}: only {len(chosen)} of the {len(questions)} questions retrieved a chunk "
                         f"of their needle's document with {strategy}: give --known-answers {len(chosen)} or fewer")

    def pool() -> list[Chunk]:
        return [c for chunks in retrieved.values() for c in chunks]

    pairs = []
    for q in chosen:
        needle = _needle_chunks(q, retrieved[q.id])
        other = _others(q, retrieved[q.id], pool(), len(needle))
        for rest in (x for x in questions if x.id not in retrieved):  # borrow further only when short
            if len(other) == len(needle):
                break
            retrieved[rest.id] = list(retrieve(rest))
            other = _others(q, retrieved[q.id], pool(), len(needle))
        if not other:
            raise InputError(f"--known-answers: no question's retrieval with {strategy} holds a chunk of a document "
                             f"other than {q.id!r}'s needle, so there is nothing wrong to show the judge beside it")
        pairs.append(Pair(q, needle, other))
    return pairs


def _graded(result: Any) -> tuple[int | None, str | None]:
    grade = getattr(result, "grade", None)
    return grade, None if grade is not None else (getattr(result, "error", None) or "no grade")


def grade_pairs(pairs: Sequence[Pair], judge: Judge, name: str | None = None,
                on_reply: Callable[[Any], None] = lambda result: None) -> KnownAnswers:
    """Grade every pair with ``judge`` (two calls each: the needle's chunks, then the others') and judge the
    separation (module docstring); ``on_reply(result)`` sees each call's result (the run counts its usage). A fatal
    judge error propagates (the run stops as for any grading call)."""
    rows = []

    def call(q: Question, chunks: Sequence[Chunk]) -> tuple[int | None, str | None]:
        result = judge.grade(q.question, q.expected_answer, chunks)
        on_reply(result)
        return _graded(result)

    for pair in pairs:
        q = pair.question
        needle, needle_error = call(q, pair.needle)
        other, other_error = call(q, pair.other)
        error = "; ".join(f"{side}: {e}" for side, e in (("needle", needle_error), ("other", other_error)) if e)
        rows.append(KnownAnswer(q.id, needle, other, [c.chunk_id for c in pair.needle],
                                [c.chunk_id for c in pair.other], error or None))
    return summarize(rows, len(pairs), 2 * len(pairs), name)


def summarize(rows: Sequence[KnownAnswer], questions: int, calls: int, name: str | None = None) -> KnownAnswers:
    """The check's figures and verdict from its rows (the pairs both calls graded)."""
    both = [(r.needle_grade, r.other_grade) for r in rows if r.needle_grade is not None and r.other_grade is not None]
    differences = [float(a - b) for a, b in both]
    ci = paired_t_ci(differences)
    return KnownAnswers(
        verdict=verdict(ci), questions=questions, pairs=len(both),
        separation=round(fmean(differences), 6) if both else None,
        ci95=[round(ci[0], 6) + 0.0, round(ci[1], 6) + 0.0] if ci is not None else None,
        auc=None if not both else round(auc([a for a, _ in both], [b for _, b in both]), 6),
        mean_needle=round(fmean(a for a, _ in both), 6) if both else None,
        mean_other=round(fmean(b for _, b in both), 6) if both else None,
        calls=calls, rows=list(rows), judge=name)


def check_judges(pairs: Sequence[Pair], judges: Mapping[str | None, Judge],
                 on_reply: Callable[[Any], None] = lambda result: None) -> dict[str | None, KnownAnswers]:
    """Each judge's check on the same pairs (``{None: judge}`` for the run's one judge; a panel's by name)."""
    return {name: grade_pairs(pairs, judge, name, on_reply) for name, judge in judges.items()}


def blind(checks: Mapping[str | None, KnownAnswers]) -> list[KnownAnswers]:
    """The blind judges' checks, in panel order."""
    return [c for c in checks.values() if c.verdict == BLIND]


def record(checks: Mapping[str | None, KnownAnswers]) -> dict:
    """The results' ``run.known_answers``: the one judge's check, or a panel's (``verdict`` blind when any judge
    is, ``blind`` naming them, each judge's check under ``judges``)."""
    if list(checks) == [None]:
        return checks[None].to_json()
    named = blind(checks)
    verdicts = {c.verdict for c in checks.values()}
    overall = BLIND if named else DISCRIMINATES if verdicts == {DISCRIMINATES} else INCONCLUSIVE
    return {"verdict": overall, "blind": [c.judge for c in named],
            "judges": {str(name): c.to_json() for name, c in checks.items()}}


def stop_line(checks: Mapping[str | None, KnownAnswers]) -> str:
    """The one line that says why a blind judge stopped the run: what it graded right and wrong."""
    named = blind(checks)
    detail = "; ".join(c.line() for c in named)
    return (f"{detail}: it does not tell the needle's chunks from other documents', so its grades would measure the "
            f"judge, not the retrieval; the run stopped before judging any question (status {STATUS}): use another "
            "judge (docs/judges.md)")


def estimate_calls(n: int, judges: int = 1) -> int:
    """The calls the check adds to a run's cost estimate: 2 per question and judge."""
    return 2 * n * judges


@dataclass(frozen=True)
class Outcome:
    """What the run does with the check: its record (``run.known_answers``), whether a judge is blind, the
    ``unjudged`` rule of the run's loop (every question, when one is: no judge call is made), the run's status and
    the usage of its calls. No check asked for: no record, the loop's rule and the status as they are."""

    checks: dict[str | None, KnownAnswers] = field(default_factory=dict)
    replies: list = field(default_factory=list)  # each call's reply (its usage), in order

    @property
    def blind(self) -> bool:
        return bool(blind(self.checks))

    def record(self) -> dict | None:
        return record(self.checks) if self.checks else None

    def fields(self) -> dict:
        """What the run record adds: ``{"known_answers": ...}``, or nothing without a check."""
        return {FIELD: self.record()} if self.checks else {}

    def status(self, status: str) -> str:
        """The run's status: :data:`STATUS` when a judge is blind (unless the run was interrupted)."""
        return STATUS if self.blind and status != "interrupted" else status

    def count(self, usage: Any) -> None:
        """Add the check's calls to the run's judge usage (``usage.add(reply)``)."""
        for reply in self.replies:
            usage.add(reply)

    def log(self) -> None:
        """Each judge's line that is not blind; the stop line (an error, naming the blind ones) when one is."""
        for check in self.checks.values():
            if check.verdict != BLIND:
                logger.info("{}", escape_control(check.line()))
        if self.blind:
            logger.error("{}", escape_control(self.stop_line()))

    def stop_line(self) -> str:
        return stop_line(self.checks)

    def lines(self) -> list[str]:
        """One line per judge checked (what it graded right and wrong)."""
        return [c.line() for c in self.checks.values()]

    def unjudged(self, then: Callable[[Question], str | None]) -> Callable[[Question], str | None]:
        """The loop's rule: every question unjudged when a judge is blind, else ``then``'s."""
        if not self.blind:
            return then
        reason = f"{NOT_JUDGED}: the judge is blind (--known-answers): the run stopped before judging any question"
        return lambda q: reason


def run_check(n: int, questions: Sequence[Question], retrieve: Callable[[str, int], Sequence[Any]], k: int,
              judges: Mapping[str | None, Judge], strategy: str = "the strategy",
              on_reply: Callable[[Any], None] = lambda result: None) -> Outcome:
    """The check of a run, before any question is judged: the questions chosen from ``retrieve(query, k)``
    (the run's retriever: chunks or scored chunks, best first), each judge of ``judges`` grading them. Raises
    :class:`InputError` for a bad ``n`` or too few questions that retrieved their needle."""
    def chunks(q: Question) -> list[Chunk]:
        try:
            found = retrieve(q.question, k)
        except Exception as err:  # noqa: BLE001 - the retriever is the user's code
            raise InputError(f"--known-answers: retrieving question {q.id!r} with {strategy} failed "
                             f"({type(err).__name__}: {str(err)[:200]}): fix the retriever") from None
        return [getattr(item, "chunk", item) for item in found][:k]

    return Outcome(check_judges(choose(questions, chunks, n, strategy), judges, on_reply))


def start(n: int | None, questions: Sequence[Question], retrieve: Callable[[str, int], Sequence[Any]], k: int,
          judges: Mapping[str | None, Judge], strategy: str = "the strategy") -> Outcome:
    """The run's check (:func:`run_check`, its calls' replies kept for the run's usage, its lines logged), or no
    check when ``n`` is None (no ``--known-answers``)."""
    if n is None:
        return Outcome()
    replies: list = []
    outcome = run_check(n, questions, retrieve, k, judges, strategy,
                        on_reply=lambda result: replies.append(getattr(result, "reply", None)))
    outcome = Outcome(outcome.checks, [r for r in replies if r is not None])
    outcome.log()
    return outcome


def parse_count(text: str | None) -> int | None:
    """``--known-answers N`` as typed: None (not given), or a whole number of at least 1. Raises :class:`InputError`
    (one line) otherwise; the run checks it against its questions once they are known."""
    if text is None:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        raise InputError(f"--known-answers {text!r}: give a whole number of questions, 1 or more (e.g. 5)") from None
    return check_number(value)


def check_number(value: object) -> int | None:
    """``--known-answers`` as given, before the questions are known: None (not asked), or a whole number of at
    least 1. Raises :class:`InputError` (one line)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"--known-answers {value!r}: give a whole number of questions, 1 or more (e.g. 5)")
    return value
