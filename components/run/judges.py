"""Which judge grades: the LLM judge (Claude through the Anthropic API) or the offline lexical one.

:func:`make_judge` is the one place a judge is built from the run's :class:`utils.settings.Settings`;
every command that grades (the run, ``validate``) takes its judge from here.
"""

from __future__ import annotations

from collections.abc import Sequence

from poc.chunking import Chunk
from utils.settings import Settings

OFFLINE_NOTE = "offline lexical judge: grades are a lexical proxy (IDF-weighted key-term overlap), not Sonnet"


def make_judge(settings: Settings, chunks: Sequence[Chunk]):
    """The judge for ``settings``: a :class:`RetrievalGrader` over the Anthropic API, or the
    :class:`LexicalJudge` (which needs the corpus ``chunks`` for its IDF table)."""
    if settings.judge == "anthropic":
        from components.run.retrieval_grader import RetrievalGrader
        from utils import llm_provider

        llm_provider.configure(llm_provider.ProviderConfig(
            api_key=settings.api_key, base_url=settings.base_url,
            models=(("claude-sonnet", settings.sonnet_model), ("claude-haiku", settings.haiku_model)),
            max_retry_wait_s=min(10.0, settings.judge_timeout)))
        return RetrievalGrader(timeout=settings.judge_timeout)
    from components.run.lexical_judge import LexicalJudge

    return LexicalJudge(chunks)
