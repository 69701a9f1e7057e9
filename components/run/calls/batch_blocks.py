"""``--judge-batch`` in blocks, for adaptive judging (``--until-decided``, ``--target-ci``:
:mod:`components.run.adaptive`): the questions, retrieved in the judging order, are graded one block
per batch (or per batch of each judge of a panel); each block's rows are finished before the next
block is sent, so that the look after it decides whether the next one is sent at all. Slow: each
block waits for its batch (usually within the hour). Without blocks, the whole run is one block."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from components.judges.retrieval_grader import GradeResult

if TYPE_CHECKING:
    from components.run.benchmark_loop import BenchmarkLoop


def in_blocks(items: Sequence[Any], counts: Sequence[int] = ()) -> list[list[Any]]:
    """``items`` cut after each cumulative count of ``counts`` (its positions are 1-based); one block without."""
    if not counts:
        return [list(items)]
    edges = [0, *counts]
    return [list(items[a:b]) for a, b in zip(edges, edges[1:], strict=False) if b > a]


def set_unjudged(loop: BenchmarkLoop, block: Sequence[Any]) -> None:
    """The waiting items (:mod:`components.run.calls.judge_batch`'s) of ``block`` whose question judging
    no longer needs (``loop.unjudged``) get their row: retrieval kept, ``grade_error`` ``not judged: …``
    (and the diagnosis, as any row); nothing is sent for them."""
    for it in block:
        if it.waiting and (error := loop.unjudged(it.q)) is not None:
            it.partial.grade = GradeResult(None, None, 0.0, error, None)
            row = loop.row(it.partial, it.rank, None)
            it.row = row if loop.annotate is None else replace(row, **loop.annotate(it.q, it.chunks, row))
