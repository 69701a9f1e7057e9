"""Per-chunk graded relevance: a judge rates each retrieved chunk 0-3.

Scale: **3** highly relevant (directly answers the question), **2** fairly relevant (related,
partially useful), **1** marginally relevant (tangential, limited value), **0** irrelevant.

:class:`LLMRelevanceJudge` makes one call per question that asks for all k chunks' scores as one
JSON list. The chunks are framed exactly as the grader frames them
(:func:`components.judges.retrieval_grader.format_chunks`: header/footer lines, every line quoted),
and the prompt text is hashed (:data:`RELEVANCE_PROMPT_SHA256`) like the grader's.
The offline counterpart is :meth:`components.judges.lexical_judge.LexicalJudge.relevance`.

Parsing (:func:`parse_relevance`): JSON lists are read anywhere in the reply (bare, inside code
fences, after prose). A list holds integers (``[3, 0, 2]``) or objects carrying the score under
``relevance``/``score``/``rating`` (``[{"chunk": 1, "relevance": 3}, ...]``; when every object has
a ``chunk`` number and those numbers are exactly 1..k, they set the order). An object holding such
a list under one of those keys or ``scores`` is read too. The **first** list that is valid is the
answer (the grader's rule, :mod:`components.judges.retrieval_grader`: a list quoted later — from a
chunk, or a second thought — is never read); lists that are not valid score lists (a prose
reference such as ``chunks [1, 3]``) are passed over. When none is valid, the reply is unscored
(``scores=None``) with the reason of the first candidate: wrong length, a non-integer (``2.5``,
``"high"``, ``true``; ``3.0`` and ``"3"`` count as 3), a value outside 0-3 (not clamped), or a
non-finite value (``NaN``, ``Infinity``). The raw reply is always kept.

The prompt escapes its values as the grader's does (:func:`~components.judges.retrieval_grader.prompt_field`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from loguru import logger

from components.core import Chunk
from components.judges.llm import LLM, LLMReply
from components.judges.retrieval_grader import fill_prompt, fill_slots, format_chunks, json_values, prompt_field
from utils.errors import JudgeError

# Two variants differing only in their slots, as the grading prompt's: against the expected answer,
# or (no expected answer) from the question alone.
_RELEVANCE_TEMPLATE = """\
You are an impartial judge rating the relevance of each retrieved chunk for a documentation search system.

USER QUESTION: {question}

{reference_line}

RETRIEVED CHUNKS:
---
{chunks_text}
---

TASK: Rate how relevant EACH of the {chunk_count} retrieved chunks is to answering the user's question.
Rate every chunk on its own, in the order given.

RELEVANCE SCALE:
- 3: HIGHLY RELEVANT - The chunk directly addresses the question ({key_facts})
- 2: FAIRLY RELEVANT - Related content, partially useful for answering
- 1: MARGINALLY RELEVANT - Tangentially related, limited value
- 0: IRRELEVANT - No meaningful connection to the question

Respond with ONLY a JSON list of {chunk_count} integers, the score of chunk 1 first (no markdown, no extra text):
[<score of chunk 1>, <score of chunk 2>, ...]"""

RELEVANCE_PROMPT = fill_slots(_RELEVANCE_TEMPLATE, {
    "reference_line": "EXPECTED ANSWER (ground truth): {expected_answer}",
    "key_facts": "it states key facts of the expected answer"})
REFERENCE_FREE_RELEVANCE_PROMPT = fill_slots(_RELEVANCE_TEMPLATE, {
    "reference_line": "EXPECTED ANSWER (ground truth): none given - judge from the question alone.",
    "key_facts": "it states key facts a correct answer needs"})

RELEVANCE_PROMPT_SHA256 = hashlib.sha256(RELEVANCE_PROMPT.encode()).hexdigest()
REFERENCE_FREE_RELEVANCE_PROMPT_SHA256 = hashlib.sha256(REFERENCE_FREE_RELEVANCE_PROMPT.encode()).hexdigest()

MIN_RELEVANCE, MAX_RELEVANCE = 0, 3
SCORE_KEYS = ("relevance", "score", "rating")


@dataclass(frozen=True)
class RelevanceResult:
    """One question's per-chunk relevance: ``scores`` (0-3, one per chunk, in retrieved order) or
    None with ``error`` (``"<kind>: <message>"``); ``raw`` the reply text and ``reply`` the whole
    :class:`LLMReply` (both None for the offline judge or when the call failed)."""

    scores: list[int] | None
    error: str | None
    raw: str | None
    reply: LLMReply | None


def build_relevance_prompt(question: str, expected_answer: str | None, chunks: Sequence[Chunk]) -> str:
    template = RELEVANCE_PROMPT if expected_answer else REFERENCE_FREE_RELEVANCE_PROMPT
    return fill_prompt(template, {"question": prompt_field(question),
                                  "expected_answer": prompt_field(expected_answer or ""),
                                  "chunks_text": format_chunks(chunks), "chunk_count": str(len(chunks))})


# --------------------------------------------------------------------------- parsing


class _Invalid(Exception):
    """Why a candidate list is not a valid score list."""


def _score_of(item: object) -> object:
    if isinstance(item, dict):
        for key in SCORE_KEYS:
            if key in item:
                return item[key]
        raise _Invalid(f"an object without a score ({', '.join(SCORE_KEYS)})")
    return item


def _to_score(value: object, position: int) -> int:
    where = f"the score of chunk {position}"
    if isinstance(value, bool):
        raise _Invalid(f"{where} is {json.dumps(value)}, not an integer")
    if isinstance(value, str):
        text = value.strip()
        if not re.fullmatch(r"[+-]?\d+", text):
            raise _Invalid(f"{where} is {value!r}, not an integer")
        value = int(text)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Invalid(f"{where} is {value}, not a finite number")
        if not value.is_integer():
            raise _Invalid(f"{where} is {value:g}, not an integer")
        value = int(value)
    if not isinstance(value, int):
        raise _Invalid(f"{where} is a {type(value).__name__}, not an integer")
    if not MIN_RELEVANCE <= value <= MAX_RELEVANCE:
        raise _Invalid(f"{where} is {value}, outside {MIN_RELEVANCE}-{MAX_RELEVANCE}")
    return value


def _ordered(items: list) -> list:
    """Objects that all carry ``chunk`` numbers forming exactly 1..n are put in that order."""
    if items and all(isinstance(x, dict) and "chunk" in x for x in items):
        numbers = [x["chunk"] for x in items]
        if (all(isinstance(n, int) and not isinstance(n, bool) for n in numbers)
                and sorted(numbers) == list(range(1, len(items) + 1))):
            return [x for _, x in sorted(zip(numbers, items, strict=True), key=lambda pair: pair[0])]
    return items


def _validate(items: list, n: int) -> list[int]:
    if len(items) != n:
        raise _Invalid(f"{len(items)} scores for {n} chunks")
    return [_to_score(_score_of(x), i) for i, x in enumerate(_ordered(items), start=1)]


def _candidates(raw: str) -> list[list]:
    """Lists that may hold the scores: top-level lists, and lists under a score key of an object."""
    out = []
    for value in json_values(raw, "[{"):
        if isinstance(value, list):
            out.append(value)
        elif isinstance(value, dict):
            out.extend(v for k, v in value.items() if k in (*SCORE_KEYS, "scores") and isinstance(v, list))
    return out


def parse_relevance(raw: str | None, n: int) -> tuple[list[int] | None, str | None]:
    """``(scores, error)`` from a reply rating ``n`` chunks; exactly one of them is None."""
    if raw is None or not raw.strip():
        return None, "unparseable: empty reply"
    candidates = _candidates(raw)
    problem = None
    for items in candidates:
        try:
            return _validate(items, n), None
        except _Invalid as err:
            problem = problem or str(err)
    if problem is not None:
        return None, f"unparseable: {problem}"
    if raw.count("[") > raw.count("]"):
        return None, "truncated: the reply ends inside a JSON list"
    return None, "unparseable: no JSON list in reply"


# --------------------------------------------------------------------------- the LLM judge

class LLMRelevanceJudge:
    """Rates each retrieved chunk 0-3 with one call to ``llm`` (any :class:`components.judges.llm.LLM`).

    No chunks → ``scores=[]`` without a call. A transient :class:`JudgeError` or an unparseable
    reply gives ``scores=None`` with the reason; a fatal one propagates so the caller stops calling.
    """

    def __init__(self, llm: LLM) -> None:
        self.llm = llm

    @property
    def model(self) -> str:
        return self.llm.model

    def relevance(self, question: str, expected_answer: str | None, chunks: Sequence[Chunk]) -> RelevanceResult:
        if not chunks:
            return RelevanceResult([], None, None, None)
        logger.debug("[chunk-relevance] Rating {} chunks for question: {}", len(chunks), question)
        prompt = build_relevance_prompt(question, expected_answer, chunks)
        try:
            reply = self.llm.complete(prompt)
        except JudgeError as err:
            if err.fatal:
                raise
            logger.warning("[chunk-relevance] FAILED: {}: {}", err.kind, err)
            return RelevanceResult(None, f"{err.kind}: {err}", None, None)
        scores, error = parse_relevance(reply.text, len(chunks))
        if reply.stop_reason == "max_tokens":  # a cut reply is never a rating, whatever the cut text holds
            scores, error = None, "truncated: the reply was cut at its output cap (stop_reason=max_tokens)"
        if scores is None:
            logger.warning("[chunk-relevance] UNSCORED: {} (raw reply: {!r})", error, (reply.text or "")[:200])
        else:
            logger.debug("[chunk-relevance] SUCCESS: {}", scores)
        return RelevanceResult(scores, error, reply.text, reply)
