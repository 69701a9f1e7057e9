"""QueryRewriter: an LLM rewrites a user's question into a better search query.

Falls back to the original query, with one logged warning per rewriter, when no LLM is
available or a call fails.
"""

from __future__ import annotations

from loguru import logger

from utils import llm_provider
from utils.llm_provider import LLMCaller

REWRITE_PROMPT = """Rewrite the user's question into a concise search query for a documentation search engine.
Keep every technical term, name, flag and version from the question; add the terms the documentation
would most likely use for this topic. Answer with the query only, on one line.

QUESTION: {question}"""


class QueryRewriter:
    def __init__(self, call_llm: LLMCaller | None = llm_provider.call_llm, model: str = "claude-haiku",
                 timeout: float = 10.0) -> None:
        self.call_llm, self.model, self.timeout = call_llm, model, timeout
        self._warned = False

    def _fallback(self, reason: str, query: str) -> str:
        if not self._warned:
            logger.warning("[query-rewriter] using the original queries: {}", reason)
            self._warned = True
        return query

    def rewrite(self, query: str) -> str:
        if self.call_llm is None:
            return self._fallback("no LLM available", query)
        try:
            text = self.call_llm(REWRITE_PROMPT.replace("{question}", query), model=self.model, timeout=self.timeout)
        except Exception as err:  # any failure: the original query still works
            return self._fallback(f"the rewrite call failed ({type(err).__name__}: {str(err)[:200]})", query)
        line = next((ln.strip() for ln in (text or "").splitlines() if ln.strip()), "")
        if not line:
            return self._fallback("the LLM answered with an empty rewrite", query)
        logger.trace("[query-rewriter] {!r} -> {!r}", query, line)
        return line
