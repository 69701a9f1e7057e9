"""QueryRewriter: an LLM (Claude Haiku by default) rewrites a question into a better search query.

It never degrades silently: a strategy that rewrites needs an LLM (``benchmark.py`` stops at
start-up without one); a transient failure falls back to the original query for that question
only, and the row records it (``query_used``, ``query_rewrite_error``); a fatal one
(:class:`JudgeError` with ``fatal=True``: key refused, model unknown, request rejected) propagates
and stops the run like the judge's.
"""

from __future__ import annotations

from dataclasses import dataclass

from loguru import logger

from utils.console import escape_control
from utils.errors import JudgeError
from components.judges.llm import LLM, LLMReply

REWRITE_PROMPT = """Rewrite the user's question into a concise search query for a documentation search engine.
Keep every technical term, name, flag and version from the question; add the terms the documentation
would most likely use for this topic. Answer with the query only, on one line.

QUESTION: {question}"""

MAX_QUERY_CHARS = 1000  # a longer "query" is not a rewrite: the original is used


def rewrite_prompt(question: str) -> str:
    """The rewriter's prompt for ``question``, its line breaks and control characters shown as
    escapes (as in the judge's prompts), so that a question cannot start a line of the instructions."""
    return REWRITE_PROMPT.replace("{question}", escape_control(question))


@dataclass(frozen=True)
class RewriteResult:
    query_used: str
    error: str | None = None  # "<kind>: <message>" when the original query was used
    reply: LLMReply | None = None


class QueryRewriter:
    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self.model = llm.model

    def rewrite(self, query: str) -> RewriteResult:
        try:
            reply = self.llm.complete(rewrite_prompt(query))
        except JudgeError as err:
            if err.fatal:
                raise
            logger.warning("[query-rewriter] using the original query: {}: {}", err.kind, err)
            return RewriteResult(query, f"{err.kind}: {err}")
        line = next((ln.strip() for ln in reply.text.splitlines() if ln.strip()), "")
        if not line or len(line) > MAX_QUERY_CHARS:
            why = "empty rewrite" if not line else f"rewrite longer than {MAX_QUERY_CHARS} characters"
            logger.warning("[query-rewriter] using the original query: {}", why)
            return RewriteResult(query, f"unusable_rewrite: {why}", reply)
        logger.trace("[query-rewriter] {!r} -> {!r}", query, line)
        return RewriteResult(line, None, reply)
