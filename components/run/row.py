"""A question's row (:class:`~utils.results.QuestionResult`) from what the loop knows of it (its
:class:`~components.run.partial.Partial`): retrieval, rank metrics, grade(s), usage, cost, and what
the judges add (:meth:`components.run.judges.Judges.row_fields`)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping

from components.judges.retrieval_grader import GradeResult
from components.run.partial import Partial
from utils.metrics import RetrievalMetrics as M
from utils.results import QuestionResult, RetrievedItem


def build_row(p: Partial, rank: int | None, internal_error: str | None, *, k: int, keep_text: bool, repeats: int,
              judge_fields: Mapping, safe: bool = False) -> QuestionResult:
    """The row of ``p`` (``safe``: after an exception, the rank computed again, a total that cannot be
    computed left null)."""
    q = p.q
    if safe:  # after an exception: recompute what may not have been computed
        try:
            rank = M.calculate_rank(p.retrieved, q.needle_doc_ids)
        except Exception:  # noqa: BLE001
            rank = None
    g = p.grade or GradeResult(None, None, 0.0, None, None)
    try:
        total = M.calculate_total_score(g.grade, rank)
    except Exception:  # noqa: BLE001 - a total that cannot be computed is not a reason to lose the row
        total = None
    reply = g.reply
    grades = [x.grade for x in p.grades] if repeats > 1 else None
    present = [x for x in (grades or []) if x is not None]
    rel = p.relevance
    return QuestionResult(
        question_id=q.id, question=q.question, expected_answer=q.expected_answer,
        needle_doc_id=q.needle_doc_ids[0], needle_doc_ids=list(q.needle_doc_ids),
        needle_grades=dict(q.needle_grades) if q.needle_grades else None, needle_found=rank is not None, rank=rank,
        hit_at_1=rank == 1, hit_at_5=rank is not None and rank <= 5, llm_grade=g.grade, llm_reasoning=g.reasoning,
        grade_error=internal_error or g.error, grade_clamped_from=g.clamped_from, llm_raw_reply=g.raw,
        prompt_variant=g.prompt_variant,
        total_score=total, latency_ms=p.latency_ms, grading_latency_ms=round(g.latency_ms, 3),
        retrieved=[RetrievedItem(rank=j, doc_id=s.chunk.doc_id, chunk_id=s.chunk.chunk_id,
                                 score=None if s.score is None else round(s.score, 6),
                                 title=getattr(s.chunk, "title", None),
                                 heading_path=list(getattr(s.chunk, "heading_path", ()) or ()),
                                 text=s.chunk.index_text if keep_text else None)
                   for j, s in enumerate(p.retrieved, start=1)],
        extra=dict(q.extra),
        **M.row_metrics(p.retrieved, q.relevance, k),
        **_reply_fields(reply),
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
        **judge_fields,
    )


def _reply_fields(reply) -> dict:
    """What the row keeps of the judge's reply (its call's identity and usage)."""
    names = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return {"stop_reason": reply.stop_reason if reply else None, "request_id": reply.request_id if reply else None,
            "judge_model": reply.model if reply else None, **{n: getattr(reply, n) if reply else None for n in names}}
