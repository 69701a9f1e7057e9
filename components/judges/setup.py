"""Which models a run calls and which judge grades, chosen through the provider registry.

:func:`check_models` is the start-up check, run before the corpus is loaded: for every model the
run will call (the judge's, and the rewriter's when the strategy rewrites queries) the role's
provider checks the model and chooses the request settings once
(:meth:`components.judges.providers.Provider.check_model`). :func:`make_judge` builds the judge
from that setup: the LLM grader over the checked model, or the offline lexical judge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from loguru import logger

from components.core import Chunk
from components.judges.providers import ModelChoice, Provider, provider_class, providers
from components.judges.settings import Settings
from utils.errors import InputError


@dataclass(frozen=True)
class JudgeSetup:
    """The providers of the run's roles and what the start-up check chose for each model
    (``judge`` None: a provider that calls no model; ``rewriter`` None: no query rewriting)."""

    judge_provider: Provider
    judge: ModelChoice | None
    rewriter_provider: Provider | None = None
    rewriter: ModelChoice | None = None

    @property
    def calls_models(self) -> bool:
        return self.judge is not None

    def note(self) -> str:
        """The judge's note in ``run.judge``: what graded, in words."""
        cls = type(self.judge_provider)
        return cls.note() if hasattr(cls, "note") else f"LLM judge: {cls.label}"

    def console_line(self, settings: Settings) -> str:
        """The start-up line that says which judge grades."""
        if self.judge is None:
            default = next((c for c in providers().values() if c.is_default), None)
            why = f"no {default.missing_key()}, or BENCHMARK_JUDGE={settings.judge}" if default else \
                f"BENCHMARK_JUDGE={settings.judge}"
            return f"Judge: {self.note()} ({why})"
        why = ", the default for a server on this machine: BENCHMARK_JUDGE_TIMEOUT sets another" \
            if settings.timeout_source == "loopback default" else ""
        return (f"Judge: {type(self.judge_provider).label}, model {self.judge.model} "
                f"(timeout {settings.judge_timeout:g}s{why})")


def make_provider(settings: Settings, name: str, models: dict[str, str]) -> Provider:
    """Provider ``name`` configured from ``settings`` for ``models`` (role → model id)."""
    return provider_class(name)(settings.provider_config(name, models), settings)


def check_models(settings: Settings, *, rewrites_queries: bool = False) -> JudgeSetup:
    """The start-up check for every model the run will call.

    Raises :class:`InputError` (key refused, model unknown or retired, effort not supported, a
    rewriting strategy without a model to rewrite with) or a fatal
    :class:`~utils.errors.JudgeError` (the API cannot be reached)."""
    if rewrites_queries and settings.rewriter is None:
        default = next((c for c in providers().values() if c.is_default), None)
        key = default.missing_key() if default else "a provider's key"
        raise InputError(f"this strategy rewrites queries with an LLM and needs {key} (or BENCHMARK_REWRITER_MODEL="
                         "<provider>/<model>): set it, or run --strategy modular-no-llm (the same retrieval without "
                         "rewriting)")
    judge_cls = provider_class(settings.judge)
    models = {"judge": settings.judge_model} if judge_cls.calls_models and settings.judge_model else {}
    judge_provider = make_provider(settings, settings.judge, models)
    judge = None
    if judge_cls.calls_models:
        judge = judge_provider.check_model("judge", settings.judge_model, effort=settings.judge_effort)
        logger.info("Judge settings: {}", judge.describe())
    rewriter_provider = rewriter = None
    if rewrites_queries:
        if settings.rewriter == settings.judge:
            rewriter_provider = judge_provider
        else:
            rewriter_provider = make_provider(settings, settings.rewriter, {"rewriter": settings.rewriter_model})
        rewriter = rewriter_provider.check_model("rewriter", settings.rewriter_model)
        logger.info("Query rewriter settings: {}", rewriter.describe())
    return JudgeSetup(judge_provider, judge, rewriter_provider, rewriter)


def make_judge(settings: Settings, chunks: Sequence[Chunk], setup: JudgeSetup | None = None):
    """The judge for ``settings``: the role's provider's judge (the LLM grader over the checked
    model, or the offline lexical judge, which needs the corpus ``chunks`` for its IDF table).
    Without ``setup`` the start-up check runs here."""
    setup = setup if setup is not None else check_models(settings)
    return setup.judge_provider.judge(setup.judge, chunks)


def relevance_judge(setup: JudgeSetup, judge):
    """The per-chunk relevance judge of the run's judge: the LLM one over the judge's model, or
    the judge itself when it rates chunks (the lexical judge)."""
    if setup.judge is None:
        return judge
    from components.judges.chunk_relevance import LLMRelevanceJudge

    return LLMRelevanceJudge(setup.judge_provider.model(setup.judge))
