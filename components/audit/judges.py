"""Which judges an audit grades with (:func:`audited_judges`): the run's recorded judge as the
environment resolves it, or the judges ``--judges`` names; each checked as a run checks its judges
at start-up. The offline judge weighs terms over the run's corpus, read again here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from loguru import logger

from components.analysis.panel import PANEL_PROVIDER
from components.judges.panel import panel_settings, parse_judges
from components.judges.providers import provider_class
from components.judges.settings import Settings
from components.run.evaluation import Judging, load_judging
from utils.errors import InputError
from utils.results import RunResult


@dataclass
class AuditedJudge:
    """One judge to audit: its name, its grader, and its setup (provider, model)."""

    name: str
    judging: Judging

    @property
    def provider(self) -> str:
        return self.judging.setup.judge_provider.name

    @property
    def model(self) -> str:
        choice = self.judging.setup.judge
        return choice.model if choice is not None else getattr(self.judging.judge, "model", self.provider)


def audited_judges(result: RunResult, settings: Settings, env: Mapping[str, str],
                   judges: str | Sequence | None = None, corpus: str | Path | None = None) -> list[AuditedJudge]:
    """The judges to audit: ``judges`` (``--judges``) when given, else the run's recorded judge as the
    environment's ``settings`` resolve it (refused when they name another one). Checked like a run's
    judges at start-up (:func:`components.run.evaluation.load_judging`)."""
    recorded = result.run.judge
    if judges is not None:
        settings = panel_settings(parse_judges(judges), env)
    elif recorded.provider == PANEL_PROVIDER:
        raise InputError(f"{result.source}: the run was graded by a panel of judges ({recorded.model}): name the "
                         "judges to audit with --judges")
    elif not _same_judge(settings, recorded.provider, recorded.model):
        found = f"{settings.judge}/{settings.judge_model}" if settings.judge_model else settings.judge
        raise InputError(f"{result.source} was graded by {recorded.provider}/{recorded.model}, and the environment's "
                         f"judge is {found}: set the environment to that judge (BENCHMARK_JUDGE_MODEL=<provider>/"
                         "<model>, or BENCHMARK_JUDGE=offline), or name the judges to audit with --judges")
    members = settings.panel or ()
    need_corpus = any(not provider_class(m.settings.judge).calls_models for m in members) \
        or (not members and not provider_class(settings.judge).calls_models)
    chunks = _corpus_chunks(result, corpus) if need_corpus else []
    judging = load_judging(settings, chunks, chunk_relevance=False, diagnose=False)
    if not judging.members:
        return [AuditedJudge(_name(judging), judging)]
    return [AuditedJudge(m.name, j) for m, j in zip(settings.panel, judging.members, strict=True)]


def _same_judge(settings: Settings, provider: str, model: str) -> bool:
    if settings.judge != provider:
        return False
    return settings.judge_model is None or settings.judge_model == model


def _name(judging: Judging) -> str:
    choice = judging.setup.judge
    return f"{judging.setup.judge_provider.name}/{choice.model}" if choice is not None else \
        judging.setup.judge_provider.name


def _corpus_chunks(result: RunResult, corpus: str | Path | None) -> list:
    """The chunks of the run's corpus (the offline judge's IDF table): ``corpus``, or where the run
    recorded it (the built-in corpus, or its folder), chunked as the run chunked it."""
    from components.core import resolve_strategy
    from components.core.chunking import Chunking, chunk_corpus
    from components.readers import load_corpus
    from utils.results import BUILTIN_PREFIX

    source = result.run.corpus.source
    if corpus is None and source and not source.startswith(BUILTIN_PREFIX) and not Path(source).exists():
        raise InputError(f"{result.source}: the offline judge weighs terms over the run's corpus, {source}, which is "
                         "not there: give its folder with --corpus")
    documents = load_corpus(corpus if corpus is not None else
                            None if not source or source.startswith(BUILTIN_PREFIX) else source).documents
    configuration = result.run.configuration or {}
    if configuration.get("chunk_size"):
        chunking = Chunking(configuration["chunk_size"], configuration.get("chunk_overlap") or 0)
    else:
        try:
            chunking = resolve_strategy(result.run.strategy or "").chunking
        except InputError:
            chunking = Chunking()
    chunks = chunk_corpus(documents, chunking)
    if result.run.corpus.chunks is not None and len(chunks) != result.run.corpus.chunks:
        logger.warning("The corpus gives {} chunks, the run recorded {}: the offline judge's term weights may "
                       "differ from the run's", len(chunks), result.run.corpus.chunks)
    return chunks
