"""The benchmark loop, one for every strategy: for each question, in order, one at a time:
(rewrite the query,) retrieve the top k chunks, rank the needle, grade, score, record, log.

Nothing graded is lost:

* every finished row is handed to ``record`` (the run's journal: appended and fsynced) *before*
  its console line, and kept in ``loop.results``;
* an exception while handling one question — a plug-in's malformed return, a parse, a score, even
  ``SystemExit`` from a plug-in's ``retrieve()`` — becomes that row's error
  (``internal_error: <type>: <message>``), keeping whatever was already graded, and the run goes on;
* a KeyboardInterrupt can be lost (an extension that runs Python code without passing errors on
  swallows it), so the loop also asks ``should_stop()`` before each retrieval and each LLM call;
  it can also come back as another exception (pydantic-core wraps one raised while it builds a
  serializer in a ``SchemaError``; a plug-in may wrap it in its own error): once a signal has
  been received, an error is the interrupt, so the question in progress is abandoned (it runs on
  ``--resume``) rather than recorded with an error the signal caused;
* a fatal judge (or rewriter) error stops further calls: the remaining rows are written ungraded;
* every LLM call (grades, repeats, chunk relevance, the order check, the rewriter) goes through the
  ``--max-cost`` budget (:mod:`components.run.calls.budget`: each call's worst case reserved, refused when
  it does not fit); once it refuses, the remaining rows are retrieved and written ungraded with
  ``grade_error: "budget: …"``;
* :meth:`BenchmarkLoop.retry_transient` gives the rows whose grade failed transiently one more
  sequential pass after the loop;
* the grading itself is the judges' (:mod:`components.run.judges`: the one judge, or a panel whose
  judges grade every question in turn, each call through the loop's one admission point, each judge
  with its own breaker and fatal failure); the concurrent driver is :mod:`components.run.concurrent_loop`,
  the retry pass :mod:`components.run.retry_pass`, the row :mod:`components.run.row`.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from loguru import logger

from components.core import Chunk, Question, Retriever, ScoredChunk
from components.judges.chunk_relevance import RelevanceResult
from components.judges.retrieval_grader import GradeResult
from components.run.calls.budget import Budget, BudgetRefused, through
from components.run.calls.concurrency import Gate
from components.run.calls.query_rewriter import QueryRewriter, RewriteResult
from components.run.concurrent_loop import run_concurrently
from components.run.judge import BREAKER_THRESHOLD, RATE_LIMIT_KINDS, LoopJudge  # noqa: F401 - their old home
from components.run.judges import Judges, OneJudge
from components.run.partial import NotCalled, Partial, combine_grades, typed_rows  # noqa: F401 - their old home
from components.run.repeat_where import RepeatRule
from components.run.retry_pass import retry_transient
from components.run.retrieval.deadline import DEFAULT_RETRIEVAL_TIMEOUT_S, RetrievalDeadline, RetrievalTimeout
from components.run.row import build_row
from components.run.usage import Usage  # noqa: F401 - its old home
from utils.console import escape_control
from utils.errors import JudgeError
from utils.metrics import RetrievalMetrics as M
from utils.results import RETRIEVAL_ERROR, QuestionResult

MAX_RETRY_WAIT_S = 60.0  # the retry pass waits the longest retry-after seen, at most this


class Judge(Protocol):
    provider: str
    model: str

    def grade(self, question: str, expected_answer: str | None, chunks: Sequence[Chunk]) -> GradeResult: ...


def _score(value: object) -> float | None:
    """A retriever's score as a finite float, or None (a plug-in may return anything)."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _as_scored(item: object) -> ScoredChunk:
    """One retrieved item as a :class:`ScoredChunk`; raises TypeError naming the problem."""
    chunk = item.chunk if isinstance(item, ScoredChunk) or hasattr(item, "chunk") else item
    for name in ("doc_id", "chunk_id"):
        if not isinstance(getattr(chunk, name, None), str):
            raise TypeError(f"retrieve() returned a {type(item).__name__} without a string {name}; "
                            "return components.core.ScoredChunk items")
    if not isinstance(getattr(chunk, "index_text", None), str):
        raise TypeError("retrieve() returned a chunk without index_text: return components.core.Chunk items")
    score = _score(getattr(item, "score", None)) if chunk is not item else None
    return ScoredChunk(chunk, score)  # type: ignore[arg-type]


class BenchmarkLoop:
    def __init__(self, retriever: Retriever, judge: Judge | None, k: int = 5, *,
                 rewriter: QueryRewriter | None = None,
                 should_stop: Callable[[], bool] = lambda: False,
                 record: Callable[[dict], None] = lambda row: None,
                 annotate: Callable[[Question, list[Chunk], QuestionResult], dict] | None = None,
                 relevance_judge: Any = None,
                 repeats: int = 1,
                 max_cost_usd: float | None = None,
                 keep_text: bool = True,
                 retry_wait_max_s: float = MAX_RETRY_WAIT_S,
                 on_row: Callable[[QuestionResult, int, int], None] | None = None,
                 concurrency: int = 1, order_check: Collection[str] = (),
                 retrieval_timeout: float | None = DEFAULT_RETRIEVAL_TIMEOUT_S,
                 judges: Judges | None = None, repeat_rule: RepeatRule | None = None,
                 unjudged: Callable[[Question], str | None] = lambda q: None) -> None:
        """``judges``: the run's judge side (:mod:`components.run.judges`); default: ``judge`` alone."""
        self.should_stop = should_stop
        # the run's plan (components/run/adaptive.py): the grade_error of a question judging stopped
        # before (its retrieval still runs), or None: the question is judged
        self.unjudged = unjudged
        # --max-cost: every LLM call of the loop goes through it (components/run/calls/budget.py)
        self.budget = Budget(max_cost_usd, should_stop) if max_cost_usd is not None else None
        self.retriever, self.k = retriever, k
        self.judges = judges or OneJudge([LoopJudge(None, judge)])
        self.judges.through(self.budget)  # each judge's calls at its own cap and price
        self.deadline = RetrievalDeadline(retrieval_timeout, should_stop)  # components/run/retrieval/deadline.py
        self._retrieval_errors: dict[str, str] = {}  # each retrieval error → the first question it failed
        self.rewriter = through(self.budget, rewriter)
        self.record = record
        self.annotate = annotate
        self.relevance_judge = through(self.budget, relevance_judge)
        self.repeats = max(1, repeats)
        self.repeat_rule = repeat_rule or RepeatRule()  # --repeat-where: which questions get the repeats
        self.keep_text = keep_text
        self.retry_wait_max_s = retry_wait_max_s
        self.on_row = on_row  # after each row is kept and recorded: (row, i, n), e.g. its console line
        self.rewriter_usage = Usage()
        self.rewriter_failure: JudgeError | None = None  # the first fatal rewriter error
        self.recovered = 0
        self.results: list[QuestionResult] = []
        self.graded_with: dict[str, Partial] = {}  # for the retry pass: questions graded transiently
        self.longest_retry_after = 0.0
        self.concurrency = concurrency  # checked by the run's spec (RunSpec.check) before any work
        self.order_check = frozenset(order_check)  # question ids graded again with the chunks reversed
        self.gate: Gate | None = None  # concurrency > 1: every LLM call passes it (components/run/calls/concurrency.py)
        self._lock = threading.RLock()  # the loop's shared state, when judge calls run in worker threads

    @property
    def judge(self) -> Any:
        """The first judge's grader (through the budget)."""
        return self.judges.first.judge

    @property
    def judge_usage(self) -> Usage:
        """Every judge call of the run."""
        return self.judges.usage

    @property
    def judge_failure(self) -> JudgeError | None:
        """The first fatal judge error (of any judge)."""
        return self.judges.failure

    @judge_failure.setter
    def judge_failure(self, err: JudgeError | None) -> None:
        self.judges.first.failure = err

    @property
    def rate_limited(self) -> str | None:
        """The circuit breaker's reason, once it opened (of any judge)."""
        return self.judges.rate_limited

    @rate_limited.setter
    def rate_limited(self, reason: str | None) -> None:
        self.judges.first.rate_limited = reason

    def stop_if_signalled(self, err: BaseException) -> None:
        """Raise KeyboardInterrupt (from ``err``) when a signal was received: ``err`` may be the
        signal's own KeyboardInterrupt, wrapped by the code it interrupted (module docstring)."""
        if self.should_stop():
            raise KeyboardInterrupt("stop requested") from err

    # ------------------------------------------------------------------ one LLM call each

    def call(self, call: Callable[[], Any], refusal: Callable[[], Any] | None = None) -> Any:
        """One LLM call (its result has ``reply``, ``error`` and maybe ``retry_after``), through the
        gate when judge calls run concurrently. ``refusal()``, asked once the gate admits the call,
        gives what to return instead of calling (the judge became unusable, the circuit breaker opened
        or the budget was spent while the call waited for its slot): then the result is
        :class:`NotCalled` holding it; None: the call is made."""
        if self.gate is None:
            return call()
        with self.gate.call() as done:
            if refusal is not None and (instead := refusal()) is not None:
                return NotCalled(instead)  # counts as neither a success nor a limit
            result = call()
            reply = getattr(result, "reply", None)
            kind = None if reply is not None else (getattr(result, "error", None) or "error").split(":", 1)[0]
            done(kind, getattr(result, "retry_after", None), getattr(reply, "rate_limit", None))
            return result

    def saw_retry_after(self, seconds: float | None) -> None:
        """A reply asked to wait ``seconds``: the retry pass waits the longest (caller holds the lock)."""
        if seconds is not None:
            self.longest_retry_after = max(self.longest_retry_after, seconds)

    def _not_called(self, member: LoopJudge | None = None) -> GradeResult | None:
        """The grade of a call ``member`` (default: the first judge) must not get, or None
        (:meth:`components.run.judges.Judges.refusal`)."""
        return self.judges.refusal(self, member or self.judges.first)

    @property
    def budget_exhausted(self) -> bool:
        """Whether ``--max-cost`` refused a call: the rest of the run is written ungraded."""
        return self.budget is not None and self.budget.refused is not None

    def _grade_once(self, q: Question, chunks: list[Chunk], member: LoopJudge | None = None) -> GradeResult:
        return self.judges.grade_once(self, q, chunks, member)

    def _rate(self, q: Question, chunks: list[Chunk]) -> Any:
        """The chunks' relevance (one call of the first judge), or None: the call failed fatally (the
        judge is then unusable), or, in a concurrent run, the judge became unusable or rate-limited
        while the call waited for its slot (it is not made, as a sequential run would not make it)."""
        try:
            result = self.call(lambda: self.relevance_judge.relevance(q.question, q.expected_answer, chunks),
                               self._not_called)
        except BudgetRefused as refusal:
            return RelevanceResult(None, str(refusal), None, None)
        except JudgeError as err:  # fatal: stop calling the judge
            self.stop_if_signalled(err)
            with self._lock:
                self.judge_failure = self.judge_failure or err
            logger.error("judge unusable ({}): {}", err.kind, err)
            return None
        return None if isinstance(result, NotCalled) else result

    # ------------------------------------------------------------------ one question

    def rewrite(self, q: Question) -> tuple[RewriteResult | None, str | None]:
        """``(the rewrite, None)``, or ``(None, the row's error)`` when the rewriter cannot be used."""
        with self._lock:
            failure = self.rewriter_failure
        if failure is not None:
            return None, f"rewriter_unusable: not retrieved after an earlier {failure.kind} error"
        try:
            result = self.call(lambda: self.rewriter.rewrite(q.question))
        except BudgetRefused as refusal:
            return None, str(refusal)
        except JudgeError as err:
            self.stop_if_signalled(err)
            with self._lock:
                self.rewriter_failure = self.rewriter_failure or err
            logger.error("query rewriter unusable ({}): {}", err.kind, err)
            return None, f"rewriter_unusable: {err.kind}: {err}"
        with self._lock:
            self.rewriter_usage.add(result.reply)
        return result, None

    def retrieve(self, p: Partial, rewritten: tuple[RewriteResult | None, str | None] | None = None) -> str | None:
        """Retrieve ``p``'s question (rewritten first when the strategy rewrites; ``rewritten``: that
        rewrite, made earlier); returns the row's error, or None."""
        query = p.q.question
        if self.rewriter is not None:
            p.rewrite, error = rewritten if rewritten is not None else self.rewrite(p.q)
            if error is not None:
                return error
            query = p.rewrite.query_used
        def read() -> list[ScoredChunk]:  # cut at k while reading: a plug-in's endless iterator must not grow
            return [_as_scored(x) for x in itertools.islice(self.retriever.retrieve(query, self.k), self.k)]

        start = time.perf_counter()
        try:
            p.retrieved = self.deadline.call(read, f"[{escape_control(p.q.id)}] retrieve()")
        except RetrievalTimeout as err:  # logged, naming the abandoned thread
            p.latency_ms = (time.perf_counter() - start) * 1000
            return f"{RETRIEVAL_ERROR}: timeout: {err}"
        except (Exception, SystemExit) as err:
            self.stop_if_signalled(err)
            p.latency_ms = (time.perf_counter() - start) * 1000
            error = f"{type(err).__name__}: {err}"
            self._log_retrieval_failure(p.q.id, err, error)
            return f"{RETRIEVAL_ERROR}: {error}"
        p.latency_ms = (time.perf_counter() - start) * 1000
        return None

    def _log_retrieval_failure(self, qid: str, err: BaseException, error: str) -> None:
        """One line per question whose retrieval failed; the traceback with the first question an
        error failed, not again for each question the same error fails."""
        with self._lock:
            first = self._retrieval_errors.setdefault(error, qid)
        line = "[{}] retrieval failed: {}" + ("" if first == qid else " (as for question {}: traceback logged there)")
        logger.opt(exception=err if first == qid else None).error(line, escape_control(qid),
                                                                 escape_control(error[:300]), escape_control(first))

    def _retrieved(self, i: int, n: int, p: Partial, rewritten=None) -> tuple[str | None, int | None, list[Chunk]]:
        """Retrieval of one question, in the calling (main) thread: ``(error, rank, chunks)``."""
        error = self.retrieve(p, rewritten)
        chunks = [s.chunk for s in p.retrieved]
        rank = M.calculate_rank(p.retrieved, p.q.needle_doc_ids)
        logger.trace("[{}/{}] retrieved: {}", i, n, ", ".join(
            f"{s.chunk.chunk_id} ({'-' if s.score is None else f'{s.score:.4f}'})" for s in p.retrieved))
        logger.trace("[{}/{}] needle {} rank: {}", i, n, "/".join(p.q.needle_doc_ids), rank)
        if self.should_stop():  # the current question is abandoned, as on KeyboardInterrupt
            raise KeyboardInterrupt("stop requested")
        return error, rank, chunks

    def _question(self, i: int, n: int, q: Question) -> QuestionResult:
        p = Partial(q)
        try:
            error, rank, chunks = self._retrieved(i, n, p)
        except (Exception, SystemExit) as err:
            self.stop_if_signalled(err)
            return self.failed_row(p, err)
        return self._judged(p, rank, chunks, error)

    def _judged(self, p: Partial, rank: int | None, chunks: list[Chunk], error: str | None) -> QuestionResult:
        """The judges' part of one question (grades, chunk relevance) and its row; in a worker
        thread when judge calls run concurrently. An exception is contained in the row."""
        q = p.q
        try:
            if error is None:
                error = self.unjudged(q)  # the verdict is known: no judge call
            if error is not None:
                p.grade = GradeResult(None, None, 0.0, error, None)
            else:
                self.judges.grade(self, p, chunks)
                self._rate_chunks(p, chunks)
            row = self.row(p, rank, None)
            if self.judges.failed_transiently(p, chunks):
                with self._lock:
                    self.graded_with[q.id] = p
            if self.annotate is not None:
                row = replace(row, **self.annotate(q, chunks, row))
            return row
        except (Exception, SystemExit) as err:
            self.stop_if_signalled(err)
            return self.failed_row(p, err)

    def _rate_chunks(self, p: Partial, chunks: list[Chunk]) -> None:
        """Chunk relevance (the first judge's), when asked for and the judge can still be called."""
        if self.relevance_judge is None or not chunks or not self.judges.rates_chunks(self):
            return
        if self.should_stop():
            raise KeyboardInterrupt("stop requested")
        p.relevance = self._rate(p.q, chunks)
        p.add_cost(self.judges.count(self, getattr(p.relevance, "reply", None)))

    def failed_row(self, p: Partial, err: BaseException) -> QuestionResult:
        """The row of a question whose handling raised ``err`` (contained: the run goes on), with
        ``grade_error: "internal_error: <type>: <message>"`` and whatever ``p`` already holds."""
        logger.opt(exception=err).error("[{}] internal error: {}: {}", escape_control(p.q.id), type(err).__name__,
                                        escape_control(str(err)[:300]))
        return self.row(p, None, f"internal_error: {type(err).__name__}: {str(err)[:300]}", safe=True)

    def row(self, p: Partial, rank: int | None, internal_error: str | None, safe: bool = False) -> QuestionResult:
        """The row of ``p`` (:func:`components.run.row.build_row`), with what the judges add to it."""
        return build_row(p, rank, internal_error, k=self.k, keep_text=self.keep_text, repeats=self.repeats,
                         judge_fields=self.judges.row_fields(p), safe=safe)

    # ------------------------------------------------------------------ the run

    def begin(self) -> None:
        """A new pass over the questions: no row kept yet."""
        self.results = []

    def keep(self, row: QuestionResult) -> None:
        """Keep ``row`` in the results only (not the journal, not ``on_row``): a question an interrupted
        batch run leaves pending."""
        self.results.append(row)

    def note_recovered(self) -> None:
        """A grade the retry pass (or a batch's second submission) recovered."""
        self.recovered += 1

    def finish(self, i: int, n: int, row: QuestionResult, position: int | None = None) -> None:
        """Keep ``row``, record it (the journal: durable), then hand it to ``on_row``.

        Kept first, so that an interrupt while it is recorded still leaves it in the results the
        interrupted run writes. A record that fails (a full disk) ends the run with that OSError
        and without ``on_row``: the console only reports questions the journal holds, and a run
        whose rows cannot be kept stops spending on the judge."""
        if position is None:
            self.results.append(row)
        else:
            self.results[position] = row
        try:
            self.record(row.to_json())
        except OSError as err:
            logger.error("could not append question {} to the journal ({}): the run stops here",
                         escape_control(row.question_id), err.strerror or err)
            raise
        if self.on_row is not None:
            self.on_row(row, i, n)

    def run(self, questions: Sequence[Question], done: Mapping[str, QuestionResult | Mapping] | None = None
            ) -> list[QuestionResult]:
        """Every question in order; a question in ``done`` (``--resume``: a graded row) is taken
        over as it is, without a judge call. With ``concurrency`` > 1 the judge calls of several
        questions are in flight at once (:mod:`components.run.concurrent_loop`); rows are finished in order."""
        if self.concurrency > 1:
            return run_concurrently(self, questions, done)
        self.begin()
        done = typed_rows(done)
        n = len(questions)
        for i, q in enumerate(questions, start=1):
            if q.id in done:
                self.finish(i, n, done[q.id])
                continue
            if self.should_stop():
                break
            try:
                row = self._question(i, n, q)
            except KeyboardInterrupt:
                if self.should_stop():
                    break
                raise
            if self.should_stop():  # a signal while this question ran: its errors may be the signal's
                break
            self._finished(i, n, row)
        return self.results

    def _finished(self, i: int, n: int, row: QuestionResult) -> None:
        grade_line = row.llm_grade if row.llm_grade is not None else (row.grade_error or "")
        logger.debug("[{}/{}] grade={} reasoning={}", i, n, grade_line, row.llm_reasoning or row.grade_error)
        logger.debug("[{}/{}] total = grade × weight = {} × {} = {}", i, n, row.llm_grade,
                     M.rank_weight(row.rank), row.total_score)
        self.finish(i, n, row)

    def retry_transient(self, sleep: Callable[[float], None] = time.sleep) -> int:
        """The retry pass (:mod:`components.run.retry_pass`); how many grades it recovered."""
        return retry_transient(self, sleep)
