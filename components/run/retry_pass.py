"""The retry pass: after the loop, one more sequential pass over the rows whose grade failed
transiently (rate limit, overload, 5xx, a reset connection: never a timeout, see
:mod:`components.run.retry_policy`), after waiting the longest
``retry-after`` seen (at most the loop's ``retry_wait_max_s``). Which judges grade again is the
judges' to say (:meth:`components.run.judges.Judges.retried`): the one judge, or each judge of a
panel whose own grade failed transiently."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from loguru import logger

from utils.results import QuestionResult


def retry_transient(loop, sleep: Callable[[float], None] = time.sleep) -> int:
    """The retry pass over ``loop``'s rows (module docstring); how many were recovered."""
    judges = loop.judges
    todo = [(pos, row) for pos, row in enumerate(loop.results) if isinstance(row, QuestionResult)
            and row.question_id in loop.graded_with
            and judges.wants_retry(loop, loop.graded_with[row.question_id], row)]
    if not todo or not judges.can_retry():
        return 0
    wait = min(loop.retry_wait_max_s, loop.longest_retry_after)
    logger.info("Retrying {} question(s) whose grade failed transiently{}", len(todo),
                f" after waiting {wait:g}s" if wait else "")
    if wait:
        sleep(wait)
    n = len(loop.results)
    for pos, row in todo:
        if loop.should_stop() or loop.budget_exhausted or not judges.can_retry():
            break
        p = loop.graded_with[row.question_id]  # its retrieval, rewrite, relevance and cost so far
        chunks = [s.chunk for s in p.retrieved]
        if not judges.regrade(loop, p, chunks):
            continue
        new = replace(loop.row(p, row.rank, None), recovered=True)
        if loop.annotate is not None:
            new = replace(new, **loop.annotate(p.q, chunks, new))
        loop.note_recovered()
        loop.finish(pos + 1, n, new, position=pos)
    logger.info("Retry pass: {} of {} recovered", loop.recovered, len(todo))
    return loop.recovered
