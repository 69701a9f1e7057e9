"""The benchmark loop, one for every strategy: for each question, in order, one at a time:
retrieve the top k chunks, rank the needle, grade, score, log, record.

:meth:`BenchmarkLoop.run` appends each result to ``loop.results`` *before* logging its line, so
after an interruption (KeyboardInterrupt raised mid-run) ``loop.results`` holds every question the
console reported as done. A KeyboardInterrupt can be lost (an extension that runs Python code
without passing errors on swallows it), so the loop also asks ``should_stop()`` before each
retrieval and each judge call, and returns what is done when it says yes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Protocol

from loguru import logger

from components.run.retrieval_grader import GradeResult
from poc.chunking import Chunk
from poc.retriever import Retriever, ScoredChunk
from utils.errors import JudgeError
from utils.metrics import RetrievalMetrics as M
from utils.questions import Question
from utils.results import QuestionResult, RetrievedItem

PASS_MARK = 7.0  # the ✓ in a question's log line


class Judge(Protocol):
    provider: str
    model: str

    def grade(self, question: str, expected_answer: str | None, chunks: Sequence[Chunk]) -> GradeResult: ...


def _short(text: str, width: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _as_scored(item: object) -> ScoredChunk:
    if isinstance(item, ScoredChunk):
        return item
    if hasattr(item, "chunk"):
        return ScoredChunk(item.chunk, float(getattr(item, "score", 0.0)))
    if hasattr(item, "doc_id"):
        return ScoredChunk(item, float("nan"))
    raise TypeError(f"retrieve() returned a {type(item).__name__}; return poc.retriever.ScoredChunk items")


class BenchmarkLoop:
    def __init__(self, retriever: Retriever, judge: Judge, k: int = 5,
                 should_stop: Callable[[], bool] = lambda: False) -> None:
        self.retriever, self.judge, self.k = retriever, judge, k
        self.should_stop = should_stop
        self.judge_failure: JudgeError | None = None  # set by the first fatal judge error
        self.results: list[QuestionResult] = []

    def _grade(self, q: Question, chunks: list[Chunk]) -> GradeResult:
        if self.judge_failure is not None:
            err = self.judge_failure
            return GradeResult(None, None, 0.0, f"judge_unusable: not graded after an earlier {err.kind} error", None)
        try:
            return self.judge.grade(q.question, q.expected_answer, chunks)
        except JudgeError as err:  # fatal: stop calling the judge
            self.judge_failure = err
            logger.error("judge unusable ({}): {}", err.kind, err)
            return GradeResult(None, None, 0.0, f"{err.kind}: {err}", None)

    def _retrieve(self, q: Question) -> tuple[list[ScoredChunk], float, str | None]:
        start = time.perf_counter()
        try:
            retrieved = [_as_scored(x) for x in self.retriever.retrieve(q.question, self.k)][: self.k]
        except Exception as err:
            logger.opt(exception=err).error("[{}] retrieval failed: {}: {}", q.id, type(err).__name__, err)
            return [], (time.perf_counter() - start) * 1000, f"retrieval_error: {type(err).__name__}: {err}"
        return retrieved, (time.perf_counter() - start) * 1000, None

    def run(self, questions: Sequence[Question]) -> list[QuestionResult]:
        self.results = []
        n = len(questions)
        for i, q in enumerate(questions, start=1):
            if self.should_stop():
                break
            retrieved, latency_ms, retrieval_error = self._retrieve(q)
            rank = M.calculate_rank(retrieved, q.needle_doc_ids)
            logger.trace("[{}/{}] retrieved: {}", i, n, [s.chunk.doc_id for s in retrieved])
            logger.trace("[{}/{}] needle {} rank: {}", i, n, "/".join(q.needle_doc_ids), rank)
            chunks = [s.chunk for s in retrieved]
            if self.should_stop():  # the current question is abandoned, as on KeyboardInterrupt
                break
            if retrieval_error:
                grade = GradeResult(None, None, 0.0, retrieval_error, None)
            else:
                grade = self._grade(q, chunks)
            total = M.calculate_total_score(grade.grade, rank)
            logger.debug("[{}/{}] grade={} reasoning={}", i, n, grade.grade, grade.reasoning or grade.error)
            logger.debug("[{}/{}] total = grade × weight = {} × {} = {}", i, n, grade.grade, M.rank_weight(rank), total)
            self.results.append(QuestionResult(
                question_id=q.id, question=q.question, expected_answer=q.expected_answer,
                needle_doc_id=q.needle_doc_ids[0], needle_doc_ids=list(q.needle_doc_ids),
                needle_found=rank is not None, rank=rank, hit_at_1=rank == 1,
                hit_at_5=rank is not None and rank <= 5, llm_grade=grade.grade, llm_reasoning=grade.reasoning,
                grade_error=grade.error, llm_raw_reply=grade.raw, prompt_variant=grade.prompt_variant,
                total_score=total, latency_ms=round(latency_ms, 3),
                grading_latency_ms=round(grade.latency_ms, 3),
                retrieved=[RetrievedItem(rank=j, doc_id=s.chunk.doc_id, chunk_id=s.chunk.chunk_id,
                                         score=None if s.score != s.score else round(s.score, 6))
                           for j, s in enumerate(retrieved, start=1)],
                extra=dict(q.extra),
            ))
            mark = "✓" if total is not None and total >= PASS_MARK else "✗"
            logger.info("[{}/{}] {} R{} G{} T{} ({:.0f}ms) {}", i, n, mark, rank if rank else "-",
                        grade.grade if grade.grade is not None else "-",
                        f"{total:.1f}" if total is not None else "-", latency_ms, _short(q.question))
        return self.results
