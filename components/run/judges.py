"""Which models a run calls and which judge grades.

:func:`check_models` is the start-up check, run before the corpus is loaded: for every model the
run will call (the judge, and Claude Haiku when the strategy rewrites queries) it asks the Models
API what the model accepts and chooses the request settings once
(:meth:`utils.llm_provider.AnthropicProvider.check_model`). :func:`make_judge` builds the judge:
the LLM grader over those settings, or the offline lexical judge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from loguru import logger

from poc.chunking import Chunk
from utils.errors import InputError
from utils.llm_provider import AnthropicProvider, ProviderConfig
from utils.model_settings import ModelSettings
from utils.settings import Settings

OFFLINE_NOTE = "offline lexical judge: grades are a lexical proxy (IDF-weighted key-term overlap), not Sonnet"
LLM_NOTE = "LLM judge (Claude) via the Anthropic Messages API"
MAX_RETRY_WAIT_S = 10.0  # the SDK's own retries wait at most min(this, the judge timeout)


@dataclass(frozen=True)
class LLMSetup:
    """The provider and the settings chosen for each model the run calls (None: not called)."""

    provider: AnthropicProvider
    judge: ModelSettings | None
    rewriter: ModelSettings | None


def provider_for(settings: Settings) -> AnthropicProvider:
    return AnthropicProvider(ProviderConfig(
        api_key=settings.api_key, base_url=settings.base_url, timeout=settings.judge_timeout,
        max_retry_wait_s=min(MAX_RETRY_WAIT_S, settings.judge_timeout)))


def check_models(settings: Settings, *, rewrites_queries: bool = False) -> LLMSetup | None:
    """The start-up check for every model the run will call; None when it calls none.

    Raises :class:`InputError` (key refused, model unknown or retired, effort not supported, a
    rewriting strategy without a key) or a fatal :class:`JudgeError` (the API cannot be reached)."""
    uses_judge = settings.judge == "anthropic"
    if rewrites_queries and not settings.api_key:
        raise InputError("this strategy rewrites queries with Claude Haiku and needs ANTHROPIC_API_KEY: set the key, "
                         "or run --strategy modular-no-llm (the same retrieval without rewriting)")
    if not uses_judge and not rewrites_queries:
        return None
    provider = provider_for(settings)
    judge = rewriter = None
    if uses_judge:
        judge = provider.check_model(settings.sonnet_model, effort=settings.judge_effort, line="sonnet",
                                     env_var="BENCHMARK_SONNET_MODEL")
        logger.info("Judge settings: {}", judge.describe())
    if rewrites_queries:
        rewriter = provider.check_model(settings.haiku_model, line="haiku", env_var="BENCHMARK_HAIKU_MODEL")
        logger.info("Query rewriter settings: {}", rewriter.describe())
    return LLMSetup(provider, judge, rewriter)


def make_judge(settings: Settings, chunks: Sequence[Chunk], setup: LLMSetup | None = None):
    """The judge for ``settings``: a :class:`RetrievalGrader` over the checked judge model, or the
    :class:`LexicalJudge` (which needs the corpus ``chunks`` for its IDF table). Without ``setup``
    the start-up check runs here."""
    if settings.judge == "anthropic":
        from components.run.retrieval_grader import RetrievalGrader

        setup = setup if setup is not None and setup.judge is not None else check_models(settings)
        return RetrievalGrader(setup.provider.model(setup.judge))
    from components.run.lexical_judge import LexicalJudge

    return LexicalJudge(chunks)
