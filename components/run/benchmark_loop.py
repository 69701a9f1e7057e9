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
* with a panel of judges (``panel``: :mod:`components.run.panel.grading`) every judge grades every
  question in turn, each call through the same admission point; each judge has its own breaker
  and fatal failure (the others go on), and the row keeps each judge's grade and the aggregate.
"""

from __future__ import annotations

import itertools
import math
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from loguru import logger

from components.core import Chunk, Question, Retriever, ScoredChunk
from components.judges.chunk_relevance import RelevanceResult
from components.judges.llm import TRANSIENT_KINDS, LLMReply
from components.judges.retrieval_grader import GradeResult, prompt_variant
from components.run.calls.budget import Budget, BudgetRefused, through
from components.run.calls.concurrency import Gate
from components.run.panel.grading import Member, PanelState, judge_grade, panel_outcome, transient
from components.run.order_check import reversed_order
from components.run.repeat_where import RepeatRule
from components.run.retrieval.deadline import DEFAULT_RETRIEVAL_TIMEOUT_S, RetrievalDeadline, RetrievalTimeout
from components.run.calls.query_rewriter import QueryRewriter, RewriteResult
from utils.console import escape_control
from utils.errors import JudgeError
from utils.metrics import RetrievalMetrics as M
from utils.results import RETRIEVAL_ERROR, QuestionResult, RetrievedItem

MAX_RETRY_WAIT_S = 60.0  # the retry pass waits the longest retry-after seen, at most this
BREAKER_THRESHOLD = 3  # consecutive rate-limit/overload failures that open the circuit breaker
RATE_LIMIT_KINDS = frozenset({"rate_limit", "overloaded"})


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


@dataclass
class Usage:
    """LLM calls of one role (judge or rewriter): counts, tokens and dollars."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cost_usd: float | None = 0.0  # None once a call had no known price
    models: list[str] = field(default_factory=list)  # the model ids the replies named
    batch: bool = False  # the calls went through a batch API (priced as such by the provider)
    unreported: int = 0  # calls whose reply named no token usage (their tokens count 0, the cost is unknown)

    def add(self, reply: LLMReply | None) -> float | None:
        """Count ``reply``; return its cost as its provider priced it (None: unknown price, or no reply)."""
        if reply is None:
            return None
        self.calls += 1
        if reply.input_tokens is None and reply.output_tokens is None:
            self.unreported += 1
        for name in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
            setattr(self, name, getattr(self, name) + (getattr(reply, name) or 0))
        if reply.model and reply.model not in self.models:
            self.models.append(reply.model)
        cost = reply.cost_usd
        self.cost_usd = None if cost is None or self.cost_usd is None else self.cost_usd + cost
        return cost

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class NotCalled:
    """What :meth:`BenchmarkLoop._call` gives for a call it did not make: ``instead``, the refusal."""

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


class BenchmarkLoop:
    def __init__(self, retriever: Retriever, judge: Judge, k: int = 5, *,
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
                 panel: PanelState | None = None, repeat_rule: RepeatRule | None = None,
                 unjudged: Callable[[Question], str | None] = lambda q: None) -> None:
        self.should_stop = should_stop
        # adaptive judging (components/run/adaptive.py): the grade_error of a question judging stopped
        # before (its retrieval still runs), or None: the question is judged
        self.unjudged = unjudged
        # --max-cost: every LLM call of the loop goes through it (components/run/calls/budget.py)
        self.budget = Budget(max_cost_usd, should_stop) if max_cost_usd is not None else None
        self.retriever, self.judge, self.k = retriever, through(self.budget, judge), k
        self.panel = panel  # a panel of judges (its members grade in turn); None: the one judge
        self.members = panel.members if panel is not None else [Member(None, self.judge)]
        for member in self.members if panel is not None else ():  # each judge's calls at its own cap and price
            member.judge = through(self.budget, member.judge)
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
        self.judge_usage = Usage()
        self.rewriter_usage = Usage()
        self.rewriter_failure: JudgeError | None = None  # the first fatal rewriter error
        self.recovered = 0
        self.results: list[QuestionResult] = []
        self._graded_with: dict[str, Partial] = {}  # for the retry pass: questions graded transiently
        self._longest_retry_after = 0.0
        self.concurrency = concurrency  # checked by evaluate (check_concurrency) before any work
        self.order_check = frozenset(order_check)  # question ids graded again with the chunks reversed
        # with concurrency > 1: every LLM call passes it (components/run/calls/concurrency.py)
        self.gate: Gate | None = None
        self._lock = threading.RLock()  # the loop's shared state, when judge calls run in worker threads

    @property
    def judge_failure(self) -> JudgeError | None:
        """The first fatal judge error (of any judge of a panel)."""
        return next((m.failure for m in self.members if m.failure is not None), None)

    @judge_failure.setter
    def judge_failure(self, err: JudgeError | None) -> None:
        self.members[0].failure = err

    @property
    def rate_limited(self) -> str | None:
        """The circuit breaker's reason, once it opened (see :meth:`_breaker`; of any judge of a panel)."""
        return next((m.rate_limited for m in self.members if m.rate_limited is not None), None)

    @rate_limited.setter
    def rate_limited(self, reason: str | None) -> None:
        self.members[0].rate_limited = reason

    def stop_if_signalled(self, err: BaseException) -> None:
        """Raise KeyboardInterrupt (from ``err``) when a signal was received: ``err`` may be the
        signal's own KeyboardInterrupt, wrapped by the code it interrupted (module docstring)."""
        if self.should_stop():
            raise KeyboardInterrupt("stop requested") from err

    # ------------------------------------------------------------------ one LLM call each

    def _call(self, call: Callable[[], Any], refusal: Callable[[], Any] | None = None) -> Any:
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

    def _not_called(self, member: Member | None = None) -> GradeResult | None:
        """The grade of a call the judge (``member``; default: the first) must not get (it became
        unusable, its circuit breaker opened, or ``--max-cost`` is spent), or None. The one admission
        point of every grading call, a panel's too; the budget then reserves the call's own worst case
        (:mod:`components.run.calls.budget`)."""
        member = member or self.members[0]
        with self._lock:
            if member.failure is not None:
                err = member.failure
                return GradeResult(None, None, 0.0, f"judge_unusable: not graded after an earlier {err.kind} error",
                                   None)
            if member.rate_limited is not None:
                return GradeResult(None, None, 0.0, member.rate_limited, None)
        if self.budget is not None and self.budget.refused is not None:
            return GradeResult(None, None, 0.0, self.budget.refused, None)
        return None

    @property
    def budget_exhausted(self) -> bool:
        """Whether ``--max-cost`` refused a call: the rest of the run is written ungraded."""
        return self.budget is not None and self.budget.refused is not None

    def _grade_once(self, q: Question, chunks: list[Chunk], member: Member | None = None) -> GradeResult:
        member = member or self.members[0]
        refused = self._not_called(member)
        if refused is not None:
            return refused
        try:  # asked again once the gate admits it: other calls may have changed that while it waited
            result = self._call(lambda: member.judge.grade(q.question, q.expected_answer, chunks),
                                lambda: self._not_called(member))
            if isinstance(result, NotCalled):
                return result.instead
        except BudgetRefused as refusal:  # --max-cost: the call's worst case does not fit
            return GradeResult(None, None, 0.0, str(refusal), None)
        except JudgeError as err:  # fatal: stop calling the judge
            self.stop_if_signalled(err)
            if member.name is not None:  # a panel: the judge is named wherever the error is shown
                err = JudgeError(err.kind, f"judge {member.name}: {err}", fatal=True)
            with self._lock:
                first = member.failure is None
                member.failure = member.failure or err
            if member.name is None:
                logger.error("judge unusable ({}): {}", err.kind, err)
            elif first:
                logger.error("{} unusable ({}): {}; its grades are null from here, the other judges go on",
                             member.label(), err.kind, err)
            return GradeResult(None, None, 0.0, f"{err.kind}: {err}", None)
        with self._lock:
            if result.retry_after is not None:
                self._longest_retry_after = max(self._longest_retry_after, result.retry_after)
            self._breaker(result, member)
        return result

    def _rate(self, q: Question, chunks: list[Chunk]) -> Any:
        """The chunks' relevance (one judge call), or None: the call failed fatally (the judge is then
        unusable), or, in a concurrent run, the judge became unusable or rate-limited while the call
        waited for its slot (it is not made, as a sequential run would not make it)."""
        try:
            result = self._call(lambda: self.relevance_judge.relevance(q.question, q.expected_answer, chunks),
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

    def _breaker(self, result: GradeResult, member: Member) -> None:
        """The circuit breaker: after :data:`BREAKER_THRESHOLD` rate-limit or overload failures in a
        row whose ``retry-after`` is missing or longer than the retry pass would wait, the judge is
        not called again in this run: the remaining questions are written ungraded (``rate_limit:
        …``) and the run ends ``rate_limited`` (exit 3), for ``--resume`` to finish later."""
        kind = (result.error or "").split(":", 1)[0]
        if result.grade is not None or kind not in RATE_LIMIT_KINDS:
            member.limited_in_a_row = 0 if result.grade is not None else member.limited_in_a_row
            return
        if result.retry_after is not None and result.retry_after <= self.retry_wait_max_s:
            return  # a short wait: the retry pass will honour it
        member.limited_in_a_row += 1
        if member.limited_in_a_row >= BREAKER_THRESHOLD and member.rate_limited is None:
            wait = f"retry-after {result.retry_after:g} s" if result.retry_after is not None else "no retry-after"
            member.rate_limited = (f"rate_limit: not graded: {member.label()} answered {kind} "
                                   f"{member.limited_in_a_row} times in a row ({wait}); the run stopped calling it: "
                                   "--resume grades this question later")
            logger.error("{} is rate-limited ({} {} times in a row, {}): {}; the rest of the questions are written "
                         "{} for --resume", member.label().capitalize(), kind, member.limited_in_a_row, wait,
                         "grading stops" if member.name is None else "its grading stops, the other judges go on",
                         "ungraded" if member.name is None else "without its grade")

    def _count(self, reply: LLMReply | None, member: Member | None = None) -> float | None:
        """Count one reply in the run's judge usage (and its judge's, in a panel); its cost."""
        with self._lock:
            if member is not None and member.usage is not None:
                member.usage.add(reply)
            return self.judge_usage.add(reply)

    def _grade_panel(self, p: Partial, chunks: list[Chunk], members: Sequence[Member] | None = None) -> None:
        """Every judge of the panel (or of ``members``: the retry pass) grades ``p``, in panel order;
        a judge whose grade ``--resume`` kept is not called. Under ``--repeat-where uncertain`` each
        judge grades once, then again only when the rule asks. Then the aggregate."""
        kept = self.panel.resumed.get(p.q.id, {})
        if members is None:
            p.by_judge.update({m.name: kept[m.name] for m in self.members if m.name in kept})
        todo = list(members) if members is not None else [m for m in self.members if m.name not in kept]
        grades: dict[str | None, list[GradeResult]] = {m.name: [] for m in todo}
        costs = {m.name: self._calls(p, chunks, self.repeat_rule.first_calls(self.repeats), grades[m.name], m)
                 for m in todo}
        first = [g[0].grade for g in grades.values()] + [(j.grades or [j.grade])[0] for n, j in p.by_judge.items()
                                                         if n not in grades]
        if self._more(p, first):
            for m in todo:
                more = self._calls(p, chunks, self.repeats - 1, grades[m.name], m)
                costs[m.name] = costs[m.name] if more is None else (costs[m.name] or 0.0) + more
        for m in todo:
            p.by_judge[m.name] = judge_grade(combine_grades(grades[m.name]), grades[m.name], costs[m.name])
            if costs[m.name] is not None:
                p.cost = (p.cost or 0.0) + costs[m.name]
        outcome = panel_outcome(p.by_judge, self.panel.names, self.panel.method, prompt_variant(p.q.expected_answer))
        p.grade, p.panel_value, p.panel_graded = outcome.grade, outcome.value, outcome.graded

    def _calls(self, p: Partial, chunks: list[Chunk], n: int, into: list[GradeResult],
               member: Member | None = None) -> float | None:
        """``n`` grading calls of ``p`` by ``member`` (default: the one judge), appended to ``into``;
        their cost (None: none known)."""
        cost = None
        for _ in range(n):
            if self.should_stop():
                raise KeyboardInterrupt("stop requested")
            g = self._grade_once(p.q, chunks, member)
            into.append(g)
            spent = self._count(g.reply, member)
            cost = cost if spent is None else (cost or 0.0) + spent
        return cost

    def _more(self, p: Partial, first: Sequence[int | None]) -> bool:
        """Whether ``p``, whose judges' first grades are ``first``, gets its other repeats
        (:mod:`components.run.repeat_where`); under ``uncertain`` the row records how many it got."""
        if not self.repeat_rule.selective or self.repeats == 1:
            return False
        wanted = self.repeat_rule.wants_more(first, M.calculate_rank(p.retrieved, p.q.needle_doc_ids))
        p.repeats_asked = self.repeats if wanted else 1
        return wanted

    def _grade(self, p: Partial, chunks: list[Chunk]) -> None:
        if self.panel is not None:
            self._grade_panel(p, chunks)
            return
        cost = self._calls(p, chunks, self.repeat_rule.first_calls(self.repeats), p.grades)
        if self._more(p, [p.grades[0].grade]):
            more = self._calls(p, chunks, self.repeats - 1, p.grades)
            cost = cost if more is None else (cost or 0.0) + more
        if cost is not None:
            p.cost = (p.cost or 0.0) + cost
        p.grade = combine_grades(p.grades)
        flipped = reversed_order(chunks) if p.q.id in self.order_check else None
        if flipped is not None and p.grade.grade is not None:
            if self.should_stop():
                raise KeyboardInterrupt("stop requested")
            p.reversed_grade = self._grade_once(p.q, flipped)
            with self._lock:
                cost = self.judge_usage.add(p.reversed_grade.reply)
            if cost is not None:
                p.cost = (p.cost or 0.0) + cost

    # ------------------------------------------------------------------ one question

    def rewrite(self, q: Question) -> tuple[RewriteResult | None, str | None]:
        """``(the rewrite, None)``, or ``(None, the row's error)`` when the rewriter cannot be used."""
        with self._lock:
            failure = self.rewriter_failure
        if failure is not None:
            return None, f"rewriter_unusable: not retrieved after an earlier {failure.kind} error"
        try:
            result = self._call(lambda: self.rewriter.rewrite(q.question))
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
        """The judge's part of one question (grades, chunk relevance) and its row; in a worker
        thread when judge calls run concurrently. An exception is contained in the row."""
        q = p.q
        try:
            if error is None:
                error = self.unjudged(q)  # the verdict is known: no judge call
            if error is not None:
                p.grade = GradeResult(None, None, 0.0, error, None)
            else:
                self._grade(p, chunks)
                with self._lock:  # chunk relevance is the first judge's
                    first = self.members[0]
                    rate_ok = not self.budget_exhausted and first.failure is None and first.rate_limited is None
                if self.relevance_judge is not None and chunks and rate_ok:
                    if self.should_stop():
                        raise KeyboardInterrupt("stop requested")
                    p.relevance = self._rate(q, chunks)
                    with self._lock:
                        cost = self.judge_usage.add(getattr(p.relevance, "reply", None))
                    if cost is not None:
                        p.cost = (p.cost or 0.0) + cost
            row = self.row(p, rank, None)
            if chunks and p.grade is not None and (p.grade.error and p.grade.error.split(":", 1)[0] in TRANSIENT_KINDS
                                                   or any(map(transient, p.by_judge.values()))):
                with self._lock:
                    self._graded_with[q.id] = p
            if self.annotate is not None:
                row = replace(row, **self.annotate(q, chunks, row))
            return row
        except (Exception, SystemExit) as err:
            self.stop_if_signalled(err)
            return self.failed_row(p, err)

    def failed_row(self, p: Partial, err: BaseException) -> QuestionResult:
        """The row of a question whose handling raised ``err`` (contained: the run goes on), with
        ``grade_error: "internal_error: <type>: <message>"`` and whatever ``p`` already holds."""
        logger.opt(exception=err).error("[{}] internal error: {}: {}", escape_control(p.q.id), type(err).__name__,
                                        escape_control(str(err)[:300]))
        return self.row(p, None, f"internal_error: {type(err).__name__}: {str(err)[:300]}", safe=True)

    def row(self, p: Partial, rank: int | None, internal_error: str | None, safe: bool = False) -> QuestionResult:
        q = p.q
        if safe:  # after an exception: recompute what may not have been computed
            try:
                rank = M.calculate_rank(p.retrieved, q.needle_doc_ids)
            except Exception:  # noqa: BLE001
                rank = None
        g = p.grade or GradeResult(None, None, 0.0, None, None)
        grade = g.grade
        try:
            total = M.calculate_total_score(grade, rank)
        except Exception:  # noqa: BLE001 - a total that cannot be computed is not a reason to lose the row
            total = None
        reply = g.reply
        grades = [x.grade for x in p.grades] if self.repeats > 1 else None
        present = [x for x in (grades or []) if x is not None]
        rel = p.relevance
        return QuestionResult(
            question_id=q.id, question=q.question, expected_answer=q.expected_answer,
            needle_doc_id=q.needle_doc_ids[0], needle_doc_ids=list(q.needle_doc_ids),
            needle_grades=dict(q.needle_grades) if q.needle_grades else None, needle_found=rank is not None, rank=rank,
            hit_at_1=rank == 1,
            hit_at_5=rank is not None and rank <= 5, llm_grade=grade, llm_reasoning=g.reasoning,
            grade_error=internal_error or g.error, grade_clamped_from=g.clamped_from, llm_raw_reply=g.raw,
            prompt_variant=g.prompt_variant,
            total_score=total, latency_ms=p.latency_ms, grading_latency_ms=round(g.latency_ms, 3),
            retrieved=[RetrievedItem(rank=j, doc_id=s.chunk.doc_id, chunk_id=s.chunk.chunk_id,
                                     score=None if s.score is None else round(s.score, 6),
                                     title=getattr(s.chunk, "title", None),
                                     heading_path=list(getattr(s.chunk, "heading_path", ()) or ()),
                                     text=s.chunk.index_text if self.keep_text else None)
                       for j, s in enumerate(p.retrieved, start=1)],
            extra=dict(q.extra),
            **M.row_metrics(p.retrieved, q.relevance, self.k),
            stop_reason=reply.stop_reason if reply else None, request_id=reply.request_id if reply else None,
            judge_model=reply.model if reply else None,
            input_tokens=reply.input_tokens if reply else None, output_tokens=reply.output_tokens if reply else None,
            cache_creation_input_tokens=reply.cache_creation_input_tokens if reply else None,
            cache_read_input_tokens=reply.cache_read_input_tokens if reply else None,
            cost_usd=p.cost,
            query_used=p.rewrite.query_used if p.rewrite else q.question,
            query_rewrite_error=p.rewrite.error if p.rewrite else None,
            llm_grades=grades,
            grade_spread=(max(present) - min(present)) if len(present) > 1 else None,
            grade_sd=round(statistics.pstdev(present), 4) if len(present) > 1 else None,
            chunk_relevance=getattr(rel, "scores", None),
            chunk_relevance_error=getattr(rel, "error", None),
            chunk_relevance_raw=getattr(rel, "raw", None),
            llm_grade_reversed=p.reversed_grade.grade if p.reversed_grade is not None else None,
            order_check_error=p.reversed_grade.error if p.reversed_grade is not None else None,
            judge_repeats=p.repeats_asked,
            **self._panel_fields(p),
        )

    def _panel_fields(self, p: Partial) -> dict:
        """A panel run's row fields (none for the one judge's rows): each judge's grade, the aggregate."""
        if self.panel is None:
            return {}
        return {"grades_by_judge": {n: p.by_judge[n] for n in self.panel.names if n in p.by_judge},
                "panel_grade": p.panel_value, "panel_graded": p.panel_graded}

    # ------------------------------------------------------------------ the run

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
        questions are in flight at once (:meth:`_run_concurrently`); rows are finished in order."""
        if self.concurrency > 1:
            return self._run_concurrently(questions, done)
        self.results = []
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

    def _run_concurrently(self, questions: Sequence[Question], done: Mapping | None) -> list[QuestionResult]:
        """The loop with up to ``concurrency`` judge calls in flight (:class:`Gate`).

        Retrieval stays in question order in this (the main) thread; each question's judge calls
        (its grades, chunk relevance) run in a worker thread; with a rewriting strategy the next
        questions' rewrites run ahead in workers too. Rows are finished — kept, journaled, handed to
        ``on_row`` — in question order as they complete (a question's row waits for the ones
        before it), so the journal and the console read as in a sequential run. On a stop, no new
        call starts; every row already graded is still finished, and the questions in flight are
        left to ``--resume``."""
        self.results = []
        done = typed_rows(done)
        n = len(questions)
        self.gate = Gate(self.concurrency, max_wait_s=self.retry_wait_max_s, should_stop=self.should_stop)
        pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="judge")
        pending: deque[tuple[int, QuestionResult | Future]] = deque()
        rewrites: dict[int, Future] = {}
        try:
            for idx, q in enumerate(questions):
                if self.rewriter is not None:  # rewrites run ahead of retrieval, a window of `concurrency`
                    for j in range(idx, min(n, idx + self.concurrency)):
                        if j not in rewrites and questions[j].id not in done:
                            rewrites[j] = pool.submit(self.rewrite, questions[j])
                if q.id in done:
                    pending.append((idx + 1, done[q.id]))
                    self._drain(pending, n)
                    continue
                if self.should_stop():
                    break
                p = Partial(q)
                try:
                    error, rank, chunks = self._retrieved(idx + 1, n, p, self._await(rewrites.pop(idx))
                                                          if idx in rewrites else None)
                except (Exception, SystemExit) as err:
                    self.stop_if_signalled(err)
                    pending.append((idx + 1, self.failed_row(p, err)))
                else:
                    pending.append((idx + 1, pool.submit(self._judged, p, rank, chunks, error)))
                self._drain(pending, n)
                while len(pending) > 2 * self.concurrency:  # do not retrieve too far ahead of the judge
                    self._drain(pending, n, wait=True)
            while pending:
                self._drain(pending, n, wait=True)
        except KeyboardInterrupt:
            self._drain(pending, n, stopping=True)
            if not self.should_stop():
                raise
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        return self.results

    def _await(self, future: Future) -> Any:
        """A worker's result, waiting in short steps so that a signal or a stop is seen."""
        while True:
            if future.done():
                return future.result()
            if self.should_stop():
                raise KeyboardInterrupt("stop requested")
            try:
                return future.result(timeout=0.2)
            except TimeoutError:
                continue

    def _drain(self, pending: deque, n: int, wait: bool = False, stopping: bool = False) -> None:
        """Finish the rows at the head of ``pending`` that are ready (``wait``: the head's first).
        ``stopping``: finish every row already graded, in order, and drop the questions in flight."""
        while pending:
            i, item = pending[0]
            if isinstance(item, Future):
                if stopping and (not item.done() or item.cancelled() or item.exception() is not None):
                    pending.popleft()  # in flight, or abandoned by the stop: --resume runs it
                    continue
                if not item.done() and not wait:
                    return
                row = self._await(item)  # a worker's KeyboardInterrupt (a stop) propagates
            else:
                row = item
            pending.popleft()
            self._finished(i, n, row)
            wait = False

    def _retried(self, p: Partial) -> list[Member]:
        """The judges of a panel whose grade of ``p`` failed transiently and that can still be called."""
        return [m for m in self.members if transient(p.by_judge.get(m.name)) and self._not_called(m) is None]

    def _regrade(self, p: Partial, chunks: list[Chunk]) -> bool:
        """The retry pass's grading of ``p``: again by the judge (in a panel: by each judge whose grade
        failed transiently and that can still be called); whether it brought a grade."""
        if self.panel is None:
            p.grades = []  # the failed attempt's grades are replaced, its cost stays counted
            self._grade(p, chunks)
            return p.grade is not None and p.grade.grade is not None
        members = self._retried(p)
        if not members:
            return False
        self._grade_panel(p, chunks, members)
        return any(p.by_judge[m.name].grade is not None for m in members)

    def retry_transient(self, sleep: Callable[[float], None] = time.sleep) -> int:
        """One more sequential pass over the rows whose grade failed transiently (rate limit,
        overload, 5xx, timeout, connection), after waiting the longest ``retry-after`` seen
        (at most ``retry_wait_max_s``, default :data:`MAX_RETRY_WAIT_S`). Returns how many were recovered."""
        todo = [(pos, row) for pos, row in enumerate(self.results) if isinstance(row, QuestionResult)
                and row.question_id in self._graded_with and (row.llm_grade is None if self.panel is None
                                                              else self._retried(self._graded_with[row.question_id]))]
        if not todo or (self.panel is None and (self.judge_failure is not None or self.rate_limited is not None)):
            return 0
        wait = min(self.retry_wait_max_s, self._longest_retry_after)
        logger.info("Retrying {} question(s) whose grade failed transiently{}", len(todo),
                    f" after waiting {wait:g}s" if wait else "")
        if wait:
            sleep(wait)
        n = len(self.results)
        for pos, row in todo:
            if self.should_stop() or self.budget_exhausted or (self.panel is None and self.judge_failure is not None):
                break
            p = self._graded_with[row.question_id]  # its retrieval, rewrite, relevance and cost so far
            chunks = [s.chunk for s in p.retrieved]
            if not self._regrade(p, chunks):
                continue
            new = replace(self.row(p, row.rank, None), recovered=True)
            if self.annotate is not None:
                new = replace(new, **self.annotate(p.q, chunks, new))
            self.recovered += 1
            self.finish(pos + 1, n, new, position=pos)
        logger.info("Retry pass: {} of {} recovered", self.recovered, len(todo))
        return self.recovered


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
