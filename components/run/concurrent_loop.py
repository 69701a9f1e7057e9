"""The question loop with up to ``--concurrency`` judge calls in flight
(:class:`~components.run.calls.concurrency.Gate`).

Retrieval stays in question order in the main thread; each question's judge calls (its grades,
chunk relevance) run in a worker thread; with a rewriting strategy the next questions' rewrites run
ahead in workers too. Rows are finished — kept, journaled, handed to ``on_row`` — in question order
as they complete (a question's row waits for the ones before it), so the journal and the console read
as in a sequential run. On a stop, no new call starts; every row already graded is still finished,
and the questions in flight are left to ``--resume``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from components.core import Question
from components.run.calls.concurrency import Gate
from components.run.partial import Partial, typed_rows
from utils.results import QuestionResult


def run_concurrently(loop, questions: Sequence[Question], done: Mapping | None) -> list[QuestionResult]:
    """Every question of ``questions`` through ``loop`` (a :class:`~components.run.benchmark_loop.BenchmarkLoop`)
    with its judge calls in worker threads (module docstring); ``done``: rows taken over."""
    loop.begin()
    done = typed_rows(done)
    n = len(questions)
    loop.gate = Gate(loop.concurrency, max_wait_s=loop.retry_wait_max_s, should_stop=loop.should_stop)
    pool = ThreadPoolExecutor(max_workers=loop.concurrency, thread_name_prefix="judge")
    pending: deque[tuple[int, QuestionResult | Future]] = deque()
    rewrites: dict[int, Future] = {}
    try:
        for idx, q in enumerate(questions):
            _rewrite_ahead(loop, pool, questions, idx, done, rewrites)
            if q.id in done:
                pending.append((idx + 1, done[q.id]))
                _drain(loop, pending, n)
                continue
            if loop.should_stop():
                break
            pending.append((idx + 1, _submitted(loop, pool, idx, n, q, rewrites)))
            _drain(loop, pending, n)
            while len(pending) > 2 * loop.concurrency:  # do not retrieve too far ahead of the judge
                _drain(loop, pending, n, wait=True)
        while pending:
            _drain(loop, pending, n, wait=True)
    except KeyboardInterrupt:
        _drain(loop, pending, n, stopping=True)
        if not loop.should_stop():
            raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return loop.results


def _rewrite_ahead(loop, pool: ThreadPoolExecutor, questions: Sequence[Question], idx: int, done: Mapping,
                   rewrites: dict[int, Future]) -> None:
    """With a rewriting strategy: the rewrites of the next ``concurrency`` questions, in workers."""
    if loop.rewriter is None:
        return
    for j in range(idx, min(len(questions), idx + loop.concurrency)):
        if j not in rewrites and questions[j].id not in done:
            rewrites[j] = pool.submit(loop.rewrite, questions[j])


def _submitted(loop, pool: ThreadPoolExecutor, idx: int, n: int, q: Question,
               rewrites: dict[int, Future]) -> QuestionResult | Future:
    """Retrieve ``q`` here, then its judge calls in a worker (a failed retrieval: its row at once)."""
    p = Partial(q)
    try:
        error, rank, chunks = loop._retrieved(idx + 1, n, p, wait_for(loop, rewrites.pop(idx))
                                              if idx in rewrites else None)
    except (Exception, SystemExit) as err:
        loop.stop_if_signalled(err)
        return loop.failed_row(p, err)
    return pool.submit(loop._judged, p, rank, chunks, error)


def wait_for(loop, future: Future) -> Any:
    """A worker's result, waiting in short steps so that a signal or a stop is seen."""
    while True:
        if future.done():
            return future.result()
        if loop.should_stop():
            raise KeyboardInterrupt("stop requested")
        try:
            return future.result(timeout=0.2)
        except TimeoutError:
            continue


def _drain(loop, pending: deque, n: int, wait: bool = False, stopping: bool = False) -> None:
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
            row = wait_for(loop, item)  # a worker's KeyboardInterrupt (a stop) propagates
        else:
            row = item
        pending.popleft()
        loop._finished(i, n, row)
        wait = False
