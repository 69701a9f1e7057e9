"""One evaluation: a retriever over a corpus, graded question by question, to a :class:`RunResult`.

:func:`evaluate` is the engine behind the Python API (``components.api.evaluate``) and the
command line: it writes nothing and prints nothing (its log records are loguru's, disabled unless
an application enables them); what a caller wants to see or keep while it runs comes through
callbacks — ``on_row(row, i, n)`` after each question, ``record(row_json)`` before that (the
command line's journal), ``should_stop()`` asked before each retrieval and each judge call.

The run's options are one :class:`~components.run.spec.RunSpec`, checked before any work. The judge
side of a run is a :class:`Judging` (provider setup, judge, chunk-relevance judge, diagnoser; with a
panel of judges, one ``Judging`` per judge in ``members``), built once per corpus and reusable across
strategies; its ``kind`` (:class:`~components.run.judges.OneJudge` or
:class:`~components.run.panel.judges.Panel`) is what the run asks instead of whether there is a panel,
and its plan (:mod:`components.run.adaptive`, :class:`~components.run.adaptive.JudgeEvery` when every
question is judged) what it asks instead of whether there is one. The retrieval side is a
:class:`~components.run.retrieval.index_cache.PreparedIndex` (chunks and an indexed retriever).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from loguru import logger

from components.analysis.aggregate import build_report
from components.core import Chunk, Question, QuestionSet, Retriever, Strategy, resolve_strategy
from components.core.chunking import Chunking, chunk_corpus
from components.core.questions import check_needles
from components.judges.chunk_relevance import RELEVANCE_PROMPT_SHA256
from components.judges.providers import ModelChoice, provider_packages
from components.judges.retrieval_grader import PROMPT_SHA256, REFERENCE_FREE_PROMPT_SHA256
from components.judges.settings import Settings
from components.judges.setup import JudgeSetup, make_judge, relevance_judge
from components.readers import load_questions
from components.readers.questions_json import parse_questions
from components.run import adaptive as adaptive_run
from components.run import known_answers, retry_policy
from components.run.benchmark_loop import BenchmarkLoop
from components.run.judges import Judges
from components.run.panel.judges import judges_kind
from components.run.retrieval.index_cache import PreparedIndex, prepare_index
from components.run.spec import RunSpec
from components.run.retrieval.recorded import RECORDED, RECORDED_SOURCE, recorded_strategy, source_for
from utils.errors import InputError
from utils.console import escape_control
from utils.results import RETRIEVAL_ERROR, CorpusInfo, JudgeInfo, QuestionResult, RunInfo, RunResult
from utils.records.versions import package_versions

PACKAGES = ("bm25s", "wordllama", "numpy", "loguru", "PyStemmer", "PyYAML")  # and each provider's (its module)
MEMORY_SOURCE = "<in memory>"


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class Judging:
    """The judge side of a run over one corpus: which providers and models (``setup``), the judge,
    the chunk-relevance judge (None: chunks are not rated) and the diagnoser."""

    settings: Settings
    setup: JudgeSetup
    judge: Any
    relevance: Any = None
    diagnoser: Any = None
    members: list[Judging] = field(default_factory=list)  # a panel: each judge's own; []: the one judge

    @classmethod
    def build(cls, settings: Settings, setup: JudgeSetup, chunks: Sequence[Chunk],
              chunk_relevance: bool | None = None, judge: Any = None, diagnose: bool = True,
              setups: Sequence[JudgeSetup] = ()) -> Judging:
        """``chunk_relevance`` None: on when the judge calls no model (it costs nothing); ``diagnose``
        False: no diagnosis (``chunks`` are not a corpus, e.g. recorded retrievals without one). A panel
        (``settings.panel``) needs each judge's start-up check in ``setups``, the first being ``setup``."""
        from components.analysis.diagnosis import Diagnoser

        judge = judge if judge is not None else make_judge(settings, chunks, setup)
        wanted = chunk_relevance if chunk_relevance is not None else not setup.calls_models
        relevance = relevance_judge(setup, judge) if wanted else None
        diagnoser = Diagnoser(chunks, stats=getattr(judge, "stats", None)) if diagnose else None
        members = [cls(m.settings, s, judge if i == 0 else make_judge(m.settings, chunks, s))
                   for i, (m, s) in enumerate(zip(settings.panel, setups, strict=False))]  # a panel's (one judge: none)
        return cls(settings, setup, judge, relevance, diagnoser, members)

    @property
    def kind(self) -> type[Judges]:
        """The run's judge side: :class:`OneJudge` or :class:`Panel` (:func:`judges_kind`)."""
        return judges_kind(self.settings)

    @property
    def seats(self) -> list[Judging]:
        """Each judge's own ``Judging``, in order (the one judge: this one)."""
        return self.kind.seats(self)

    def annotate(self, q: Question, chunks: Sequence[Chunk], row: QuestionResult) -> dict:
        """What the diagnosis adds to a row: where the answer lived, and why a miss missed."""
        if self.diagnoser is None:
            return {}
        best = self.diagnoser.needle_best_chunk(q.expected_answer or q.question, q.needle_doc_ids)
        diagnosis = self.diagnoser.diagnose(q.question, q.expected_answer, q.needle_doc_ids, chunks, row.rank,
                                            row.llm_grade, row.total_score)
        return {"needle_best_chunk": best.to_json() if best else None,
                "diagnosis": diagnosis.to_json() if diagnosis else None}

    def judge_info(self, role: str, repeats: int, reply_models: Iterable[str] = ()) -> JudgeInfo:
        """``run.judge`` (role ``judge``) or ``run.rewriter`` (role ``rewriter``)."""
        setup = self.setup
        provider = setup.judge_provider if role == "judge" else setup.rewriter_provider
        choice: ModelChoice | None = setup.judge if role == "judge" else setup.rewriter
        relevance_sha = RELEVANCE_PROMPT_SHA256 if role == "judge" and self.relevance is not None else None
        if choice is None:
            return JudgeInfo(provider.name, getattr(self.judge, "model", provider.name), PROMPT_SHA256,
                             REFERENCE_FREE_PROMPT_SHA256, None, setup.note(), repeats=repeats,
                             relevance_prompt_sha256=relevance_sha, reply_models=list(reply_models))
        note = setup.note() if role == "judge" else f"query rewriter: {type(provider).label}"
        return JudgeInfo(provider.name, choice.model, PROMPT_SHA256, REFERENCE_FREE_PROMPT_SHA256,
                         self.settings.judge_timeout, note, requested_model=choice.model, repeats=repeats,
                         relevance_prompt_sha256=relevance_sha, reply_models=list(reply_models),
                         details=provider.describe(choice))


@dataclass
class RunContext:
    """What the command line adds to an evaluation: its identity and history, the journal, the
    rows taken over from ``--resume``, ``--judge-batch``. The API leaves it out."""

    id: str | None = None
    record: Callable[[dict], None] = lambda row: None  # the journal: each finished row, before on_row
    journal: str | None = None
    runs_dir: str | None = None
    output: str | None = None  # the --output file (absolute), recorded for --resume
    done: dict[str, QuestionResult] = field(default_factory=dict)  # rows taken over (--resume)
    resumed_from: str | None = None
    batch: Any = None  # a BatchJudge: grade through the provider's batch API
    previous_batches: list = field(default_factory=list)  # the batches the resumed run recorded
    grouped: Callable[[], Any] | None = None  # the journal's grouped() (batch rows fsynced together)
    questions_file: str | None = None
    panel_kept: dict = field(default_factory=dict)  # --resume of a panel: question id → judge → grade kept
    quick: bool = False
    selection: dict = field(default_factory=dict)
    log_file: str | None = None
    configuration: dict | None = None  # --suite: the configuration run (run.configuration)
    checked: bool = False  # the run's spec was checked already (RunSpec.check), before any work


def load_judging(settings: Settings, chunks: Sequence[Chunk], *, rewrites_queries: bool = False,
                 chunk_relevance: bool | None = None, diagnose: bool = True) -> Judging:
    """Check the models of ``settings`` (every judge of a panel) and build the judge side over ``chunks``."""
    setups = judges_kind(settings).check(settings, rewrites_queries=rewrites_queries)
    return Judging.build(settings, setups[0], chunks, chunk_relevance, diagnose=diagnose, setups=setups)


def prepare(retriever: Retriever | Strategy | str | PreparedIndex, corpus: Any = None, *,
            cache_dir: Path | None = None, check_ids: Callable[[frozenset[str], str], None] | None = None,
            name: str | None = None) -> tuple[PreparedIndex, str]:
    """``(prepared index, strategy name)`` for a retriever (an object with ``index``/``retrieve``,
    a registered strategy name, ``package.module:factory``, or a :class:`Strategy`) over
    ``corpus``: a folder of Markdown files, None (the built-in corpus), a
    :class:`~components.core.Corpus`, or a list of :class:`~components.core.Document`. An already
    :class:`PreparedIndex` is used as it is."""
    if isinstance(retriever, PreparedIndex):
        return retriever, name or type(retriever.retriever).__name__
    if isinstance(retriever, str):
        retriever = resolve_strategy(retriever)
    chunking = Chunking()
    if isinstance(retriever, Strategy):
        make, label, chunking = retriever.factory, retriever.name, retriever.chunking
    elif isinstance(retriever, Retriever):
        make, label = (lambda: retriever), type(retriever).__name__
    else:
        raise InputError(f"evaluate: {type(retriever).__name__} is not a retriever: pass an object with "
                         "index(chunks) and retrieve(query, k), or a strategy name")
    label = name or label

    def factory() -> Retriever:
        try:
            return make()
        except InputError:
            raise
        except (Exception, SystemExit) as err:
            logger.opt(exception=err).debug("retriever factory failed")
            raise _RetrieverFailed("building the retriever", err) from None

    try:
        return _prepared(factory, label, corpus, cache_dir, check_ids, chunking), label
    except _RetrieverFailed as err:
        raise InputError(f"strategy {label!r}: {err.what} failed ({type(err.cause).__name__}: "
                         f"{str(err.cause)[:200]}): fix the retriever (traceback in the log file)") from None
    except (InputError, KeyboardInterrupt):
        raise
    except (Exception, SystemExit) as err:
        logger.opt(exception=err).debug("indexing failed")
        raise InputError(f"strategy {label!r}: index() failed ({type(err).__name__}: {str(err)[:200]}): "
                         "fix the retriever's index() (traceback in the log file)") from None


class _RetrieverFailed(Exception):
    def __init__(self, what: str, cause: BaseException) -> None:
        super().__init__(what)
        self.what, self.cause = what, cause


def _prepared(factory: Callable[[], Retriever], label: str, corpus: Any, cache_dir: Path | None,
              check_ids: Callable[[frozenset[str], str], None] | None, chunking: Chunking) -> PreparedIndex:
    if corpus is None or isinstance(corpus, (str, os.PathLike)):
        return prepare_index(Path(corpus) if corpus is not None else None, label, factory, cache_dir,
                             check_ids=check_ids, chunker=chunking)
    from components.core import Corpus

    documents = list(corpus.documents if isinstance(corpus, Corpus) else corpus)
    digest = hashlib.sha256()
    for d in sorted(documents, key=lambda d: d.doc_id):
        digest.update(d.doc_id.encode() + b"\0" + d.text.encode("utf-8", "surrogatepass") + b"\0")
    source = corpus.source if isinstance(corpus, Corpus) else MEMORY_SOURCE
    ids = frozenset(d.doc_id for d in documents)
    if check_ids is not None:
        check_ids(ids, source)
    chunks = chunk_corpus(documents, chunking)
    instance = factory()
    instance.index(chunks)
    return PreparedIndex(source, corpus.sha256 if isinstance(corpus, Corpus) else digest.hexdigest(), ids, chunks,
                         instance, "off", None, load_s=0.0, index_s=0.0, save_s=0.0)


def evaluate(retriever: Retriever | Strategy | str | PreparedIndex, questions: Any, corpus: Any = None, *,
             spec: RunSpec | None = None, judging: Judging | None = None, settings: Settings | None = None,
             name: str | None = None, rewrites_queries: bool | None = None,
             on_row: Callable[[QuestionResult, int, int], None] | None = None,
             should_stop: Callable[[], bool] | None = None, context: RunContext | None = None) -> RunResult:
    """Evaluate ``retriever`` on ``questions`` over ``corpus`` with the options of ``spec`` and return
    the typed result.

    See :func:`components.api.evaluate` for the arguments; ``judging`` (built once, see
    :func:`load_judging`) and ``context`` are how the command line shares its judge across
    strategies and adds its journal, resume and batch. Raises :class:`InputError` for bad input
    (before any indexing or judge call: ``spec`` is checked first, unless ``context.checked``); a
    KeyboardInterrupt during the loop ends the run ``interrupted`` with what was finished."""
    should_stop = should_stop or (lambda: False)
    context = context or RunContext()
    spec = spec or RunSpec()
    settings = settings or (judging.settings if judging is not None else Settings.from_env({}))
    if not context.checked:
        spec.check(settings)
    rule, k = spec.rule(), spec.k
    qset, selected = questions_from(questions)
    strategy, prepared, label = _strategy_index(retriever, qset, corpus, spec.cache_dir, name)
    rewrites = rewrites_queries if rewrites_queries is not None else bool(strategy and strategy.rewrites_queries)
    if judging is None:
        judging = load_judging(settings, prepared.chunks, rewrites_queries=rewrites,
                               chunk_relevance=spec.chunk_relevance, diagnose=prepared.source != RECORDED_SOURCE)
    kind = judging.kind
    if spec.max_cost_usd is not None:  # before the first call
        check_budget(spec.max_cost_usd, [j.setup for j in judging.seats], rewrites=rewrites,
                     names=kind.budget_names(judging.settings))
    rewriter = _rewriter(judging.setup, rewrites)
    plan = adaptive_run.start(spec.adaptive, selected, k,  # the baseline checked before any judge call
                              kind.judges_now(judging.settings, [j.setup for j in judging.seats]))
    loop = BenchmarkLoop(prepared.retriever, None, k=k, rewriter=rewriter, should_stop=should_stop,
                         record=context.record, annotate=judging.annotate, relevance_judge=judging.relevance,
                         repeats=spec.judge_repeats, max_cost_usd=spec.max_cost_usd, keep_text=spec.keep_text,
                         retry_wait_max_s=settings.retry_wait_max_s, on_row=plan.on_row(on_row),
                         concurrency=spec.concurrency,
                         order_check=order_check_sample(selected, spec.order_check, spec.order_check_seed),
                         retrieval_timeout=spec.retrieval_timeout,
                         judges=kind.start(judging, spec.panel_aggregate, context.panel_kept),
                         repeat_rule=rule, unjudged=plan.unjudged)
    # --known-answers: through the loop's judges (the budget, the breakers), retrieval under its deadline
    known = known_answers.start(spec.known_answers, selected, _deadline_retrieve(loop, prepared.retriever), k,
                                _checked_judges(loop, kind.budget_names(judging.settings)), label)
    loop.unjudged = known.unjudged(plan.unjudged)
    started = now()
    status = known.status(_status(_drive(loop, plan, context, should_stop), loop, context, selected))
    run = _run_info(loop, judging, context, rule, spec.judge_repeats, rewriter is not None)
    run = replace(run, started_at=started, finished_at=now(), status=status, strategy=label, k=k,
                  questions_file=context.questions_file or qset.path, questions_sha256=qset.sha256,
                  qrels_file=qset.qrels,
                  corpus=CorpusInfo(prepared.source, prepared.documents, len(prepared.chunks), prepared.sha256),
                  max_cost_usd=spec.max_cost_usd, index=prepared.index_info, question_set=qset.about or None,
                  configuration=context.configuration or (strategy.configuration if strategy is not None else None),
                  spec=spec.to_json(), extra={**run.extra, **known.fields()})
    result = build_report(run, plan.in_question_order(loop.results, selected), index_time_s=round(prepared.index_s, 3),
                          group_by=spec.group_by, relevance=judging.relevance is not None,
                          diagnosed=judging.diagnoser is not None)
    result.panel = loop.judges.section(result.rows, k)
    for line in loop.judges.unusable_lines(result.rows):
        logger.warning("{}", line)
    result.adaptive = plan.section(
        result.rows, {"calls": loop.judge_usage.calls, "cost_usd": loop.judge_usage.cost_usd},
        lambda ids: adaptive_run.priced(ids, selected, prepared.retriever, k, judging, spec.judge_repeats,
                                        batch=context.batch is not None),
        selected=selected, kept=context.done.keys(), status=status)
    failure = loop.judges.failure_to_log(loop)
    if failure is not None:
        logger.error("The {} became unusable: {} — fix it and run again", "judge" if loop.judge_failure else
                     "query rewriter", failure)
    return result


def _strategy_index(retriever: Any, qset: QuestionSet, corpus: Any, cache_dir: Path | None, name: str | None
                    ) -> tuple[Strategy | None, PreparedIndex, str]:
    """``(the strategy, or None for a retriever object; the prepared index; its label)``."""
    if isinstance(retriever, str) and retriever == RECORDED:
        retriever = recorded_strategy(qset)
    strategy = retriever if isinstance(retriever, Strategy) else (
        resolve_strategy(retriever) if isinstance(retriever, str) else None)
    prepared, label = prepare(source_for(strategy, qset, corpus) if strategy is not None else retriever, corpus,
                              cache_dir=cache_dir, name=name or (strategy.name if strategy is not None else None),
                              check_ids=lambda ids, source: check_needles(qset, ids, source))
    return strategy, prepared, label


def _rewriter(setup: JudgeSetup, rewrites: bool) -> Any:
    """The query rewriter of a strategy that rewrites (None: it does not, or there is no rewriter model)."""
    if not rewrites or setup.rewriter is None:
        return None
    from components.run.calls.query_rewriter import QueryRewriter

    return QueryRewriter(setup.rewriter_provider.model(setup.rewriter))


def _drive(loop: BenchmarkLoop, plan: Any, context: RunContext, should_stop: Callable[[], bool]) -> str:
    """Every question of ``plan`` through ``loop`` (or its batch engine), then the retry pass;
    ``completed``, or ``interrupted``."""
    try:
        if context.batch is not None:
            context.batch.run(loop, plan.order, context.done, context.previous_batches,
                              grouped=context.grouped or contextlib.nullcontext, blocks=plan.counts)
        else:
            loop.run(plan.order, context.done)
            if not should_stop():
                loop.retry_transient()
    except KeyboardInterrupt:
        return "interrupted"
    return "interrupted" if should_stop() else "completed"


def _status(status: str, loop: BenchmarkLoop, context: RunContext, selected: Sequence[Question]) -> str:
    """The run's status once the loop is done (``run.status``; the exit code follows from it)."""
    ran = [r for r in loop.results if r.question_id not in context.done]  # this run's rows, not --resume's
    failed = [r.grade_error for r in ran if r.retrieval_failed]
    if status == "interrupted":
        logger.warning("Interrupted after {} of {} questions: writing what is done", len(loop.results), len(selected))
        return status
    if ran and len(failed) == len(ran):
        logger.error("The retriever failed on every question ({}; first: {}): fix it and run again (traceback in "
                     "the log file)", len(ran), escape_control(failed[0][len(RETRIEVAL_ERROR) + 2:][:300]))
        return "retrieval_failed"
    if loop.judge_failure is not None or loop.rewriter_failure is not None:
        return "judge_failed"
    if loop.rate_limited is not None:
        return "rate_limited"
    if loop.budget_exhausted:
        return "budget_exhausted"
    if status == "completed" and retry_policy.incomplete(loop.results, retry_policy.judge_names(loop.results)):
        return "incomplete"  # a grade the run meant to have is missing: exit 8 (components/run/retry_policy.py)
    return status


def _run_info(loop: BenchmarkLoop, judging: Judging, context: RunContext, rule: Any, repeats: int,
              rewrites: bool) -> RunInfo:
    """What ``run`` records of the judges, the rewriter, their usage and cost, and the context (the
    question set, corpus and timing are filled in by :func:`evaluate`)."""
    if loop.budget is not None:
        loop.budget.report()
    judge_info = replace(loop.judges.run_judge(judging, repeats), repeat_where=rule.to_json())
    if context.batch is not None:
        judge_info = replace(judge_info, mode="batch")
    if loop.gate is not None:
        judge_info = replace(judge_info, concurrency=loop.gate.to_json())
    setup = judging.setup
    usage = {"judge": loop.judge_usage.to_json(), **({"rewriter": loop.rewriter_usage.to_json()} if rewrites else {})}
    costs = [u["cost_usd"] for u in usage.values()]
    priced = all(c is not None for c in costs)
    unreported = [f"the server sent no token usage for {u['unreported']} {role} call(s): cost unknown"
                  for role, u in usage.items() if u.get("unreported")]
    notes = (*loop.judges.price_notes(judging),
             setup.rewriter_provider.prices.note(setup.rewriter.model) if rewrites else None, *unreported)
    failure = loop.judge_failure or loop.rewriter_failure
    return RunInfo(
        quick=context.quick, judge=judge_info, python=platform.python_version(),
        packages=package_versions((*provider_packages(), *PACKAGES)),
        judge_failure=f"{failure.kind}: {failure}" if failure else None, log_file=context.log_file,
        id=context.id, rewriter=judging.judge_info("rewriter", 1, loop.rewriter_usage.models) if rewrites else None,
        usage=usage, cost_usd=sum(costs) if priced else None,
        cost_note=None if priced else ("; ".join(n for n in notes if n) or None), recovered=loop.recovered,
        resumed_from=context.resumed_from, resumed_rows=len(context.done), journal=context.journal,
        runs_dir=context.runs_dir, output=context.output, selection=context.selection,
        budget=loop.budget.to_json() if loop.budget is not None else None,
        judge_batch=[r.to_json() for r in context.batch.all_records] if context.batch is not None else None)


class _LoopGrader:
    """One judge of the loop as the known-answers check calls it: ``grade(question, expected, chunks)`` through
    the loop's admission point (its refusals, the ``--max-cost`` budget, the judge's breakers), counted in the
    run's and the judge's usage."""

    def __init__(self, loop: BenchmarkLoop, member: Any) -> None:
        self.loop, self.member = loop, member

    def grade(self, question: str, expected_answer: str | None, chunks: Sequence[Chunk]) -> Any:
        q = Question(id="known-answers", question=question, expected_answer=expected_answer, needle_doc_ids=("-",))
        result = self.loop.judges.grade_once(self.loop, q, list(chunks), self.member)
        self.loop.judges.count(self.loop, result.reply, self.member)
        return result


def _checked_judges(loop: BenchmarkLoop, names: Sequence[str]) -> dict[str | None, _LoopGrader]:
    """Each judge of the loop by its name (None: the one judge), for the known-answers check."""
    return {name: _LoopGrader(loop, member)
            for name, member in zip(names or [None], loop.judges.members, strict=True)}


def _deadline_retrieve(loop: BenchmarkLoop, retriever: Retriever) -> Callable[[str, int], Any]:
    """The retriever's ``retrieve`` under the loop's retrieval deadline."""
    return lambda query, k: loop.deadline.call(lambda: retriever.retrieve(query, k), "known answers: retrieve()")


def check_budget(max_cost_usd: float, setups: Sequence[JudgeSetup], *, rewrites: bool = False,
                 names: Sequence[str] = ()) -> None:
    """Before the first call: refuse a ``--max-cost`` that the models of ``setups`` (the judge's, or
    every judge's of a panel, named by ``names``; the first one's rewriter with ``rewrites``) cannot be
    bounded by, or that cannot pay for one call of them (:func:`components.run.calls.budget.check_max_cost`).
    Raises :class:`InputError`."""
    from components.run.calls.budget import check_max_cost

    roles = {("judge" if not names else f"judge {name}"): (setup.judge_provider, setup.judge)
             for name, setup in zip(names or ["judge"], setups, strict=True)}
    if rewrites:
        roles["query rewriter"] = (setups[0].rewriter_provider, setups[0].rewriter)
    llms = {}
    for role, (provider, choice) in roles.items():
        if choice is None:  # a judge that calls no model costs nothing
            continue
        try:
            llms[role] = provider.model(choice)
        except NotImplementedError:
            raise InputError(f"--max-cost cannot bound the calls of the {provider.name} {role}: it has no model "
                             "client to price them with: run without --max-cost") from None
    check_max_cost(max_cost_usd, llms)


def order_check_sample(questions: Sequence[Question], order_check: int | bool | None, seed: int = 0) -> list[str]:
    """The ids of the questions graded a second time with their chunks reversed: none (None or
    False), all (True), or a sample of that many drawn with ``seed`` (in the questions' order)."""
    if not order_check:
        return []
    ids = [q.id for q in questions]
    if order_check is True or order_check >= len(ids):
        return ids
    import random

    chosen = set(random.Random(seed).sample(ids, order_check))
    return [i for i in ids if i in chosen]


def questions_from(questions: Any) -> tuple[QuestionSet, list[Question]]:
    """``(question set, the questions to run)`` from a questions file path, a :class:`QuestionSet`,
    a ``(QuestionSet, selected questions)`` pair, or a list of :class:`Question` or of question
    dicts (the questions file's format)."""
    if isinstance(questions, tuple) and len(questions) == 2 and isinstance(questions[0], QuestionSet):
        return questions[0], list(questions[1])
    if isinstance(questions, QuestionSet):
        return questions, list(questions.questions)
    if isinstance(questions, (str, os.PathLike)):
        qset = load_questions(questions)
        return qset, list(qset.questions)
    items = list(questions)
    if items and all(isinstance(q, Question) for q in items):
        data = json.dumps([{"id": q.id, "question": q.question, "expected_answer": q.expected_answer,
                            **({"needles": q.relevance} if q.needle_grades
                               else {"needle_doc_ids": list(q.needle_doc_ids)}), **q.extra} for q in items],
                          sort_keys=True).encode()
        qset = parse_questions(data, MEMORY_SOURCE)
        return qset, list(qset.questions)
    try:
        data = json.dumps(items, allow_nan=False).encode()
    except (TypeError, ValueError) as err:
        raise InputError(f"evaluate: questions must be a file path, Question objects or question dicts ({err})"
                         ) from None
    qset = parse_questions(data, MEMORY_SOURCE)
    return qset, list(qset.questions)


def selected_questions(questions: Any, limit: int | None = None, ids: Sequence[str] | None = None
                       ) -> tuple[QuestionSet, list[Question]]:
    """The question set and the questions ``--ids`` (in the file's order) then ``--limit`` select."""
    qset, selected = questions_from(questions)
    if ids:
        known = {q.id for q in selected}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise InputError(f"--ids: {', '.join(repr(i) for i in unknown[:5])} not in {qset.path}: "
                             "give ids of that file (its \"id\" fields)")
        wanted = set(ids)
        selected = [q for q in selected if q.id in wanted]
    if limit is not None:
        selected = selected[:limit]
    return qset, selected

